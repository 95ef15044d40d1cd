/**
 * Interacts that would open a session, sent at once on one job, must open one: one stop ends it,
 * and the team keeps every slot of its cap. Run after every other test: against a server that
 * orphans a session here, the team's cap stays full and any later test of the team would wait.
 */

import { setTimeout as sleep } from 'node:timers/promises';
import type { Check } from '../checks/checks';
import { notVerifiable } from '../checks/checks';
import { expect } from '../checks/expect';
import { extendTimeout, note, step } from '../checks/recorder';
import { OPENS } from '../config/rules';
import type { Settings } from '../config/settings';
import { boundsOf, clockStepMs } from './billing';
import { CAP_CONFIRM_MS, capAcrossRun, capsHeld, MOST_AT_ONCE } from './cap-discovery';
import { type Answer, type Client, summary } from './client';
import type { Ledger } from './ledger';
import { judge } from './named-checks';
import type { ScrapedJob, Sessions } from './sessions';
import type { Identities } from './target';

export interface OpensContext {
  api: Client;
  sessions: Sessions;
  identities: Identities;
  settings: Settings;
  ledger: Ledger;
  check: Check;
}

/** The account check, after this test, keeps its sessions (rules.ts). */
const keptForAccount = () => OPENS['stop-is-final/account']?.sessions ?? 0;
/** How long after a refusal for the cap its job is opened: a clock the refusal started would count it. */
const REFUSAL_GAP_MS = 1000;

export async function opensOneAtOnce({ api, sessions, identities, settings, ledger, check }: OpensContext): Promise<void> {
  // Two waits of CAP_CONFIRM_MS at most: a cap that refused a team while the run held none of its sessions, asked again later (the run is
  // each team's only client, as its account check holds), and a slot the last stop releases late.
  extendTimeout(2 * CAP_CONFIRM_MS);
  const teams = [identities.owner, identities.foreign, ...(identities.burst ? [identities.burst] : [])];
  const held = await capsHeld(api, teams, settings.accountCheck, async (as) => (await sessions.openAtOnce(1, { as, once: true })).opens[0]);
  for (const description of held.freed) note(description);
  if (held.kept.length || held.freed.length)
    await check('room-left', () =>
      expect(held.kept, `the target keeps the slots of stopped sessions (a stop must release its browser): ${held.kept.join('; ')}`).toEqual([]),
    );
  if (held.untold.length) notVerifiable(held.untold.join('; '));
  // Under a known cap, one open more than it allows: every session opened beside the first would hold a slot.
  const cap = sessions.cap();
  const count = cap === undefined ? 3 : Math.min(cap + 1, MOST_AT_ONCE);
  const { jobId, opens } = await step(`the owner sends ${count} interacts at once on a new job`, () => sessions.openAtOnce(count));
  await check('opens', judge.opensOne(opens));
  const stop = await step('the owner stops the session', () => api.stop(jobId, identities.owner));
  await check('stop', judge.status(stop, 200));
  const again = await step('the owner stops it again', () => api.stop(jobId, identities.owner));
  await check('one-session', judge.oneSession(again, stop));
  if (cap === undefined) {
    // Every slot free again: one session opens once the run holds none (a stop that keeps its slot shows after as many stops as the cap).
    const { answers: opened } = await step('the owner opens a session on a new job', () => sessions.openEvery(1, 1, CAP_CONFIRM_MS));
    await check('room-left', judge.roomLeft(opened, 1, count));
    await step('the owner stops it', () => sessions.stopLive());
    return capSeenAcrossRun({ api, sessions, identities, settings, ledger, check });
  }
  // A cap the target states (up front, or in its refusals' words): every slot free again (a session nobody can stop holds one), and
  // one more at once refused. An inferred cap may be too high, and one above MOST_AT_ONCE too costly to fill: one session.
  const stated = sessions.statedCap();
  // A cap in the target's own words, against the most the owner surely held live at once during the run.
  const inWords = sessions.capInWords();
  const peak = ledger.mostLive(api.target.baseURL, identities.owner.name);
  const keptAllRun = () =>
    inWords === undefined ? undefined : check('cap-kept', judge.capKeptAllRun(peak, inWords, `the target's refusals state a cap of ${inWords} live sessions`));
  const room = stated !== undefined && stated < MOST_AT_ONCE ? stated : undefined;
  // One more than the cap where the budget has room for it, else the cap alone (cap-kept then unasked), else nothing to tell.
  const left = sessions.budgetLeft() - keptForAccount();
  const filling = room === undefined ? 1 : Math.min(room + 1, left);
  if (room !== undefined && filling < room) {
    await keptAllRun();
    notVerifiable(
      `filling the cap of ${room} the target states takes ${room} sessions of the budget, which has ${left} left: SESSION_BUDGET=${settings.sessionBudget + room + 1 - left} verifies it`,
    );
  }
  const { answers: opened, jobs } = await step(`the owner opens ${filling} session(s) at once, each on a new job`, () =>
    sessions.openEvery(filling, room ?? 1, CAP_CONFIRM_MS),
  );
  await check('room-left', judge.roomLeft(opened, room ?? 1, count));
  await keptAllRun();
  if (room !== undefined && filling > room) await check('cap-kept', judge.capKept(opened, room));
  else if (room !== undefined)
    note(`cap-kept: not asked, the session budget had room for the cap of ${room} alone (SESSION_BUDGET=${settings.sessionBudget + 1} asks it)`);
  if (room !== undefined && opened.filter((open) => open.status === 200).length >= room) await capsApart({ sessions, identities, check }, room);
  const refused = opened.findIndex((open) => open.status === 429 && open.refusal?.kind === 'cap');
  if (refused >= 0) await refusalStartsNothing({ api, sessions, identities, settings, check }, opened[refused], jobs[refused]);
}

/** A refused interact starts nothing: the job the cap refused, opened once the owner's slots are free, bills from that open alone. */
async function refusalStartsNothing(
  { api, sessions, identities, settings, check }: Pick<OpensContext, 'api' | 'sessions' | 'identities' | 'settings' | 'check'>,
  refusal: Answer,
  job: ScrapedJob,
) {
  if (sessions.budgetLeft() - keptForAccount() < 1) return note('refusal-starts-nothing: not asked, the session budget had no session left');
  await step('the owner stops its sessions', () => sessions.stopLive());
  // Long past the refusal, so that a clock it started shows past every tolerance.
  const gapMs = REFUSAL_GAP_MS + 4 * settings.durationToleranceMs + clockStepMs(settings) - (performance.now() - refusal.receivedAt);
  if (gapMs > 0) await step(`wait ${Math.round(gapMs)} ms after the refusal`, () => sleep(gapMs, undefined, { signal: api.signal }));
  extendTimeout(CAP_CONFIRM_MS + Math.max(0, gapMs));
  const opened = await step('the owner opens the job the cap refused (again, at growing waits, while a slot is released late)', async () => {
    let answer = await sessions.openOn(job);
    for (let wait = 1000, until = performance.now() + CAP_CONFIRM_MS; answer.status === 429 && performance.now() + wait < until; wait *= 2) {
      await sleep(wait, undefined, { signal: api.signal });
      answer = await sessions.openOn(job);
    }
    return answer;
  });
  if (opened.status !== 200) return note(`refusal-starts-nothing: not asked, the job the cap refused did not open now: ${summary(opened)}`);
  const stop = await step('the owner stops it', () => api.stop(job.jobId, identities.owner));
  if (stop.status !== 200 || typeof stop.body?.sessionDurationMs !== 'number')
    return note(`refusal-starts-nothing: not asked, the stop reported no duration: ${summary(stop)}`);
  await check('refusal-starts-nothing', judge.duration(stop, opened, boundsOf(settings)));
}

/** The owner's cap full: the foreign team, which holds nothing now, opens one session; refused for a cap, the cap counted the owner's. */
async function capsApart({ sessions, identities, check }: Pick<OpensContext, 'sessions' | 'identities' | 'check'>, cap: number) {
  const { foreign } = identities;
  if (sessions.budgetLeft() - keptForAccount() < 1) return note('caps-apart: not asked, the session budget had no session left for the foreign team');
  const { opens } = await step(`the ${foreign.name} opens a session while the owner holds its cap`, () => sessions.openAtOnce(1, { as: foreign, once: true }));
  const [theirs] = opens;
  // A refusal for the foreign team's own rate says nothing of the cap.
  if (theirs.status === 429 && theirs.refusal?.kind === 'rate')
    return note(`caps-apart: not compared, the ${foreign.name}'s rate refused it (${summary(theirs)})`);
  await check('caps-apart', judge.capsApart(theirs, cap, foreign.name));
}

/** No cap known: as many sessions one after the other as the run held live at once; a cap refusing one of them was not kept. */
async function capSeenAcrossRun({ api, sessions, identities, ledger, check }: OpensContext): Promise<void> {
  const across = await capAcrossRun(api, sessions, ledger, identities.owner, keptForAccount());
  if (!('refused' in across)) return note(`cap-kept: ${across.untold}; no cap on live sessions is known`);
  const shownBy = `sessions opened one after the other were refused for a cap once ${across.live} were live (${summary(across.refused)})`;
  await check('cap-kept', judge.capKeptAllRun(across.peak, across.live, shownBy));
}
