/**
 * The named checks of what spans more than one request: a burst, the run's leaks and account, and
 * each step of the sequences model's histories. Registered with the others (named-checks.ts).
 */

import { expect } from '../checks/expect';
import { RunError } from '../config/errors';
import { readRefusal } from '../http/limits';
import { CREDIT_USAGE_PATH, judgeAccount, judgeAlone } from './account';
import { type Answer, JOB_OF_PATH, summary } from './answer';
import { durationVerdict, measuredInterval, type Tolerances } from './billing';
import { expectRefusal, expectRevealsNothing, ownerValuesOf } from './refusal-checks';
import { describeSettlement, distinctSettlements, isNewCharge, type Settled, settlementOf, settlingStop } from './settlements';

const jobOf = (answer: Answer) => (JOB_OF_PATH.exec(answer.path)?.[1] ?? answer.path).toLowerCase();

/**
 * The stops of each session, job by job: an interact answered 200 after a settlement of the job
 * opened another session (whose settlement may have the same figures, on a whole-second clock).
 * With the stops that settled a session anew: a stopped session charged again. An interact counts
 * from when it was sent, a stop from when its answer came: an interact sent while a stop was on
 * its way may have opened the session that stop settled.
 */
function sessionsOf(stops: Answer[], interacts: Answer[]): { jobId: string; stops: Answer[] }[] & { settledAnew: string[] } {
  const sessions: { jobId: string; stops: Answer[] }[] = [];
  const current = new Map<string, { jobId: string; stops: Answer[] }>();
  const settledAnew: string[] = [];
  const at = (answer: Answer) => (answer.method === 'POST' ? answer.sentAt : answer.receivedAt);
  const opening = interacts.filter((interact) => interact.status === 200);
  for (const answer of [...stops, ...interacts].sort((a, b) => at(a) - at(b))) {
    const job = jobOf(answer);
    let session = current.get(job);
    const last = session?.stops.filter((stop) => settlementOf(stop)).at(-1);
    if (answer.method === 'POST') {
      if (answer.status === 200 && last) current.delete(job);
      continue;
    }
    if (!session) current.set(job, (session = { jobId: job, stops: [] }));
    if (!session.stops.length) sessions.push(session);
    // Not a re-charge: a repeat of any settlement the job reported, or a stop an interact that may have opened another session overlapped.
    const earlier = sessions
      .filter((one) => one.jobId === job)
      .flatMap((one) => one.stops)
      .filter((stop) => stop !== answer && settlementOf(stop));
    const overlapped = opening.some((interact) => jobOf(interact) === job && interact.sentAt < answer.receivedAt && interact.receivedAt > answer.sentAt);
    if (last && isNewCharge(answer, last) && earlier.every((stop) => isNewCharge(answer, stop)) && !overlapped)
      settledAnew.push(`${summary(answer)} after ${describeSettlement(settlementOf(last)!)}`);
    session.stops.push(answer);
  }
  return Object.assign(sessions, { settledAnew });
}

export const STRAY_SETTLEMENTS =
  'a stop of a job that never had a session (a random id, a scrape job without one) must find nothing (404) and change nothing; these settled a session, which can only have been another one';

/** The most answers that arrived within any one second of the burst. */
export function peakPerSecond(answers: Answer[]): number {
  return mostWithin(
    answers.map((answer) => [answer.receivedAt, answer.receivedAt]),
    1000,
  );
}

/** The most of these spans ([from, to], ms) that fit together inside any span of `ms`. */
function mostWithin(spans: [number, number][], ms: number): number {
  const sorted = [...spans].sort((a, b) => a[0] - b[0]);
  let most = 0;
  for (let first = 0; first < sorted.length; first++) most = Math.max(most, sorted.slice(first).filter(([, to]) => to < sorted[first][0] + ms).length);
  return most;
}

/** A limit the burst's refusals state in words (limits.ts), with those words. */
export interface StatedLimit {
  limit: number;
  windowMs: number;
  words: string;
}

/** The burst team's stated limit, and a request of its asked with fewer than `least` of its own in its window; or why none was asked. */
export interface OwnLimit {
  limit: StatedLimit;
  asked: { answer: Answer; sent: number; least: number; after?: string }[];
  untold?: string;
}

/** The lowest limit the burst's refusals state in words, with the window named with it. */
export function statedRate(answers: Answer[]): StatedLimit | undefined {
  const stated = answers
    .filter((answer) => answer.status === 429)
    .flatMap((answer) => {
      const { limit } = readRefusal(answer.text, answer.headers);
      return limit ? [{ ...limit, words: String(answer.body?.error ?? answer.text).slice(0, 120) }] : [];
    });
  return stated.sort((a, b) => a.limit / a.windowMs - b.limit / b.windowMs)[0];
}

/** How many answers had each status. */
export function countStatuses(answers: Answer[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const answer of answers) counts[answer.status] = (counts[answer.status] ?? 0) + 1;
  return counts;
}

type Verdict = void | { notVerifiable: string };

export const RUN_JUDGES = {
  /** Every answer of a burst of stops of unknown jobs is 404 (no such job) or 429. */
  burstAnswers(answers: Answer[]): Verdict {
    const unexpected = answers.filter((answer) => answer.status !== 404 && answer.status !== 429);
    expect(unexpected.map(summary).slice(0, 5), `every answer is 404 (no such job) or 429; statuses: ${JSON.stringify(countStatuses(answers))}`).toEqual([]);
  },
  /**
   * While one team is refused for its rate, another whose plan had room (its stop just before the
   * burst was answered, and it sent nothing since) is not refused: a 429 means a plan's limit.
   */
  teamsIsolated(burstTeam: string, during: { as: { name: string }; answer: Answer }[], own?: OwnLimit): Verdict {
    const refused = during.filter(({ answer }) => answer.status === 429);
    expect(
      refused.map(({ as }) => as.name),
      `while the ${burstTeam} was refused for its rate, these teams, whose plans had room, were refused too (a limit shared between teams, such as one per client address): ${refused.map(({ as, answer }) => `${as.name}: ${summary(answer)}`).join('; ')}`,
    ).toEqual([]);
    // The other way round: refused with room under its own stated limit, it was counted with another team's requests.
    for (const { answer, sent, least, after } of own?.asked ?? []) {
      if (answer.status !== 429) continue;
      expect(
        sent,
        `${summary(answer)}${after ?? ''}, though the ${burstTeam} had sent only ${sent} request(s) in the window before, this one included (its limit: ${own!.limit.words}): its limit counts other teams' requests`,
      ).toBeGreaterThanOrEqual(least);
    }
  },
  /** A burst faster than BURST_PROOF_RATE meets a 429; a slower one cannot tell a limit from none (an error of the run). */
  limited(answers: Answer[], burstMs: number, burstProofRate: number): Verdict {
    const counts = countStatuses(answers);
    const stated = statedRate(answers);
    if (stated) {
      // Requests whose whole exchange fell inside one window: a fixed window's boundary among them lets twice the limit through, no limiter of that rate more.
      const most = mostWithin(
        answers.filter((answer) => answer.status !== 429).map((answer) => [answer.sentAt, answer.receivedAt]),
        stated.windowMs,
      );
      expect(
        most,
        `the refusals state the team's limit, ${stated.limit} per ${stated.windowMs / 1000} s ("${stated.words}"), yet ${most} of the burst's requests, sent and answered within one such window, got through: more than twice that limit`,
      ).toBeLessThanOrEqual(2 * stated.limit);
    }
    if (counts[429]) return;
    const peak = peakPerSecond(answers);
    const reached = `no 429 in ${answers.length} requests over ${(burstMs / 1000).toFixed(1)} s, at up to ${peak} answered within one second`;
    // Too slow to tell: the client, not the target, is what this run measured.
    if (peak < burstProofRate) {
      throw new RunError(
        `${reached}: below BURST_PROOF_RATE (${burstProofRate} a second), so a limit above that rate cannot be told from no limit. ` +
          "The client could not send faster (a busy machine, or a slow target): run again where it can, raise BURST_CONCURRENCY, or set BURST_PROOF_RATE just above your plan's limit.",
      );
    }
    expect(
      counts[429] ?? 0,
      `${reached}: at least BURST_PROOF_RATE (${burstProofRate} a second), more than a plan allows; the target does not rate-limit (for a plan that allows more, raise BURST_PROOF_RATE and BURST_REQUESTS). Statuses: ${JSON.stringify(counts)}`,
    ).toBeGreaterThan(0);
  },
  /** The stops of live sessions during a burst answer 429, or 200 if they got through; a 429 carries nothing of the session or its team. */
  throttledRevealsNothing(stops: { answer: Answer; created: Answer; jobId: string }[], who: string, teamValues: string[]): Verdict {
    for (const { answer } of stops)
      expect(answer.status, `the ${who}'s stop of its own session during the burst answers 429, or 200 if it got through: ${summary(answer)}`).toBeOneOf([
        200, 429,
      ]);
    for (const { answer, created, jobId } of stops.filter((stop) => stop.answer.status === 429))
      expectRevealsNothing(answer, ownerValuesOf([created], teamValues, jobId));
  },
  /**
   * Each job whose last interact was refused or failed holds no session: the sweep's stop of it
   * finds nothing (404), or reports a settlement one of the job's earlier stops reported. `interact`:
   * that last interact, where a reproduction sent it again (a 200 then opened a session, as allowed).
   */
  nothingLeft(found: { jobId: string; status?: number; interact?: Answer; stop: Answer; settled: (Settled | Answer)[] }[], jobs: number): Verdict {
    const refused = found.filter(({ interact }) => interact?.status !== 200).map((job) => ({ ...job, status: job.status ?? job.interact?.status }));
    const left = refused.filter(({ stop, settled }) => isNewCharge(stop) && settled.every((one) => isNewCharge(stop, one)));
    const described = left.map(
      ({ jobId, status, stop }) =>
        `${jobId} (its last interact answered ${status ?? 'nothing'}; a session ran there, and its stop settled ${describeSettlement({ credits: stop.body!.creditsBilled, durationMs: stop.body!.sessionDurationMs })})`,
    );
    expect(
      described,
      `${jobs} job(s) whose interact was refused or failed must hold no session: a stop finds nothing (404) or reports a settlement already seen`,
    ).toEqual([]);
  },
  /** Stops of jobs that never had a session (a random id, a scrape job without one) settle nothing: any settlement was another session's. */
  settledNothing(stops: Answer[]): Verdict {
    const stray = stops.filter((stop) => settlementOf(stop)).map((stop) => `${summary(stop)}, settling ${describeSettlement(settlementOf(stop)!)}`);
    expect(stray, STRAY_SETTLEMENTS).toEqual([]);
  },
  /**
   * The account moved by exactly what the answers settled and the scrapes cost: read before
   * (`before`), then after (`after`, the last two alike when it held still); the stops' distinct
   * settlements and the scrapes' prices are what it may be charged (judgeAccount in account.ts).
   * A job's stop that settles anew with no interact answered 200 since its last settlement charged
   * its stopped session again (`interacts`: the job's interacts, where the plan gives them).
   */
  accountCharged(
    before: Answer,
    after: Answer[],
    scrapes: Answer[],
    stops: Answer[],
    settleMs: number,
    alone = false,
    interacts?: (Answer | undefined)[],
    rebills = true,
  ): Verdict {
    const remaining = (answer: Answer) => answer.body?.data?.remainingCredits as number;
    if (![before, ...after].every((answer) => answer.status === 200 && typeof remaining(answer) === 'number'))
      return { notVerifiable: `the account could not be read (${CREDIT_USAGE_PATH})` };
    // Without the interacts (a plan written before they were given), a job's stops are one session's.
    const sessions = sessionsOf(
      stops,
      (interacts ?? []).filter((answer): answer is Answer => answer !== undefined),
    );
    if (!alone && interacts && rebills)
      expect(
        sessions.settledAnew,
        'a stopped session is never charged again: a stop answered with a new settlement though no interact opened a session since the last one',
      ).toEqual([]);
    const settlements = sessions.map(({ jobId, stops: answers }) => ({
      jobId,
      settled: distinctSettlements(answers),
      reports: answers.filter((answer) => answer.status === 200).length,
    }));
    const prices = scrapes.map((scrape) => scrape.body?.data?.metadata?.creditsUsed);
    const spending = {
      settlements,
      scrapes: {
        count: scrapes.length,
        credits: prices.filter((price) => typeof price === 'number').reduce((sum, price) => sum + price, 0),
        unpriced: prices.filter((price) => typeof price !== 'number').length,
      },
    };
    const [last, closing] = after.slice(-2).map(remaining);
    const still = { remaining: closing ?? last, still: closing === undefined || last === closing };
    // One session alone, with nobody else on the team: any difference is the target's.
    const settled = stops.map((stop) => settlementOf(stop)?.credits).find((credits) => credits !== undefined);
    if (alone && (typeof prices[0] !== 'number' || settled === undefined)) return { notVerifiable: 'the scrape gave no price, or the stop no settlement' };
    if (alone) return expect(judgeAlone(remaining(before), still, prices[0], settled!), 'one session alone').toBeUndefined();
    const verdict = judgeAccount(remaining(before), still, spending, settleMs);
    if (verdict.outcome === 'not verifiable') return { notVerifiable: verdict.message };
    expect(verdict.outcome, verdict.message).toBe('pass');
  },
  /** A team that only refused another team's session is charged nothing: its account reads the same after as before. */
  refuserUncharged(before: Answer, after: Answer[]): Verdict {
    const remaining = (answer: Answer) => answer.body?.data?.remainingCredits as number;
    if (![before, ...after].every((answer) => answer.status === 200 && typeof remaining(answer) === 'number'))
      return { notVerifiable: `the account could not be read (${CREDIT_USAGE_PATH})` };
    expect(remaining(after.at(-1)!), "a refused request charged its caller: the refusing team's account moved").toBe(remaining(before));
  },
  /** The sequences model: a stop of a session it holds stopped answers 200 or 404, and settles nothing new. */
  modelStoppedStop(answer: Answer, ended: Answer | undefined): Verdict {
    expect(answer.status, `status ${answer.status}`).toBeOneOf([200, 404]);
    expect(isNewCharge(answer, ended), 'a stopped session is never charged again: an answer may repeat its settlement, never make another').toBe(false);
  },
  /** The model: the owner's stop of a live session answers 200 with a stop result, its duration within the interval from the interact that began it. */
  modelLiveStop(stops: Answer | Answer[], began: Answer, tolerances: Tolerances): Verdict {
    const answer = settlingStop(stops);
    expect(answer.status, 'status').toBe(200);
    expect(answer.body).toMatchSchema('stop-result');
    durationVerdict(answer.body, measuredInterval({ created: began }, answer), tolerances);
  },
  /** The model: a session a refused stop left running is still usable. */
  modelUsable(answer: Answer): Verdict {
    expect(answer.status, summary(answer)).toBe(200);
  },
  /** The model: a stop without a valid key, or by another team, is refused and carries nothing of the owner's. */
  modelRefusedStop(answer: Answer, status: number | undefined, ownerTeam: string[]): Verdict {
    expectRefusal(answer, status);
    expectRevealsNothing(answer, ownerTeam);
  },
  /** The model: a stop of a job that never had a session answers 404 with an error body. */
  modelUnknownStop(answer: Answer): Verdict {
    expect(answer.status, 'status').toBe(404);
    expect(answer.body).toMatchSchema('error');
  },
  /** The model: two stops of one session at once answer 200 or 404, settle it once at most (never, stopped), and one succeeds on a live one. */
  modelSimultaneousStops(answers: Answer[], ended: Answer | undefined, live: boolean): Verdict {
    for (const answer of answers) expect(answer.status, `status ${answer.status}`).toBeOneOf([200, 404]);
    // Equal settlements reported by both are one settlement as far as answers show: the account check has the last word.
    const settled = distinctSettlements(answers.filter((answer) => isNewCharge(answer, ended)));
    expect(settled.length, 'distinct new settlements').toBeLessThanOrEqual(live ? 1 : 0);
    if (live)
      expect(
        answers.some((answer) => answer.status === 200),
        'one of them succeeds',
      ).toBe(true);
  },
} satisfies Record<string, (...args: never[]) => Verdict>;
