/**
 * How a team's cap on live sessions shows: an interact that would open a session, refused with 429,
 * is told from a rate's refusal by its words, by the known window's room, or by a probe; the cap is
 * what the run may have held live then (src/coordination/session-slots.ts keeps it).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { notVerifiable } from '../checks/checks';
import { extendTimeout, step } from '../checks/recorder';
import type { Settings } from '../config/settings';
import { readRefusal } from '../http/limits';
import { type Answer, type Client, summary } from './client';
import type { Ledger } from './ledger';
import type { Identity } from './target';

/** Refusals for a cap while the run holds nothing of the team's (over 5 s at least), after which an interact gives up. */
const EMPTY_HANDED_REFUSALS = 5;

export type Opening = ReturnType<typeof openingOf>;

/** Raised once a cap refused the team while the run held nothing of it (what, and when): `stop-is-final/simultaneous-opens` judges it. */
export const capHeldFlag = (team: Identity) => `cap-held-empty-handed-${team.name.replace(/\W+/g, '-')}`;
interface CapHeld {
  what: string;
  at: number;
}

/** The most sessions a test opens at once to show a cap's slots (the hosted service's caps are lower). */
export const MOST_AT_ONCE = 8;

/** How long after a cap refused a team empty-handed it is asked again: a browser still being released by then was not released by its stop. */
export const CAP_CONFIRM_MS = 30_000;

/**
 * Where no cap is known: as many sessions as the run held live at once (`peak`), opened one after
 * the other by `open`, never at once. A refusal for a cap among them (in words, still there after
 * `confirmMs`) shows a cap below that peak, which interacts sent together got past. Undefined when each opened.
 */
export async function capBelowPeak(
  open: () => Promise<Answer>,
  peak: number,
  confirmMs = CAP_CONFIRM_MS,
): Promise<{ refused: Answer; live: number } | { untold: string } | undefined> {
  const forCap = (answer: Answer) => answer.status === 429 && readRefusal(answer.text, answer.headers).kind === 'cap';
  for (let live = 0; live < peak; live++) {
    let answer = await open();
    // A slot a stop just before released late: asked again at growing intervals, within confirmMs.
    for (let wait = 1000, until = performance.now() + confirmMs; forCap(answer) && performance.now() + wait < until; wait *= 2) {
      await sleep(wait);
      answer = await open();
    }
    if (answer.status === 200) continue;
    if (forCap(answer)) return { refused: answer, live };
    return { untold: `of sessions opened one after the other, number ${live + 1} was answered ${summary(answer)}, not a cap's refusal in words` };
  }
  return undefined;
}

/**
 * Where no cap is known, after every other test: as many sessions as the owner surely held live at
 * once during the run (the ledger), opened one after the other where the budget has them beside
 * `kept` (capBelowPeak). A refusal for a cap below that peak: interacts sent together got past it.
 */
export async function capAcrossRun(
  api: Client,
  sessions: { budgetLeft(): number; openAtOnce(count: number, options: { once: true }): Promise<{ opens: Answer[] }> },
  ledger: Ledger,
  owner: Identity,
  kept: number,
): Promise<{ refused: Answer; live: number; peak: ReturnType<Ledger['mostLive']> } | { untold: string }> {
  const peak = ledger.mostLive(api.target.baseURL, owner.name);
  const room = sessions.budgetLeft() - kept;
  if (peak.count < 2) return { untold: `the ${owner.name} never held two sessions live at once` };
  if (peak.count > MOST_AT_ONCE) return { untold: `not asked, the ${owner.name} held ${peak.count} live at once, more than the ${MOST_AT_ONCE} a test opens` };
  if (room < peak.count)
    return {
      untold: `not asked, the ${owner.name} held ${peak.count} live at once and the budget has ${room} session(s) left for as many (SESSION_CAP, where the cap is known, has it checked)`,
    };
  extendTimeout(CAP_CONFIRM_MS);
  const below = await step(`the ${owner.name} opens ${peak.count} sessions one after the other, as many as it held live at once`, () =>
    capBelowPeak(async () => (await sessions.openAtOnce(1, { once: true })).opens[0], peak.count),
  );
  return below
    ? { ...below, peak }
    : { untold: `${peak.count} sessions opened one after the other, as many as the ${owner.name} held live at once: any cap is above that` };
}

/**
 * Each team whose cap refused it while the run held nothing, asked again once the run holds nothing
 * and CAP_CONFIRM_MS have passed, by `open` (one interact that would open a session, a 429 its
 * answer): still refused for a cap (`kept`), a session opened (a slow release), or untold: a
 * refusal that does not say which limit it is, or another client of the team may hold the cap
 * (ACCOUNT_CHECK=0, not asked).
 */
export async function capsHeld(
  api: Client,
  teams: Identity[],
  soleClient: boolean,
  open: (as: Identity) => Promise<Answer>,
): Promise<{ kept: string[]; freed: string[]; untold: string[] }> {
  const found = { kept: [] as string[], freed: [] as string[], untold: [] as string[] };
  for (const team of teams) {
    const held = api.coordination?.readShared<CapHeld>(capHeldFlag(team));
    if (!held || 'unavailable' in held) continue;
    if (!soleClient) {
      found.untold.push(`${held.what}; with ACCOUNT_CHECK=0 another client may hold the team's sessions`);
      continue;
    }
    await sleep(Math.max(0, held.at + CAP_CONFIRM_MS - Date.now()), undefined, { signal: api.signal });
    const answer = await open(team);
    const later = `${held.what}; ${Math.round((Date.now() - held.at) / 1000)} s later, with every session of the run stopped, an interact that would open one answered ${summary(answer)}`;
    const capped = answer.status === 429 && (answer.refusal?.kind === 'cap' || answer.refusal?.roomInWindow === true);
    (answer.status === 200 ? found.freed : capped ? found.kept : found.untold).push(later);
  }
  return found;
}

/** The sequences search's histories end quietly on it: no session of the team can open. */
export class CapHeldEmptyHanded extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CapHeldEmptyHanded';
  }
}

/** What the discovery reads: the test's client, the run ledger, how long a request may take; an allowance where the sequences search provisions. */
interface CapOptions {
  api: Client;
  ledger: Ledger;
  settings: Pick<Settings, 'requestTimeoutMs'>;
  allowance?: unknown;
}

/**
 * One interact that may open a session on `jobId`, as the ledger and the cap see it. With `marks`,
 * each attempt is 'opening' while in flight, a 4xx opened nothing ('not-opened': a test waiting
 * out a 429 holds nothing), and any other answer, or none, may have opened one ('maybe-open'). A 429 whose
 * words name a cap, or sent while the rate's known window had room, shows the cap at once; without
 * either, two 429s in a row, each with the team's rate limit shown to have room by a probe (a
 * window that just turned lets the second through). The cap is at most the sessions and scrapes the
 * run may have held live while it was refused (`cap`).
 */
export function openingOf(options: CapOptions, owner: Identity, jobId: string, marks: boolean) {
  const { api, ledger } = options;
  const entry = { target: api.target.baseURL, jobId, identity: owner.name };
  let sentAt = 0;
  // Whether the last attempt's outcome is in the ledger already: each attempt has one, so that a job with an interact in flight never reads as holding nothing.
  let marked = false;
  let roomBefore = false;
  let emptyHanded = 0;
  let emptyHandedSince: number | undefined;
  const opening = {
    cap: undefined as number | undefined,
    onAttempt: () => {
      if (marks) ledger.session('opening', entry);
      sentAt = Date.now();
      marked = false;
    },
    giveUpOn429: async (attempt: number, answer: Answer) => {
      const receivedAt = Date.now();
      if (marks) ledger.session('not-opened', { ...entry, status: 429 });
      marked = true;
      // A rate's refusal, by its words or by the window's count: wait for the window.
      const { kind, roomInWindow } = answer.refusal ?? {};
      if (kind === 'rate' || (kind === undefined && roomInWindow === false)) return false;
      const others = ledger.liveSessions(api.target.baseURL, owner.name, jobId) > 0;
      // A cap's, by its words or because the window had room; otherwise two in a row with room shown by a probe.
      const told = kind === 'cap' || roomInWindow === true;
      const room = !told && others && (roomBefore || (attempt & (attempt - 1)) === 0) && (await limitHasRoom(options, owner));
      const shown = told || (room && roomBefore);
      roomBefore = room;
      if (!shown) return false;
      opening.cap = await capAt(options, owner, jobId, sentAt, receivedAt);
      // A cap met while the run held nothing of the team's: no slot the run can free will make room.
      if (opening.cap === 0 && told) emptyHandedSince ??= receivedAt;
      // Once seen in this run, the first such refusal is enough.
      const seen = api.coordination?.readShared<CapHeld>(capHeldFlag(owner)) !== undefined;
      if (opening.cap === 0 && told && ++emptyHanded >= (seen ? 1 : EMPTY_HANDED_REFUSALS) && (seen || receivedAt - emptyHandedSince! >= 5_000)) {
        const what = `an interact that would open a session was refused for a cap ${emptyHanded} time(s) (${summary(answer)}) while this run held no session or scrape of the ${owner.name}`;
        if (!seen) api.coordination?.share<CapHeld>(capHeldFlag(owner), { what, at: Date.now() });
        if (options.allowance) throw new CapHeldEmptyHanded(what);
        notVerifiable(`${what}; stop-is-final/simultaneous-opens judges whether the target keeps the slots of stopped sessions`);
      }
      return opening.cap > 0;
    },
    /** What came of it: its answer's status, or none (never sent: nothing opened). */
    ended: (status?: number) => {
      if (marks && !marked)
        ledger.session(
          status === 200
            ? 'live'
            : (status !== undefined && status >= 400 && status < 500) || (status === undefined && sentAt === 0)
              ? 'not-opened'
              : 'maybe-open',
          { ...entry, status },
        );
    },
  };
  return opening;
}

/**
 * The sessions of the team the run may have held live between `sentAt` and `receivedAt` (epoch
 * ms), but the one on `jobId`. Interacts of other tests still in flight are waited for, a few
 * seconds at most: one that opens nothing is not counted, one still unanswered is.
 */
async function capAt(options: CapOptions, owner: Identity, jobId: string, sentAt: number, receivedAt: number): Promise<number> {
  const { api, ledger, settings } = options;
  const until = performance.now() + Math.min(settings.requestTimeoutMs, 5_000);
  for (;;) {
    const { count, pending } = ledger.possiblyLive(api.target.baseURL, owner.name, jobId, sentAt, receivedAt);
    if (!pending || performance.now() >= until) return count;
    await sleep(50, undefined, { signal: api.signal });
  }
}

/**
 * Whether the team's rate limit has room just after a 429 to an interact: a stop of an unknown job
 * by the same team is not refused. Asked at the 1st, 2nd, 4th, 8th... 429 of one interact (and
 * right after one that had room), so that a rate limit costs few such stops.
 */
async function limitHasRoom(options: CapOptions, owner: Identity): Promise<boolean> {
  const probe = await options.api.stop(randomUUID(), owner, { on429: 'once', attach: false });
  return probe.status !== 429;
}
