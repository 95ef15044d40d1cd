/**
 * The account has the last word on money. Where the target keeps a credit counter for a team (the
 * hosted service: GET /v2/team/credit-usage, `data.remainingCredits`), the run reads the owner
 * team's before its first scrape (the opening: once per run and target, by whichever worker scrapes
 * first, the others waiting for its reading) and, after its last settlement, waits a bounded time
 * (ACCOUNT_SETTLE_MS) for charges the target queues to land. The account must then have been
 * charged exactly what the run's answers said: each session's settlement once, and each scrape's
 * price (`data.metadata.creditsUsed`). This is what tells one settlement reported twice from two
 * equal charges, which no answer can.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { note } from '../checks/recorder';
import type { BillingRule } from '../config/deviations';
import { RunError } from '../config/errors';
import type { Settings } from '../config/settings';
import type { Coordination } from '../coordination/coordination';
import { chargeUnder, describeInterval, measuredInterval, proratedRange, type Tolerances, widened } from './billing';
import type { Answer, Client } from './client';
import type { Spending } from './ledger';
import type { Identity } from './target';

export const CREDIT_USAGE_PATH = '/v2/team/credit-usage';

/** The owner team's credits before the run's first scrape, or why the account cannot be used. */
export type Opening = { remaining: number } | { unavailable: string };

type AccountSettings = Pick<Settings, 'accountCheck' | 'accountSettleMs' | 'requestTimeoutMs'>;

/** The team's remaining credits, or why the counter cannot be read. */
export async function readCredits(api: Client, as: Identity): Promise<{ remaining: number } | { unavailable: string }> {
  // A team's limit may cover this read too: a 429 is waited out (within BACKOFF_BUDGET_MS), then taken as the answer.
  const answer = await api.send({ method: 'GET', path: CREDIT_USAGE_PATH, as, attach: false, on429: 'return-last' });
  const remaining = answer.body?.data?.remainingCredits;
  if (answer.status === 200 && typeof remaining === 'number' && Number.isFinite(remaining)) {
    const key = `${api.target.baseURL} ${as.name}`;
    places.set(key, Math.max(places.get(key) ?? 0, decimalsOf(remaining)));
    return { remaining };
  }
  return { unavailable: `GET ${CREDIT_USAGE_PATH} answered ${answer.status}${answer.status === 200 ? ' without a number in data.remainingCredits' : ''}` };
}

const opened = new Map<string, Promise<Opening>>();
/** The most decimal places a team's counter has shown in this process: its precision (a reading may happen to need fewer). */
const places = new Map<string, number>();

/**
 * The opening of the owner team's account on this run's target, read once for the whole run
 * before its first scrape (one worker reads it for all). Against a remote target the counter must
 * hold still for a second (charges of an earlier run may still be landing); one that keeps moving
 * is another use of the team.
 */
export function openAccount(api: Client, owner: Identity, settings: AccountSettings, name = OPENING): Promise<Opening> {
  const key = `${api.target.baseURL} ${name}`;
  let opening = opened.get(key);
  if (!opening) opened.set(key, (opening = takeOpening(api, owner, settings, name)));
  return opening;
}

async function takeOpening(api: Client, owner: Identity, settings: AccountSettings, name: string): Promise<Opening> {
  if (!settings.accountCheck) return { unavailable: 'the account check is turned off (ACCOUNT_CHECK=0)' };
  if (!api.coordination) return readStill(api, owner, settings);
  // The others wait for its reading as long as the reading may take.
  return api.coordination.readOnce(name, () => readStill(api, owner, settings), settings.accountSettleMs + 3 * settings.requestTimeoutMs + 1000, api.signal);
}

async function readStill(api: Client, owner: Identity, settings: AccountSettings): Promise<Opening> {
  let reading = await readCredits(api, owner);
  if ('unavailable' in reading || api.target.embedded) return reading;
  const until = performance.now() + settings.accountSettleMs;
  for (;;) {
    await sleep(1000, undefined, { signal: api.signal });
    const next = await readCredits(api, owner);
    if ('unavailable' in next || next.remaining === reading.remaining) return next;
    if (performance.now() >= until)
      return { unavailable: `the account kept moving before the run's first scrape (${reading.remaining}, then ${next.remaining}): another use of the team` };
    reading = next;
  }
}

/** The opening some worker of this run wrote, if any. */
export function readOpening(coordination: Coordination, name = OPENING): Opening | undefined {
  return coordination.readShared<Opening>(name);
}

/** Their names among the readings the run's workers share: the owner team's, and the foreign team's (it refuses the owner's sessions). */
const OPENING = 'account-opening';
export const REFUSER_OPENING = 'account-opening-refuser';

export interface Reading {
  /** ms since the first reading. */
  atMs: number;
  remaining: number;
}

/**
 * Reads the account until the run's charges have landed: it has been still for as long again as
 * it kept moving after the first reading (a charge still queued could pass through the figure the
 * run expects, since charges only add up), at least a second (a fifth against the embedded
 * reference), and shows what the run expects (`expected` remaining credits, within `tolerance`);
 * or until ACCOUNT_SETTLE_MS. An account charged more than expected is read until then: a charge
 * still queued may add to the excess, and the verdict needs all of it. With `expected` Infinity,
 * stillness alone ends it. Returns every reading and whether it was still at the end.
 */
export async function settleAccount(
  api: Client,
  owner: Identity,
  expected: number,
  tolerance: number,
  settings: AccountSettings,
  stillMs?: number,
): Promise<{ readings: Reading[]; still: boolean }> {
  const started = performance.now();
  const floorMs = stillMs ?? (api.target.embedded ? 200 : 1000);
  const readings: Reading[] = [];
  const read = async () => {
    const reading = await readCredits(api, owner);
    if ('unavailable' in reading) throw new RunError(`the account could no longer be read: ${reading.unavailable}`);
    readings.push({ atMs: Math.round(performance.now() - started), remaining: reading.remaining });
  };
  await read();
  let movedAt = 0;
  const still = () => performance.now() - started - movedAt >= Math.max(floorMs, movedAt);
  const settled = () => still() && (expected === Infinity || Math.abs(readings.at(-1)!.remaining - expected) <= tolerance);
  while (!settled() && performance.now() - started < settings.accountSettleMs) {
    await sleep(floorMs, undefined, { signal: api.signal });
    await read();
    const [before, last] = readings.slice(-2);
    if (before.remaining !== last.remaining) movedAt = last.atMs;
  }
  return { readings, still: still() };
}

/** How long the probe's session lives before its stop: a charge by the second is then a tenth of a credit or more. */
export const PROBE_HOLD_MS = 3_500;

/**
 * One session alone, once the run is over, for an account that moved by more or less than the run
 * can explain: the counter is read still, a session is scraped, provisioned, held and stopped (twice),
 * and the counter must then move by exactly what its scrape and its first stop reported; where the
 * stop states no charge, by what the session's measured life bills. Returns the failure, or
 * undefined when it agrees or cannot tell (the counter kept moving, or the scrape's price went unreported).
 */
export async function probeAccount(
  api: Client,
  owner: Identity,
  provision: () => Promise<{ scrape: { body: Record<string, any> | undefined }; created: Answer; stop: () => Promise<Answer> }>,
  settings: AccountSettings & Tolerances,
): Promise<string | undefined> {
  const before = await settleAccount(api, owner, Infinity, 0, settings);
  if (!before.still) return undefined;
  const opening = before.readings.at(-1)!.remaining;
  const { scrape, created, stop } = await provision();
  const answer = await stop();
  const price = scrape.body?.data?.metadata?.creditsUsed;
  if (typeof price !== 'number' || answer.status !== 200) return undefined;
  const settled = typeof answer.body?.creditsBilled === 'number' ? answer.body.creditsBilled : undefined;
  if (settled !== undefined) {
    const after = await settleAccount(api, owner, opening - round(price + settled), aloneTolerance(settled), settings);
    return judgeAlone(opening, { remaining: after.readings.at(-1)!.remaining, still: after.still }, price, settled);
  }
  // A minimal body: what the session's measured life bills, by the second, widened by the tolerances.
  const interval = measuredInterval({ created }, answer);
  const { min, max } = proratedRange(...widened(interval, settings));
  const after = await settleAccount(api, owner, opening - round(price + (min + max) / 2), (max - min) / 2 + settings.creditTolerance, settings);
  const moved = round(opening - after.readings.at(-1)!.remaining - price);
  if (!after.still || (moved >= min - settings.creditTolerance && moved <= max + settings.creditTolerance)) return undefined;
  return `one session alone, after the run (held ${PROBE_HOLD_MS} ms, refused by another team and without a key, stopped twice by its owner, the first time beside another team's request, which answered without a creditsBilled): its scrape reported ${price} credit(s), and its life (${describeInterval(interval)}) bills ${min.toFixed(6)} to ${max.toFixed(6)}, but within ACCOUNT_SETTLE_MS the account moved by ${round(moved + price)} credit(s) (${opening}, then ${after.readings.at(-1)!.remaining}): the target charges other than it bills`;
}

const aloneTolerance = (settled: number) => 0.5 * 10 ** -Math.max(2, decimalsOf(settled)) + 1e-9;

/** One session alone: the account, still before and after, moved by its scrape's price and its stop's settlement, to the settlement's precision. The failure, if not. */
export function judgeAlone(opening: number, closing: { remaining: number; still: boolean }, price: number, settled: number): string | undefined {
  const expected = round(price + settled);
  const moved = round(opening - closing.remaining);
  if (!closing.still || Math.abs(moved - expected) <= aloneTolerance(settled)) return undefined;
  return `one session alone, after the run (held ${PROBE_HOLD_MS} ms, refused by another team and without a key, stopped twice by its owner, the first time beside another team's request): its scrape reported ${price} credit(s) and its stop ${settled}, but within ACCOUNT_SETTLE_MS the account moved by ${moved} credit(s) (${opening}, then ${closing.remaining}): the target charges other than it reports`;
}

/**
 * What the account moved by around `act`: read still (for `stillMs` at least), `act`, then (where
 * `measure` asks for it) read until it moves (a charge may be queued: at most ACCOUNT_SETTLE_MS)
 * and holds still again. A reading that fails before `act` throws; after it, it is the unknown.
 */
type Around<T> = { result?: T; moved?: { before: number; after: number }; unknown?: string };

async function moveAround<T>(
  api: Client,
  as: Identity,
  act: () => Promise<T>,
  settings: AccountSettings,
  measure: (result: T) => boolean = () => true,
  stillMs?: number,
): Promise<Around<T>> {
  const before = await settleAccount(api, as, Infinity, 0, settings, stillMs);
  if (!before.still) return { unknown: `the ${as.name}'s account kept moving before it: another use of the team` };
  const opening = before.readings.at(-1)!.remaining;
  const result = await act();
  if (!measure(result)) return { result };
  // Once a charge failed to land within ACCOUNT_SETTLE_MS, no worker waits as long for the next: the account has said how it charges.
  const unmoved = `account-unmoved-${as.name.replace(/\W+/g, '-')}`;
  const until = performance.now() + (api.coordination?.readShared(unmoved) ? Math.min(settings.accountSettleMs, QUEUED_CHARGE_MS) : settings.accountSettleMs);
  try {
    for (;;) {
      const after = await settleAccount(api, as, Infinity, 0, settings);
      const closing = after.readings.at(-1)!.remaining;
      if (!after.still) return { result, unknown: `the ${as.name}'s account kept moving after it: another use of the team` };
      // Unmoved after ACCOUNT_SETTLE_MS: the account's last word is that nothing was charged (a charge queued longer needs it raised).
      if (closing === opening && performance.now() >= until) api.coordination?.share(unmoved, true);
      if (closing !== opening || performance.now() >= until) return { result, moved: { before: opening, after: closing } };
    }
  } catch (error) {
    if (error instanceof RunError) return { result, unknown: error.message };
    throw error;
  }
}

/** A scrape's price as the account shows it, for a target whose scrape answers state none. Undefined when the counter would not hold still. */
export async function measureScrapePrice(api: Client, owner: Identity, scrape: () => Promise<unknown>, settings: AccountSettings): Promise<number | undefined> {
  const { moved } = await moveAround(api, owner, scrape, settings);
  return moved && round(moved.before - moved.after);
}

/**
 * Whether the run may need the account to price a stop: its counter can be read (or has not been
 * yet), and stops have not shown that they state their prices. The embedded reference states them:
 * against it, only once a first stop showed otherwise, or for a stop that asks (`unknown`) before any did.
 */
export function accountPrices(api: Client, settings: AccountSettings, unknown = false): boolean {
  const coordination = api.coordination;
  const pricing = coordination?.pricing();
  const embeddedSkips = api.target.embedded && pricing !== 'silent' && !(unknown && pricing === undefined);
  if (!settings.accountCheck || !coordination || pricing === 'stated' || embeddedSkips) return false;
  const opening = readOpening(coordination);
  return opening === undefined || !('unavailable' in opening);
}

/**
 * A stop whose answer may state no price (the specification allows a bare `{"success": true}`),
 * priced by its team's account: while no other request of the run is in flight, the account is
 * read still (longer than a queued charge takes to land), the stop sent, and, when it answers 200
 * without a creditsBilled, read until it moves and holds still again. What it moved by is the
 * stop's charge (`charged` on the answer): it implies the billed duration, for the billing and
 * survival checks to judge. The ledger keeps it, for the account check.
 */
export async function stopPriced(
  api: Client,
  jobId: string,
  as: Identity,
  settings: AccountSettings,
  { unknown = false, ...options }: Parameters<Client['stop']>[2] & { unknown?: boolean } = {},
): Promise<Answer> {
  let sent: Answer | undefined;
  const stop = async () => (sent = await api.stop(jobId, as, options));
  if (!accountPrices(api, settings, unknown)) return stop();
  return api.quietly(async (quiet) => {
    if (!quiet || !accountPrices(api, settings, unknown)) return stop();
    const silent = (answer: Answer) => answer.status === 200 && typeof answer.body?.creditsBilled !== 'number';
    // A reading that fails before the stop leaves it unpriced; the stop itself is sent once, whatever happens.
    const around: Around<Answer> = await moveAround(api, as, stop, settings, silent, api.target.embedded ? undefined : QUEUED_CHARGE_MS).catch((error) => {
      if (error instanceof RunError && !sent) return { unknown: error.message };
      throw error;
    });
    const answer = around.result ?? sent ?? (await stop());
    if (!silent(answer)) return answer;
    if (!around.moved) {
      answer.charged = { unknown: around.unknown ?? 'the account could not be read' };
      return answer;
    }
    const { before, after } = around.moved;
    // Whole credits where no reading showed a fraction; else to the cent at least (a reading may happen to need fewer places than the counter keeps).
    const shown = Math.max(decimalsOf(before), decimalsOf(after), places.get(`${api.target.baseURL} ${as.name}`) ?? 0);
    answer.charged = { credits: round(before - after), tolerance: 10 ** -(shown && Math.max(2, shown)) };
    // Nothing moved: the session stays among those the account check bounds by their lives.
    if (answer.charged.credits > 0) api.ledger?.priced({ target: api.target.baseURL, jobId, identity: as.name, credits: answer.charged.credits });
    const moved =
      before === after
        ? `did not move around it within ACCOUNT_SETTLE_MS=${settings.accountSettleMs} (${before} throughout)`
        : `moved by ${answer.charged.credits} credit(s) around it (${before}, then ${after})`;
    note(`the stop answered 200 without a creditsBilled; the ${as.name}'s account ${moved}, to within ${answer.charged.tolerance}`);
    return answer;
  });
}

/** Before a priced stop, the account of a remote target holds still this long: a charge of an earlier request, queued, has landed by then. */
const QUEUED_CHARGE_MS = 2_500;

/**
 * The refusing team's side: its account must move by its own spending alone (usually nothing). When
 * it moved otherwise, one owner session that it alone refuses tells a target that charges the caller
 * of a refused request from another use of that team. The failure, or a note when it cannot tell.
 */
export async function judgeRefuser(
  api: Client,
  refuser: Identity,
  opening: number,
  spending: Spending,
  refuseOnce: () => Promise<void>,
  settings: AccountSettings,
): Promise<{ failure?: string; note?: string }> {
  const own = round(
    spending.settlements.reduce((sum, session) => sum + session.settled.reduce((total, one) => total + one.credits, 0), 0) + spending.scrapes.credits,
  );
  const closing = await settleAccount(api, refuser, opening - own, accountTolerance(spending), settings);
  const moved = round(opening - closing.readings.at(-1)!.remaining);
  if (Math.abs(moved - own) <= accountTolerance(spending) || spending.scrapes.unpriced) return {};
  const during = `the ${refuser.name}'s account moved by ${moved} credit(s) during the run, where its own sessions and scrapes came to ${own}`;
  const before = await settleAccount(api, refuser, Infinity, 0, settings);
  if (!before.still) return { note: `${during}, and it kept moving after: another use of the team?` };
  const still = before.readings.at(-1)!.remaining;
  await refuseOnce();
  const after = await settleAccount(api, refuser, still, 0, settings);
  const charged = round(still - after.readings.at(-1)!.remaining);
  if (after.still && charged > 0)
    return {
      failure: `${during}; one session alone, whose stop it sent and was refused, then charged it ${charged} credit(s) (${still}, then ${after.readings.at(-1)!.remaining}): a refused request charged its caller`,
    };
  return { note: `${during}; one stop of it refused alone moved nothing: another use of the team` };
}

/** The spending with its unpriced scrapes at `price` each. */
export const pricedAt = (spending: Spending, price: number): Spending => ({
  ...spending,
  scrapes: { count: spending.scrapes.count, credits: round(spending.scrapes.credits + price * spending.scrapes.unpriced), unpriced: 0 },
});

/** Sessions stopped by answers that stated no charge: together they may have cost up to what their lives bill at most. */
export const unstatedMost = (spending: Spending, rule?: BillingRule) =>
  round((spending.silent ?? []).reduce((sum, { lifeMs }) => sum + Math.max(proratedRange(0, lifeMs).max, rule ? chargeUnder(rule, lifeMs) : 0), 0));

export interface AccountVerdict {
  outcome: 'pass' | 'fail' | 'not verifiable';
  message: string;
  /** On a failure: the jobs whose settlements were charged again, and the message blaming them; then other sets that add up to the excess as well. */
  blames?: { jobs: string[]; message: string }[];
}

const round = (credits: number) => +credits.toFixed(6);

/**
 * What the account says of the run's charges. Charged exactly the settlements and scrapes the run
 * saw: pass. Charged more, by what some of the run's own sessions settled (those reported more than
 * once first): those sessions were charged again, a failure of rule 7 naming them. Charged more by
 * an amount none of its settlements explains, or while the counter was still moving, or with
 * scrapes of unknown price: not verifiable (another use of the team, say), never a failure.
 * Charged less: not verifiable (a charge still queued past ACCOUNT_SETTLE_MS).
 */
export function judgeAccount(
  opening: number,
  closing: { remaining: number; still: boolean },
  spending: Spending,
  settleMs: number,
  scrapePrice?: number,
  rule?: BillingRule,
): AccountVerdict {
  const verdict = judgeCharges(opening, closing, spending, settleMs, rule);
  return scrapePrice === undefined
    ? verdict
    : {
        ...verdict,
        message: `${verdict.message}; scrapes whose answers gave no price were taken at ${scrapePrice} credit(s) each, what one scrape alone moved the account by`,
      };
}

function judgeCharges(
  opening: number,
  closing: { remaining: number; still: boolean },
  spending: Spending,
  settleMs: number,
  rule?: BillingRule,
): AccountVerdict {
  const settled = spending.settlements.flatMap((session) =>
    session.settled.map((one) => ({ jobId: session.jobId, credits: one.credits, reports: session.reports })),
  );
  const fromSessions = round(settled.reduce((sum, one) => sum + one.credits, 0));
  const fromScrapes = round(spending.scrapes.credits);
  const expected = round(fromSessions + fromScrapes);
  const charged = round(opening - closing.remaining);
  // Compared unrounded, shown rounded: a settlement reported to nine places is matched to nine places.
  const exactly = opening - closing.remaining - settled.reduce((sum, one) => sum + one.credits, 0) - spending.scrapes.credits;
  // Shown to six places, or to twelve below a millionth: an excess past the tolerance never reads as 0.
  const shown = (credits: number) => (Math.abs(credits) < 5e-7 ? credits.toFixed(12).replace(/0+$/, '') : String(round(credits)));
  const difference = shown(exactly);
  const tolerance = accountTolerance(spending);
  const figures =
    `the owner team's account was charged ${charged} credit(s) (${opening} credit(s) left before the run's first scrape, ${closing.remaining} credit(s) after its last settlement); ` +
    `its answers account for ${expected} credit(s): ${fromSessions} credit(s) in ${settled.length} settlement(s) of its ${spending.settlements.length} settled session(s), each counted once, and ${fromScrapes} credit(s) for its ${spending.scrapes.count} scrape(s)`;
  if (Math.abs(exactly) <= tolerance) return { outcome: 'pass', message: figures };
  if (exactly < 0) {
    return {
      outcome: 'not verifiable',
      message: `${figures}: ${shown(-exactly)} credit(s) fewer, which a charge still queued after ACCOUNT_SETTLE_MS=${settleMs} would explain (raise it)`,
    };
  }
  if (spending.scrapes.unpriced) {
    return {
      outcome: 'not verifiable',
      message: `${figures}: ${difference} credit(s) more, and ${spending.scrapes.unpriced} scrape(s) gave no price (data.metadata.creditsUsed), which may be it`,
    };
  }
  if (!closing.still)
    return {
      outcome: 'not verifiable',
      message: `${figures}: ${difference} credit(s) more, and the counter was still moving: another use of the team during the run?`,
    };
  // Only a session that more than one stop answered 200 about (a repeat, a zero) may have been charged again: once for each answer past its settlements.
  const candidates = spending.settlements
    .filter((session) => session.reports > session.settled.length)
    .flatMap((session) =>
      session.settled
        .filter((one) => one.credits > 0)
        .map((one) => ({ jobId: session.jobId, credits: one.credits, reports: session.reports, copies: session.reports - session.settled.length })),
    )
    .sort((a, b) => b.reports - a.reports);
  const blames = chargedAgain(candidates, exactly, tolerance).map((again) => {
    const named = again
      .map(({ one, times }) => `${one.jobId} (${one.credits} credit(s)${times > 1 ? ` ${times} times` : ''}; ${one.reports} stop(s) answered 200 about it)`)
      .join(', ');
    return {
      jobs: [...new Set(again.map(({ one }) => one.jobId))],
      message: `${figures}: ${difference} credit(s) more, exactly what ${again.length === 1 ? 'this session' : 'these sessions'} settled again: a later stop of a stopped session (a repeat, or a report of nothing billed) was charged again, for ${named}`,
    };
  });
  if (blames.length) return { outcome: 'fail', message: blames[0].message, blames };
  const silent = spending.silent ?? [];
  const most = unstatedMost(spending, rule);
  // A session more than one stop answered without a charge may have been charged again within that slack: nothing to pass then.
  const repeated = silent.filter((session) => session.reports > 1).length;
  if (silent.length && !repeated && exactly <= most + tolerance) {
    return {
      outcome: 'pass',
      message: `${figures}: ${difference} credit(s) more, within the ${most} credit(s) its ${silent.length} session(s) stopped by answers without a creditsBilled may have cost at most for their lives`,
    };
  }
  const unstated = silent.length
    ? `, nor its ${silent.length} session(s) stopped by answers without a creditsBilled (at most ${most} credit(s) for their lives${repeated ? `; ${repeated} of them answered so more than once, which may have been charged again` : ''})`
    : '';
  return {
    outcome: 'not verifiable',
    message: `${figures}: ${difference} credit(s) more, which no settlement reported twice explains${unstated}: another use of the team during the run, or a charge the run never saw`,
  };
}

/** Decimal places of a reported figure (up to 9). */
const decimalsOf = (value: number) => {
  for (let places = 0; places < 9; places++) if (Math.abs(value - +value.toFixed(places)) < 1e-12) return places;
  return 9;
};

/**
 * How far the account may lie from the sum of what the run's answers said: half a unit of the last
 * place each settlement was reported to (at least to the cent), for a target that reports a rounded
 * figure of what it charged. Scrapes' prices are whole. Never near a whole settlement.
 */
export function accountTolerance(spending: Spending): number {
  const settled = spending.settlements.flatMap((session) => session.settled);
  return settled.reduce((sum, one) => sum + 0.5 * 10 ** -Math.max(2, decimalsOf(one.credits)), 0) + 1e-9;
}

/**
 * Sets of settlements charged again, each at most `copies` times, whose credits add up to `total`:
 * a bounded search, preferring the sessions reported most; up to `most` sets (equal holds settle alike).
 */
function chargedAgain<T extends { credits: number; copies: number }>(
  candidates: T[],
  total: number,
  tolerance: number,
  most = 3,
): { one: T; times: number }[][] {
  let budget = 50_000;
  const found: { one: T; times: number }[][] = [];
  const search = (index: number, left: number, chosen: { one: T; times: number }[]): void => {
    if (found.length >= most) return;
    if (Math.abs(left) <= tolerance) return void (chosen.length && found.push(chosen));
    if (left < -tolerance || index >= candidates.length || --budget < 0) return;
    const one = candidates[index];
    for (let times = Math.min(one.copies, Math.floor((left + tolerance) / one.credits)); times >= 0; times--)
      search(index + 1, left - times * one.credits, times ? [...chosen, { one, times }] : chosen);
  };
  search(0, total, []);
  return found;
}
