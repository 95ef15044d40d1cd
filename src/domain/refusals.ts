/**
 * What a refused request may and may not do. The shape every refusal rule shares: the session is
 * held before the refusal (so that a refusal that restarts its clock shows), refused, held again
 * (so that a refusal that ended it shows), and the owner's stop must then prove it ran on.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Check } from '../checks/checks';
import { extendTimeout, note, step } from '../checks/recorder';
import { DeclaredBehaviour } from '../config/errors';
import type { Settings } from '../config/settings';
import { accountPrices, stopPriced } from './account';
import type { Answer } from './answer';
import { boundsOf, clockStepMs } from './billing';
import type { Client } from './client';
import { type CheckCall, judge, runCheck } from './named-checks';
import type { Session, Sessions } from './sessions';
import type { Identity } from './target';

/**
 * How long the session is held before a refusal and after it: large against
 * DURATION_TOLERANCE_MS, against how long the target takes to answer (`exchangeMs`) and against
 * two steps of the target's declared clock (the whole session and a restarted one may each be off
 * by one), so that a clock restarted or a session ended at the refusal is off by more than the
 * measurement can hide. A slow target, or a busy runner, lengthens it.
 */
export const refusalHoldMs = (settings: Pick<Settings, 'durationToleranceMs'> & Partial<Pick<Settings, 'declaredClock'>>, exchangeMs = 0) => {
  const step = clockStepMs(settings);
  return Math.max(100, 5 * settings.durationToleranceMs, 2 * (settings.durationToleranceMs + step) + 4 * exchangeMs + step / 4);
};

/** The hold around a request that must leave a session running: sized from its own interact's exchange, or from what stops take on the target now if longer (the owner's stop must not eat the hold). */
export const holdAroundMs = (api: Client, settings: Settings, created: Answer) =>
  Math.round(refusalHoldMs(settings, Math.max(created.receivedAt - created.sentAt, api.stopExchangeMs())));

/**
 * The hold before such a request. Where the account may have to price the owner's stop (no stop
 * has stated its charge yet), 2 s more: a charge billed by the second tells the whole session from
 * a clock restarted at the refusal only when they differ by whole seconds.
 */
export const holdBeforeMs = (api: Client, settings: Settings, created: Answer) =>
  holdAroundMs(api, settings, created) + (accountPrices(api, settings) ? CHARGE_PROOF_MS : 0);
export const CHARGE_PROOF_MS = 2_000;

export interface RefusalContext {
  api: Client;
  sessions: Sessions;
  session: Session;
  check: Check;
  settings: Settings;
  owner: Identity;
}

/**
 * Hold, refuse (askToStop), hold, and have the owner stop, on the refuser's connection: the refusal
 * must be refused (`refused` check) and change nothing (`survives` check: 200 and the whole
 * session's duration). With `interactAfter`, the owner also uses the session after the refusal, as
 * clients do.
 */
export async function refuseThenOwnerStops(
  context: RefusalContext,
  refuser: Identity,
  refusedCheck: (answers: Answer[]) => CheckCall,
  { interactAfter = false, longerMs = 0 } = {},
): Promise<void> {
  const { api, sessions, session, check, settings, owner } = context;
  const holdMs = holdAroundMs(api, settings, session.created);
  const beforeMs = holdBeforeMs(api, settings, session.created) + longerMs;
  await step(`hold the session ${beforeMs} ms`, () => sessions.holdUntil(session, beforeMs));
  const refusersConnection = api.connection();
  const answers = await askToStop(api, session.jobId, refuser, owner, refusersConnection);
  const refusal = answers[0]!;
  const takenAsOwner = refuser.team !== undefined && refuser.team === owner.team;
  await check('refused', refusalCheck(answers, refusedCheck));
  if (interactAfter) {
    const used = await step('the owner interacts with the session', () => sessions.interact(session));
    // A session the refusal ended shows here too (the hosted service answers 410 for a destroyed one).
    if (used.status !== 200) await check('survives', judge.usable(used));
  }
  await step(`hold ${holdMs} ms more`, () => sleep(holdMs, undefined, { signal: api.signal }));
  const stop = await step("the owner stops the session, on the connection the refuser's request came on", () =>
    stopPriced(api, session.jobId, owner, settings, { connection: refusersConnection }),
  );
  api.release(refusersConnection);
  // Taken as the owner's key, as the target's file declares: that request stopped the session, and this stop must find it settled.
  if (takenAsOwner && refusal.status === 200) return check('survives', judge.settledBy(stop, refusal));
  const survived = judge.survived(stop, session.created, refusal, boundsOf(settings));
  const longer = longerMs ? undefined : longerIfTooSlow(context, survived, stop);
  if (longer === undefined) return check('survives', survived);
  const fresh = await step('a fresh session', () => sessions.provision());
  await refuseThenOwnerStops({ ...context, session: fresh }, refuser, refusedCheck, { interactAfter, longerMs: longer });
}

/**
 * The refuser's requests to stop the session. Identities belong to requests, not connections: it
 * asks on a connection of its own, again on one that has carried the owner's valid request (a
 * chain's refusers share one, `warmed`, so the owner's request is sent once), and a third time on
 * its own (a lockout counter that acts at the third refusal is a common guard); then with the job id
 * in upper case (a UUID's case means nothing: a target that finds the job whatever the case must
 * still know whose it is). The owner's key under a scheme word the target declares ignored is the
 * owner's: asked once.
 */
export async function askToStop(
  api: Client,
  jobId: string,
  refuser: Identity,
  owner: Identity,
  connection: Connection,
  warmed?: Connection,
): Promise<Answer[]> {
  const refusal = await step(`${refuser.name} asks to stop the session, on a connection of its own`, () => api.stop(jobId, refuser, { connection }));
  if (refuser.team !== undefined && refuser.team === owner.team) return [refusal];
  const again = await step(`${refuser.name} asks again, on a connection that has carried the owner's valid request`, async () => {
    const ownersConnection = warmed ?? api.connection();
    if (!warmed) await api.stop(randomUUID(), owner, { connection: ownersConnection });
    const answer = await api.stop(jobId, refuser, { connection: ownersConnection });
    if (!warmed) api.release(ownersConnection);
    return answer;
  });
  if (!again.reusedConnection) note("the target closed the connection after the owner's request: the refusal could not share it");
  const third = await step(`${refuser.name} asks a third time, on its own connection`, () => api.stop(jobId, refuser, { connection }));
  const upperCase = await step(`${refuser.name} asks once more, with the job id in upper case`, () => api.stop(jobId.toUpperCase(), refuser, { connection }));
  return [refusal, again, third, upperCase];
}

/** askToStop's answers judged: the first three by the test's own check, the one in upper case refused. */
export const refusalCheck = (answers: Answer[], refusedCheck: (answers: Answer[]) => CheckCall): CheckCall =>
  answers.length === 1 ? refusedCheck(answers) : judge.all([refusedCheck(answers.slice(0, 3)), judge.refused(answers.slice(3))]);

type Connection = ReturnType<Client['connection']>;
/** The most a session is held longer when a proof could not tell: twice the longest stop a refusal's hold is sized from. */
const MOST_LONGER_MS = 4_000;

/**
 * A survival proof that could not tell because the exchanges took as long as the hold (a busy
 * runner, a slow answer) is asked once more, the whole test over, on a fresh session held longer
 * before its refusal by four times the slow stop: where the budget has sessions beyond what the
 * rules' own tests need (the sequences rule's share).
 */
/** How much longer to hold where the exchanges took as long as the hold: four times the slow one's, at most MOST_LONGER_MS. */
export const longerFor = (slow: Answer) => Math.min(MOST_LONGER_MS, 4 * Math.round(slow.receivedAt - slow.sentAt));

export function longerIfTooSlow(
  { api, sessions, settings }: Pick<RefusalContext, 'api' | 'sessions' | 'settings'>,
  proof: CheckCall,
  slow: Answer,
): number | undefined {
  const judged = judgedOf(proof);
  if (!judged || !('tooSlow' in judged) || !sessions.spare()) return undefined;
  const longerMs = longerFor(slow);
  extendTimeout(2 * (longerMs + holdBeforeMs(api, settings, slow) + settings.requestTimeoutMs));
  note(`the survival proof could not tell, the exchanges took as long as the hold: all of it again, on a fresh session held ${longerMs} ms longer`);
  return longerMs;
}

/** A check that fails, or cannot tell (`tooSlow`: the exchanges took as long as the hold); undefined where it holds or finds the declared behaviour. */
export type Judged = { fails: string } | { untold: string; tooSlow?: true };

export function judgedOf(call: CheckCall): Judged | undefined {
  try {
    const verdict = runCheck(call);
    return verdict ? { untold: verdict.notVerifiable, ...(verdict.tooSlow ? { tooSlow: true as const } : {}) } : undefined;
  } catch (error) {
    return error instanceof DeclaredBehaviour ? undefined : { fails: (error as Error).message.split('\n')[0] };
  }
}
