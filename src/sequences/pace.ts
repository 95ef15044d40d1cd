/**
 * The pace of the sequences search: how many histories at once, and the budget of requests and
 * time each phase may spend.
 */

import type { RunError } from '../config/errors';
import type { Coordination } from '../coordination/coordination';
import { JOB_OF_PATH } from '../domain/answer';
import { limitedPlanRequests } from '../domain/budget';
import type { Client } from '../domain/client';

/**
 * The pace of the search's requests. Several histories at once until the team's limit shows (a 429
 * to a request with a valid key, or a limit the run met in the last minute); each 429 then halves
 * them, down to one, and every CLEAN_TO_GROW requests without one add one back. A request that
 * meets the limit waits its turn in the team's back-off queue behind the other tests' (client.ts),
 * so the search takes its share and no more. It learns how long a request takes on average,
 * back-off included, and starts a history only when that (twice that once a limit showed: the other
 * tests' turns) fits in the time left.
 */
export class Pacer {
  lanes = LANES;
  limited = false;
  /** Requests to stop and interact that waited behind the team's rate limit (for a place, a turn, or after a 429 of their own), and those of them that met a 429. */
  waitedForLimit = 0;
  metLimit = 0;
  private requests = 0;
  private totalMs = 0;
  /** Requests answered without a 429 since the last one: every CLEAN_TO_GROW of them, one more history at once. */
  private clean = 0;

  /**
   * `perMinute`: the rate the run has met lately, if any; counted as one request's worth of experience.
   * `limitedPlan`: one history at a time, each kind first (a limited plan's ceiling, planCeiling).
   */
  constructor(perMinute: number | undefined, limitedPlan = false) {
    if (perMinute) {
      this.limit();
      this.requests = 1;
      this.totalMs = 60_000 / perMinute;
    }
    if (limitedPlan) (this.limited = true), (this.lanes = 1);
  }

  private limit(): void {
    this.limited = true;
    this.lanes = Math.max(1, Math.floor(this.lanes / 2));
    this.clean = 0;
  }

  /** `api`, with its requests paced and timed. */
  client(api: Client): Client {
    return {
      ...api,
      send: async (request) => {
        const started = performance.now();
        const answer = await api.send(request);
        const took = performance.now() - started;
        this.requests += 1;
        this.totalMs += took;
        if (!request.as.withoutValidKey && JOB_OF_PATH.test(request.path) && !answer.onlyCapped) {
          const refused = answer.attempts > 1 || answer.status === 429;
          if (refused || answer.waitedForLimitMs !== undefined) this.waitedForLimit += 1;
          if (refused) this.metLimit += 1;
        }
        // A 429 to a request without a valid key is its refusal, not the team's limit.
        if (!request.as.withoutValidKey && (answer.attempts > 1 || answer.status === 429)) this.limit();
        else if (++this.clean % CLEAN_TO_GROW === 0) this.lanes = Math.min(LANES, this.lanes + 1);
        return answer;
      },
    };
  }

  /** How long `requests` more are expected to take, rests included. */
  expectedMs(requests: number): number {
    return this.requests ? (requests * this.totalMs * (this.limited ? 2 : 1)) / this.requests : 0;
  }
}

/** Most histories at once: each has its own session. */
export const LANES = 4;
const CLEAN_TO_GROW = 50;
/** How often a lane the pacer has paused asks again. */
export const LANE_PAUSE_MS = 100;

/** The most requests the search sends in all on a limited plan, as far as the run knows the team's rate (budget.ts). */
export const planCeiling = (coordination: Coordination | undefined, team: string) => limitedPlanRequests(coordination?.schedule(team, 'interact').rate());

/** Requests to the rate-limited endpoints (stop and interact) a phase of the search may send, and until when. */
export class Budget {
  spent = 0;
  /** An error of the run ends the search: no further history sends anything. */
  halted?: RunError;
  /** Set once the time was up: on a slow machine or target the search does less, rather than outlive its budget. */
  outOfTime = false;
  /** Set once the search's share of the session budget was spent. */
  outOfSessions = false;
  /** Set once a limited plan's ceiling was reached (planCeiling). */
  outOfPlan = false;

  /** `ceiling`: the most this phase may spend in all, as it stands now. */
  constructor(
    public left: number,
    readonly until: number,
    private readonly pacer: Pacer,
    private readonly ceiling: () => number = () => Number.POSITIVE_INFINITY,
  ) {}

  /** Whether `requests` more are allowed and fit in the time left (the first only while time is left); never once the search was halted or its time is up. */
  affords(requests: number): boolean {
    // The first is sent whatever the pace foretells (a busy machine, a slow plan): a search of nothing tells nothing.
    if (performance.now() + (this.spent ? this.pacer.expectedMs(requests) : 0) > this.until) this.outOfTime = true;
    // Not latched: a history's closing stop, reserved when it began, still fits.
    const fits = this.spent + requests <= this.ceiling();
    if (!fits) this.outOfPlan = true;
    return !this.halted && !this.outOfTime && !this.outOfSessions && fits && this.left >= requests;
  }

  spend(requests: number): void {
    this.left -= requests;
    this.spent += requests;
  }
}

/** The pacer of a search: it starts from what the run has learnt of the team's limit in the last minute. */
export function pacerFor(coordination: Coordination | undefined, team: string): Pacer {
  return new Pacer(coordination?.recentRatePerMinute(team), Number.isFinite(planCeiling(coordination, team)));
}
