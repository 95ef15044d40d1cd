/**
 * What a refusal may and may not carry: the assertions the named checks of refusals share with
 * the sequences model.
 */

import { expect } from '../checks/expect';
import { DeclaredBehaviour } from '../config/errors';
import type { Settings } from '../config/settings';
import { quotesOwnerKey } from '../http/redact';
import { type Answer, summary } from './answer';

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
  if (!declared) {
    expectRefusal(answer);
    return;
  }
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
  // A rate limit's words may well name a wait in ms: only a refusal for who is asking must not name a duration or credits.
  if (answer.status !== 429)
    expect(
      BILLING_IN_WORDS.exec(answer.text)?.[0],
      `a refusal must not tell the session's duration or credits, in words either: ${summary(answer)}`,
    ).toBeUndefined();
  // A 401 may quote the credential it was sent, which the authentication tests make from the owner's key; another team's 403 has no reason to hold any of it.
  if (answer.status !== 401)
    expect(quotesOwnerKey(answer.text), `a refusal must not quote the owner's key, or 10 characters of it in a row (redacted here): ${summary(answer)}`).toBe(
      false,
    );
  const leaked = ownerValues.filter((value) => value.length >= 6 && answer.text.includes(value));
  expect(leaked, `a refusal must not carry what belongs to the owner: ${summary(answer)}`).toEqual([]);
}

/** A duration or an amount of credits told in an error's words ("running 408 ms, 0.0333 credits so far"). */
const BILLING_IN_WORDS = /\b\d+(?:\.\d+)?\s*(?:ms|milliseconds|credits?)\b/i;

/**
 * String values of the owner's answers long enough to be its own (ids, URLs), for
 * `expectRevealsNothing`; values holding the refused request's own job id are left out, since
 * an error may quote the path it was asked about.
 */
export function ownerValuesOf(answers: Answer[], extra: string[], askedJobId: string): string[] {
  const values = new Set(extra);
  const visit = (node: unknown, depth: number) => {
    if (typeof node === 'string' && node.length >= 12 && !node.includes(askedJobId)) values.add(node);
    else if (node && typeof node === 'object' && depth < 8) for (const value of Object.values(node)) visit(value, depth + 1);
  };
  for (const answer of answers) visit(answer.body, 0);
  return [...values];
}
