/**
 * What a refused request may and may not do. The shape every refusal rule shares: the session is
 * held before the refusal (so that a refusal that restarts its clock shows), refused, held again
 * (so that a refusal that ended it shows), and the owner's stop must then prove it ran on.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { clockStepMs, expectSurvived } from './billing';
import { isNewCharge } from './settlements';
import { notVerifiable, type Check } from '../checks/checks';
import { note, step } from '../checks/recorder';
import { DeclaredBehaviour } from '../config/errors';
import { summary, type Answer, type Client } from './client';
import { expect } from '../checks/expect';
import type { Session, Sessions } from './sessions';
import type { Settings } from '../config/settings';
import type { Identity } from './target';

/**
 * How long the session is held before a refusal and after it: large against
 * DURATION_TOLERANCE_MS, against how long the target takes to answer (`exchangeMs`: the session's
 * own interact) and against two steps of the target's declared clock (the whole session and a
 * restarted one may each be off by one), so that a clock restarted or a session ended at the
 * refusal is off by more than the measurement can hide. A slow target, or a busy runner, lengthens it.
 */
export const refusalHoldMs = (settings: Pick<Settings, 'durationToleranceMs'> & Partial<Pick<Settings, 'declaredClock'>>, exchangeMs = 0) => {
  const step = clockStepMs(settings);
  return Math.max(100, 5 * settings.durationToleranceMs, 2 * (settings.durationToleranceMs + step) + 4 * exchangeMs + step / 4);
};

/** The fields of a stop result: a refusal must never carry them. */
const STOP_RESULT_FIELDS = ['sessionDurationMs', 'creditsBilled'];

export function expectRefusal(answer: Answer, status?: number): void {
  if (status !== undefined) {
    expect(answer.status, summary(answer)).toBe(status);
    return;
  }
  expect(answer.status, `a refusal is a 4xx: ${summary(answer)}`).toBeGreaterThanOrEqual(400);
  expect(answer.status, `a refusal is a 4xx: ${summary(answer)}`).toBeLessThan(500);
  expect(answer.body?.success, `a refusal never says success: ${summary(answer)}`).not.toBe(true);
}

/**
 * The owner's key under another scheme word (`Basic`, `Token`) is refused; where the target declares
 * that it ignores the scheme word, it must instead stop the session as the owner's key does (200
 * with a stop result): that is its declared behaviour. Refused there, the declaration is stale.
 */
export function expectSchemeRefusal(answer: Answer, settings: Pick<Settings, 'declaredSchemeWord'>): void {
  const declared = settings.declaredSchemeWord;
  if (!declared) return expectRefusal(answer);
  const accepted = answer.status === 200 && answer.body?.success === true;
  const why = `declared: the key is taken after any scheme word, so this stop acts as the owner's (200 with a stop result): ${summary(answer)}`;
  expect(accepted ? 'accepted' : answer.status >= 400 && answer.status < 500 ? 'refused: remove the scheme-word declaration' : 'neither', why).toBe('accepted');
  expect(answer.body, why).toMatchSchema('stop-result');
  throw new DeclaredBehaviour(`${why}; the specification asks for a 4xx`, declared.reason);
}

/** Names of stop-result fields anywhere in a JSON body, or mentioned in a body that is not JSON. */
function stopResultFieldsIn(answer: Answer): string[] {
  if (answer.body === undefined) return STOP_RESULT_FIELDS.filter((field) => answer.text.includes(field));
  const found = new Set<string>();
  const visit = (node: unknown, depth: number) => {
    if (!node || typeof node !== 'object' || depth > 8) return;
    for (const [key, value] of Object.entries(node)) {
      if (STOP_RESULT_FIELDS.includes(key)) found.add(key);
      visit(value, depth + 1);
    }
  };
  visit(answer.body, 0);
  return [...found];
}

/**
 * A refusal carries an error, never the session's data: no stop-result field, and none of the
 * values that belong to the owner (its team, its other jobs, what its interact calls returned).
 */
export function expectRevealsNothing(answer: Answer, ownerValues: string[]): void {
  expect(stopResultFieldsIn(answer), `a refusal must not carry the session's billing: ${summary(answer)}`).toEqual([]);
  const leaked = ownerValues.filter((value) => value.length >= 6 && answer.text.includes(value));
  expect(leaked, `a refusal must not carry what belongs to the owner: ${summary(answer)}`).toEqual([]);
}

/**
 * String values of the owner's answers long enough to be its own (ids, URLs), for
 * `expectRevealsNothing`; values holding the refused request's own job id are left out, since
 * an error may quote the path it was asked about.
 */
export function ownerValuesOf(answers: Answer[], extra: string[], askedJobId: string): string[] {
  const values = new Set(extra);
  const visit = (node: unknown, depth: number) => {
    if (typeof node === 'string' && node.length >= 12 && !node.includes(askedJobId)) values.add(node);
    else if (node && typeof node === 'object' && depth < 8) Object.values(node).forEach((value) => visit(value, depth + 1));
  };
  answers.forEach((answer) => visit(answer.body, 0));
  return [...values];
}

interface RefusalContext {
  api: Client;
  sessions: Sessions;
  session: Session;
  check: Check;
  settings: Settings;
  owner: Identity;
}

/**
 * Hold, refuse, hold, and have the owner stop: the refusal must be refused (`refused` check, by
 * `expectRefused`) and change nothing (`survives` check: 200 and the whole session's duration).
 * Identities belong to requests, not connections: the refuser asks on a kept-alive connection of
 * its own, again on one that has just carried the owner's valid request (a stop of an unknown
 * job), and a third time on its own (a lockout counter that acts at the third refusal is a common
 * guard); then with the job id in upper case (a UUID's case means nothing: a target that finds the
 * job whatever the case must still know whose it is); the owner's stop then goes on the refuser's
 * connection. With `interactAfter`, the owner
 * also uses the session after the refusal, as clients do.
 */
export async function refuseThenOwnerStops(context: RefusalContext, refuser: Identity, expectRefused: (answer: Answer) => void, { interactAfter = false } = {}): Promise<void> {
  const { api, sessions, session, check, settings, owner } = context;
  const holdMs = Math.round(refusalHoldMs(settings, session.created.receivedAt - session.created.sentAt));
  await step(`hold the session ${holdMs} ms`, () => sleep(holdMs - (performance.now() - session.created.receivedAt), undefined, { signal: api.signal }));
  const refusersConnection = api.connection();
  const refusal = await step(`${refuser.name} asks to stop the session, on a connection of its own`, () => api.stop(session.jobId, refuser, { connection: refusersConnection }));
  // The owner's key under a scheme word its file declares ignored is the owner's: no refusal to repeat.
  const takenAsOwner = refuser.team !== undefined && refuser.team === owner.team;
  const again = takenAsOwner
    ? undefined
    : await step(`${refuser.name} asks again, on a connection that has just carried the owner's valid request`, async () => {
        const ownersConnection = api.connection();
        await api.stop(randomUUID(), owner, { connection: ownersConnection });
        const answer = await api.stop(session.jobId, refuser, { connection: ownersConnection });
        api.release(ownersConnection);
        return answer;
      });
  if (again && !again.reusedConnection) note("the target closed the connection after the owner's request: the refusal could not share it");
  const third = takenAsOwner
    ? undefined
    : await step(`${refuser.name} asks a third time, on its own connection`, () => api.stop(session.jobId, refuser, { connection: refusersConnection }));
  const upperCase = takenAsOwner
    ? undefined
    : await step(`${refuser.name} asks once more, with the job id in upper case`, () => api.stop(session.jobId.toUpperCase(), refuser, { connection: refusersConnection }));
  await check('refused', () => {
    expectRefused(refusal);
    if (again) expectRefused(again);
    if (third) expectRefused(third);
    // The same job (refused as the others) or none (404): a refusal either way.
    if (upperCase) expectRefusal(upperCase);
  });
  if (interactAfter) {
    const used = await step('the owner interacts with the session', () => sessions.interact(session));
    // A session the refusal ended shows here too (the hosted service answers 410 for a destroyed one).
    if (used.status !== 200) await check('survives', () => expect(used.status, `the session must still be usable after the refusal: ${summary(used)}`).toBe(200));
  }
  await step(`hold ${holdMs} ms more`, () => sleep(holdMs, undefined, { signal: api.signal }));
  const stop = await step("the owner stops the session, on the connection the refuser's request came on", () => api.stop(session.jobId, owner, { connection: refusersConnection }));
  if (takenAsOwner && refusal.status === 200) {
    // Taken as the owner's key, as the target's file declares: that request stopped the session, and this stop must find it settled.
    await check('survives', () => {
      expect([200, 404], `the session was stopped by the request taken as the owner's: ${summary(stop)}`).toContain(stop.status);
      expect(isNewCharge(stop, refusal), `a stopped session is never settled again: ${summary(stop)}`).toBe(false);
    });
    api.release(refusersConnection);
    return;
  }
  api.release(refusersConnection);
  await checkSurvived(check, 'survives', stop, session, refusal, settings);
}

/**
 * The owner's stop after a refusal, as check `name`: 200 with a stop result, and proof that the
 * session lived through the refusal; where no proof is possible, the test is not verifiable.
 */
export async function checkSurvived(check: Check, name: string, stop: Answer, session: Session, refusal: Answer, settings: Settings): Promise<void> {
  let proof: ReturnType<typeof expectSurvived> = {};
  await check(name, () => {
    expect(stop.status, `the session must still be running: ${summary(stop)}`).toBe(200);
    expect(stop.body).toMatchSchema('stop-result');
    proof = expectSurvived(stop, session, refusal, settings);
    // Proven, with a duration the target's declared clock accounts for: its declared behaviour.
    if (proof.declared && !proof.notVerifiable) throw new DeclaredBehaviour(proof.declared.message, proof.declared.reason);
  });
  if (proof.notVerifiable) notVerifiable(proof.notVerifiable);
}
