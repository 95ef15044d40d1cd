/**
 * What a run spent on its target: sessions created and scrapes by every team, credits billed as the
 * stops' answers reported them, and per team the requests to the rate-limited endpoints (stop and interact) and how many
 * got 429. Each worker counts its own requests and writes its tally after every test to
 * the run folder's `cost/<pid>.json` (run-folder.ts); the summary adds them up. Against a rate-limited target it also
 * gives the run's floor: the busiest team's requests that got through, at the rate its limiter let
 * them through while it was refusing others.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { channel } from './run-folder';
export interface TeamSpend {
  limited: number;
  throttled: number;
  /** When (ms since the epoch) its limited requests got through, and when its first and last 429 came. */
  through: number[];
  firstThrottled?: number;
  lastThrottled?: number;
  /** 429s met while this team's own schedule had room in the window, waited out and sent again: another's use of a limit it shares. */
  unearned?: number;
}

export interface Spend {
  sessions: number;
  scrapes: number;
  credits: number;
  /** Provisioning interacts answered 404 just after their scrape (the job not written yet) and sent again. */
  provisioningRetries?: number;
  teams: Record<string, TeamSpend>;
}

const emptySpend = (): Spend => ({ sessions: 0, scrapes: 0, credits: 0, teams: {} });

/** This process's spend. */
const pending = emptySpend();

export function countRequest(team: string, limited: boolean, status: number): void {
  if (!limited) return;
  const spend = (pending.teams[team] ??= { limited: 0, throttled: 0, through: [] });
  spend.limited += 1;
  const now = Date.now();
  if (status === 429) {
    spend.throttled += 1;
    spend.firstThrottled ??= now;
    spend.lastThrottled = now;
  } else spend.through.push(now);
}

export function countUnearned(team: string): void {
  const spend = (pending.teams[team] ??= { limited: 0, throttled: 0, through: [] });
  spend.unearned = (spend.unearned ?? 0) + 1;
}

export function countScrape(): void {
  pending.scrapes += 1;
}

export function countProvisioningRetry(): void {
  pending.provisioningRetries = (pending.provisioningRetries ?? 0) + 1;
}

export function countSession(): void {
  pending.sessions += 1;
}

export function countCredits(credits: unknown): void {
  if (typeof credits === 'number' && Number.isFinite(credits)) pending.credits += credits;
}

const costDir = (reportsDir: string) => channel(reportsDir, 'cost');

/**
 * What the run has learnt of a team's rate limit so far, from every process's tally and this one's:
 * when its limiter refused a request within the last minute, the requests that got through in that
 * minute (the rate it allows, at the least); otherwise undefined (no limit met lately).
 */
export function recentRatePerMinute(reportsDir: string, team: string): number | undefined {
  // This process's file is an older copy of its tally: its tally now replaces it.
  const spend = addSpend(readSpend(reportsDir, `${process.pid}.json`), pending);
  const seen = spend.teams[team];
  const now = Date.now();
  if (!seen?.lastThrottled || now - seen.lastThrottled > 60_000) return undefined;
  return Math.max(1, seen.through.filter((at) => at > now - 60_000).length);
}

/** This process's tally, for the summary. */
export function writeSpend(reportsDir: string): void {
  mkdirSync(costDir(reportsDir), { recursive: true });
  writeFileSync(path.join(costDir(reportsDir), `${process.pid}.json`), JSON.stringify(pending));
}

/** Every process's tally (but the file `except`), added up. */
export function readSpend(reportsDir: string, except?: string): Spend {
  const total = emptySpend();
  if (!existsSync(costDir(reportsDir))) return total;
  for (const file of readdirSync(costDir(reportsDir))) {
    if (file === except) continue;
    try {
      addSpend(total, JSON.parse(readFileSync(path.join(costDir(reportsDir), file), 'utf8')));
    } catch {
      // a tally cut short by a killed process
    }
  }
  return total;
}

export function addSpend(total: Spend, more: Spend): Spend {
  total.sessions += more.sessions;
  total.scrapes += more.scrapes;
  if (more.provisioningRetries) total.provisioningRetries = (total.provisioningRetries ?? 0) + more.provisioningRetries;
  total.credits = Math.round((total.credits + more.credits) * 1e6) / 1e6;
  for (const [team, spend] of Object.entries(more.teams)) {
    const sum = (total.teams[team] ??= { limited: 0, throttled: 0, through: [] });
    sum.limited += spend.limited;
    sum.throttled += spend.throttled;
    sum.through.push(...spend.through);
    if (spend.unearned) sum.unearned = (sum.unearned ?? 0) + spend.unearned;
    if (spend.firstThrottled !== undefined) sum.firstThrottled = Math.min(sum.firstThrottled ?? Infinity, spend.firstThrottled);
    if (spend.lastThrottled !== undefined) sum.lastThrottled = Math.max(sum.lastThrottled ?? 0, spend.lastThrottled);
  }
  return total;
}

export interface Cost {
  sessions: number;
  scrapes: number;
  credits: number;
  limitedRequests: number;
  throttled: number;
  /** Provisioning interacts sent again after a 404 right after their scrape. */
  provisioningRetries?: number;
  wallMs: number;
  /** The busiest team's floor: its requests that got through, at its rate where the run knows it, else at the median rate a minute its limiter let through while refusing (for at least a minute). */
  floor?: { team: string; requests: number; perMinute: number; floorMs: number; ratio: number };
  /** What the run said before its first test it would spend at most (domain/budget.ts). */
  predicted?: { sessions: number; scrapes: number; credits: number; budget: number };
  /** Per team, the 429s its own schedule did not earn (TeamSpend.unearned). */
  unearned?: Record<string, number>;
}

/** Refusals spread over less than this say nothing of the rate a limiter allows. */
const SPAN_FOR_A_RATE_MS = 60_000;

/** `rates`: each team's rate on stop and interact, where the run learnt or was told it; the floor is then taken at that rate. */
export function costOf(spend: Spend, wallMs: number, rates: { team: string; limit: number; windowMs: number }[] = []): Cost {
  const teams = Object.entries(spend.teams);
  const unearned = Object.fromEntries(teams.filter(([, team]) => team.unearned).map(([name, team]) => [name, team.unearned!]));
  const cost: Cost = {
    ...(Object.keys(unearned).length ? { unearned } : {}),
    sessions: spend.sessions,
    scrapes: spend.scrapes,
    credits: spend.credits,
    ...(spend.provisioningRetries ? { provisioningRetries: spend.provisioningRetries } : {}),
    limitedRequests: teams.reduce((sum, [, team]) => sum + team.limited, 0),
    throttled: teams.reduce((sum, [, team]) => sum + team.throttled, 0),
    wallMs,
  };
  const [busiest, team] = teams.sort(([, a], [, b]) => b.through.length - a.through.length)[0] ?? [];
  const known = rates.find((rate) => rate.team === busiest);
  if (team && known) {
    const perMinute = (known.limit * 60_000) / known.windowMs;
    const floorMs = (team.through.length / perMinute) * 60_000;
    cost.floor = {
      team: busiest,
      requests: team.through.length,
      perMinute: +perMinute.toFixed(2),
      floorMs: Math.round(floorMs),
      ratio: +(wallMs / floorMs).toFixed(2),
    };
    return cost;
  }
  if (team?.firstThrottled !== undefined && team.lastThrottled! - team.firstThrottled >= SPAN_FOR_A_RATE_MS) {
    // The rate the limiter allowed: the median of the requests that got through in each whole minute between the first and last 429.
    const minutes = Math.floor((team.lastThrottled! - team.firstThrottled) / 60_000);
    const counts = Array.from({ length: minutes }, (_, minute) => {
      const from = team.firstThrottled! + minute * 60_000;
      return team.through.filter((at) => at >= from && at < from + 60_000).length;
    }).sort((a, b) => a - b);
    const perMinute = counts[Math.floor(counts.length / 2)];
    if (!perMinute) return cost;
    const floorMs = (team.through.length / perMinute) * 60_000;
    cost.floor = {
      team: busiest,
      requests: team.through.length,
      perMinute: +perMinute.toFixed(2),
      floorMs: Math.round(floorMs),
      ratio: +(wallMs / floorMs).toFixed(2),
    };
  }
  return cost;
}

/** The costs of shards run side by side: counts add up, the wall time is the longest; a floor needs every request's time, so none. */
export function mergeCosts(costs: Cost[]): Cost | undefined {
  if (!costs.length) return undefined;
  const sum = (field: 'sessions' | 'scrapes' | 'credits' | 'limitedRequests' | 'throttled') => costs.reduce((total, cost) => total + cost[field], 0);
  const retries = costs.reduce((total, cost) => total + (cost.provisioningRetries ?? 0), 0);
  const unearned: Record<string, number> = {};
  for (const [team, count] of costs.flatMap((cost) => Object.entries(cost.unearned ?? {}))) unearned[team] = (unearned[team] ?? 0) + count;
  const predicted = costs.every((cost) => cost.predicted) ? costs.map((cost) => cost.predicted!) : undefined;
  const total = (field: 'sessions' | 'scrapes' | 'credits' | 'budget') => +predicted!.reduce((sum, one) => sum + one[field], 0).toFixed(4);
  return {
    sessions: sum('sessions'),
    scrapes: sum('scrapes'),
    credits: +sum('credits').toFixed(6),
    limitedRequests: sum('limitedRequests'),
    throttled: sum('throttled'),
    ...(retries ? { provisioningRetries: retries } : {}),
    ...(Object.keys(unearned).length ? { unearned } : {}),
    wallMs: Math.max(...costs.map((cost) => cost.wallMs)),
    ...(predicted ? { predicted: { sessions: total('sessions'), scrapes: total('scrapes'), credits: total('credits'), budget: total('budget') } } : {}),
  };
}

export function describeCost(cost: Cost): string[] {
  const lines = [
    `COST: ${cost.sessions} session(s) created and ${cost.scrapes} scrape(s), by every team the run used; ${cost.credits} credit(s) billed as the stops' answers reported them ` +
      `(creditsBilled; the ACCOUNT line counts the owner team's sessions alone, each settlement once); ` +
      `${cost.limitedRequests} request(s) to stop and interact, ${cost.throttled} answered 429` +
      `${cost.provisioningRetries ? `; ${cost.provisioningRetries} provisioning interact(s) sent again after a 404 just after their scrape` : ''}; ${(cost.wallMs / 1000).toFixed(1)} s from the workers' start to the verdict`,
  ];
  if (cost.predicted) {
    const { sessions, scrapes, credits, budget } = cost.predicted;
    lines.push(
      `  predicted before the first test: at most ${sessions} session(s) of SESSION_BUDGET=${budget} and ${scrapes} scrape(s), about ${credits} credit(s) at the target's price`,
    );
  }
  for (const [team, count] of Object.entries(cost.unearned ?? {})) {
    lines.push(
      `  429 not earned: the ${team} team's requests met 429 ${count} time(s) while its own schedule had room in the window, and waited them out: another team or client may share its limit, or the limiter counts refused requests too`,
    );
  }
  if (cost.floor) {
    lines.push(
      `  floor: the ${cost.floor.team} team's ${cost.floor.requests} requests that got through, at the ${cost.floor.perMinute} request(s) a minute its limiter allowed, ` +
        `take ${(cost.floor.floorMs / 1000).toFixed(0)} s; the run took ${cost.floor.ratio}x that (${cost.limitedRequests ? Math.round((100 * cost.throttled) / cost.limitedRequests) : 0}% of its requests to stop and interact refused)`,
    );
  }
  return lines;
}
