/**
 * The named checks: every judgement a test passes on the target's answers, as a function of those
 * answers and plain bounds. A spec calls one by name, `check('status', judge.status(stop, 404))`:
 * the call is data (the judge's name and its arguments), so the check fixture can run it, report
 * its typed failure, and write it into the test's reproduction, which runs the same judge with the
 * same bounds on the answers it gets again (src/reproduction/).
 *
 * A judge throws an assertion error when the answers break the rule, a DeclaredBehaviour when they
 * do what the target's known-deviations file declares instead, and returns `{ notVerifiable }`
 * when they cannot establish the fact either way.
 */
import { expectCreditsFor, expectDurationWithin, expectSurvived, measuredInterval, type Tolerances } from './billing';
import { JSON_CONTENT_TYPE, JSON_ERROR_CONTENT_TYPE, summary, type Answer } from './answer';
import { describeSettlement, distinctSettlements, isNewCharge, settlementOf, type Settled } from './settlements';
import { DeclaredBehaviour, RunError } from '../config/errors';
import { CREDIT_USAGE_PATH, judgeAccount, judgeAlone } from './account';
import type { NamedCall } from '../checks/checks';
import type { SchemaName } from '../checks/schemas';
import type { DeclaredSchemeWord } from '../config/deviations';
import type { Settings } from '../config/settings';
import { expect } from '../checks/expect';

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

/** The most answers that arrived within any one second of the burst. */
export function peakPerSecond(answers: Answer[]): number {
  const times = answers.map((answer) => answer.receivedAt).sort((a, b) => a - b);
  let peak = 0;
  for (let last = 0, first = 0; last < times.length; last++) {
    while (times[last] - times[first] >= 1000) first++;
    peak = Math.max(peak, last - first + 1);
  }
  return peak;
}

/** How many answers had each status. */
export function countStatuses(answers: Answer[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const answer of answers) counts[answer.status] = (counts[answer.status] ?? 0) + 1;
  return counts;
}

type Verdict = void | { notVerifiable: string };
const listed = (answers: Answer[]) => answers.map(summary).join('\n');

const JUDGES = {
  /** The answer's status is `expected`, or one of them. */
  status(answer: Answer, expected: number | readonly number[], why?: string): Verdict {
    const message = why ? `${why}: ${summary(answer)}` : summary(answer);
    if (typeof expected === 'number') expect(answer.status, message).toBe(expected);
    else expect(expected, message).toContain(answer.status);
  },
  /** A 4xx, never a 5xx. */
  clientError(answer: Answer): Verdict {
    expect(answer.status, summary(answer)).toBeGreaterThanOrEqual(400);
    expect(answer.status, summary(answer)).toBeLessThan(500);
  },
  /** The stop result's Content-Type is application/json. */
  contentType(answer: Answer): Verdict {
    expect(answer.headers['content-type'], `Content-Type of the ${answer.status} answer`).toMatch(JSON_CONTENT_TYPE);
  },
  /** The body matches schemas/<name>.json (and says success true, when asked). */
  schema(answer: Answer, name: SchemaName, successTrue?: boolean): Verdict {
    expect(answer.body).toMatchSchema(name);
    if (successTrue) expect(answer.body?.success, 'success').toBe(true);
  },
  /** 200 with a stop result. */
  stopped(answer: Answer): Verdict {
    expect(answer.status, summary(answer)).toBe(200);
    expect(answer.body).toMatchSchema('stop-result');
  },
  /** A failure answer: a 4xx or 5xx, JSON, `{success: false, error}`. */
  jsonError(answer: Answer): Verdict {
    expect(answer.status, summary(answer)).toBeGreaterThanOrEqual(400);
    expect(answer.headers['content-type'], `Content-Type of the ${answer.status} answer`).toMatch(JSON_ERROR_CONTENT_TYPE);
    expect(answer.body).toMatchSchema('error');
  },
  /** Each answer is a refusal: `status` when given, else a 4xx that does not say success. */
  refused(answers: Answer[], status?: number): Verdict {
    answers.forEach((answer) => expectRefusal(answer, status));
  },
  /** The owner's key under another scheme word: refused, or taken as the owner's where the target declares it. */
  schemeRefused(answers: Answer[], declaredSchemeWord?: DeclaredSchemeWord): Verdict {
    answers.forEach((answer) => expectSchemeRefusal(answer, { declaredSchemeWord }));
  },
  /** No refusal carries a stop result's field or a value of the owner's answers (`sources`) or team. */
  revealsNothing(answers: Answer[], sources: Answer[], ownerTeam: string[], askedJobId: string): Verdict {
    const ownerValues = ownerValuesOf(sources, ownerTeam, askedJobId);
    answers.forEach((answer) => expectRevealsNothing(answer, ownerValues));
  },
  /** sessionDurationMs lies in the interval measured from the interact that opened the session to the stop. */
  duration(stop: Answer, opened: Answer, tolerances: Tolerances): Verdict {
    expectDurationWithin(stop.body, measuredInterval({ created: opened }, stop), tolerances);
  },
  /** creditsBilled is 2 per minute, prorated by the second, of that duration. */
  credits(stop: Answer, opened: Answer, tolerances: Parameters<typeof expectCreditsFor>[2]): Verdict {
    expectCreditsFor(stop.body, measuredInterval({ created: opened }, stop), tolerances);
  },
  /** The owner's stop after a refusal: 200, and a duration or charge only a session that lived through the refusal could have. */
  survived(stop: Answer, opened: Answer, refusal: Answer, tolerances: Tolerances): Verdict {
    expect(stop.status, `the session must still be running: ${summary(stop)}`).toBe(200);
    expect(stop.body).toMatchSchema('stop-result');
    const proof = expectSurvived(stop, { created: opened }, refusal, tolerances);
    if (proof.notVerifiable) return { notVerifiable: proof.notVerifiable };
    // Proven, with a duration the target's declared clock accounts for: its declared behaviour.
    if (proof.declared) throw new DeclaredBehaviour(proof.declared.message, proof.declared.reason);
  },
  /** The owner's interact after a refusal answers 200: the session is still usable. */
  usable(used: Answer): Verdict {
    expect(used.status, `the session must still be usable after the refusal: ${summary(used)}`).toBe(200);
  },
  /** A request taken as the owner's stopped the session: the owner's stop finds it settled, and settles nothing. */
  settledBy(stop: Answer, first: Answer): Verdict {
    expect([200, 404], `the session was stopped by the request taken as the owner's: ${summary(stop)}`).toContain(stop.status);
    expect(isNewCharge(stop, first), `a stopped session is never settled again: ${summary(stop)}`).toBe(false);
  },
  /** A later stop repeats the first stop's settlement, or settles nothing. */
  noSecondCharge(second: Answer, first: Answer): Verdict {
    expect(isNewCharge(second, first), `the second stop must not settle the session again (the first settled ${describeSettlement(settlementOf(first) ?? { credits: 0 })}): ${summary(second)}`).toBe(false);
  },
  /** Of stops sent at once, one answers 200. */
  oneSucceeds(stops: Answer[]): Verdict {
    expect(stops.filter((stop) => stop.status === 200).length, `one stop must succeed:\n${listed(stops)}`).toBeGreaterThanOrEqual(1);
  },
  /** Of stops sent at once, each answers 200 or 404. */
  stopAnswers(stops: Answer[]): Verdict {
    expect(stops.every((stop) => stop.status === 200 || stop.status === 404), `each answer is 200 or 404:\n${listed(stops)}`).toBe(true);
  },
  /** Stops sent at once report one settlement at most. */
  settledOnce(stops: Answer[]): Verdict {
    expect(distinctSettlements(stops).length, `the two answers may report one settlement, never two different ones:\n${listed(stops)}`).toBeLessThanOrEqual(1);
  },
  /** After refusals, a stopped session is still stopped and settled once. */
  stillStopped(again: Answer, stop: Answer): Verdict {
    expect([200, 404], `the refusals must not have brought the session back: ${summary(again)}`).toContain(again.status);
    expect(isNewCharge(again, stop), `a stopped session is never settled again: ${summary(again)}`).toBe(false);
  },
  /** An interact on a stopped session opens a new one (200) or is refused (4xx). */
  interactAfterStop(again: Answer): Verdict {
    expect(again.status === 200 || (again.status >= 400 && again.status < 500), `a new session (200) or a refusal (4xx; the hosted service answers 410): ${summary(again)}`).toBe(true);
  },
  /** The stop after that interact: it ends the new session, or finds nothing to settle. */
  nothingUnannounced(again: Answer, last: Answer, stop: Answer): Verdict {
    if (again.status === 200) return expect(last.status, `the interact answered 200, so a new session runs and this stop ends it: ${summary(last)}`).toBe(200);
    expect([200, 404], `the refused interact must have opened nothing: ${summary(last)}`).toContain(last.status);
    expect(isNewCharge(last, stop), `the refused interact (${again.status}) opened a session nobody asked for, and this stop settled it: ${summary(last)}`).toBe(false);
  },
  /** Every answer of a burst of stops of unknown jobs is 404 (no such job) or 429. */
  burstAnswers(answers: Answer[]): Verdict {
    const unexpected = answers.filter((answer) => answer.status !== 404 && answer.status !== 429);
    expect(unexpected.map(summary).slice(0, 5), `every answer is 404 (no such job) or 429; statuses: ${JSON.stringify(countStatuses(answers))}`).toEqual([]);
  },
  /** A burst faster than BURST_PROOF_RATE meets a 429; a slower one cannot tell a limit from none (an error of the run). */
  limited(answers: Answer[], burstMs: number, burstProofRate: number): Verdict {
    const counts = countStatuses(answers);
    if (counts[429]) return;
    const peak = peakPerSecond(answers);
    const reached = `no 429 in ${answers.length} requests over ${(burstMs / 1000).toFixed(1)} s, at up to ${peak} answered within one second`;
    // Too slow to tell: the client, not the target, is what this run measured.
    if (peak < burstProofRate) {
      throw new RunError(
        `${reached}: below BURST_PROOF_RATE (${burstProofRate} a second), so a limit above that rate cannot be told from no limit. ` +
          'The client could not send faster (a busy machine, or a slow target): run again where it can, raise BURST_CONCURRENCY, or set BURST_PROOF_RATE just above your plan\'s limit.',
      );
    }
    expect(counts[429] ?? 0, `${reached}: at least BURST_PROOF_RATE (${burstProofRate} a second), more than a plan allows; the target does not rate-limit (for a plan that allows more, raise BURST_PROOF_RATE and BURST_REQUESTS). Statuses: ${JSON.stringify(counts)}`).toBeGreaterThan(0);
  },
  /** The stops of live sessions during a burst answer 429, or 200 if they got through; a 429 carries nothing of the session or its team. */
  throttledRevealsNothing(stops: Answer[], who: string, throttled: Answer | undefined, sources: Answer[], teamValues: string[], askedJobId: string): Verdict {
    for (const answer of stops) expect([200, 429], `the ${who}'s stop of its own session during the burst answers 429, or 200 if it got through: ${summary(answer)}`).toContain(answer.status);
    if (throttled) expectRevealsNothing(throttled, ownerValuesOf(sources, teamValues, askedJobId));
  },
  /**
   * Each job whose last interact was refused or failed holds no session: the sweep's stop of it
   * finds nothing (404), or reports a settlement one of the job's earlier stops reported. `interact`:
   * that last interact, where a reproduction sent it again (a 200 then opened a session, as allowed).
   */
  nothingLeft(found: { jobId: string; status?: number; interact?: Answer; stop: Answer; settled: (Settled | Answer)[] }[], jobs: number): Verdict {
    const refused = found.filter(({ interact }) => interact?.status !== 200).map((job) => ({ ...job, status: job.status ?? job.interact?.status }));
    const left = refused.filter(({ stop, settled }) => isNewCharge(stop) && settled.every((one) => isNewCharge(stop, one)));
    const described = left.map(({ jobId, status, stop }) => `${jobId} (its last interact answered ${status ?? 'nothing'}; a session ran there, and its stop settled ${describeSettlement({ credits: stop.body!.creditsBilled, durationMs: stop.body!.sessionDurationMs })})`);
    expect(described, `${jobs} job(s) whose interact was refused or failed must hold no session: a stop finds nothing (404) or reports a settlement already seen`).toEqual([]);
  },
  /**
   * The account moved by exactly what the answers settled and the scrapes cost: read before
   * (`before`), then after (`after`, the last two alike when it held still); the stops' distinct
   * settlements and the scrapes' prices are what it may be charged (judgeAccount in account.ts).
   */
  accountCharged(before: Answer, after: Answer[], scrapes: Answer[], stops: Answer[], settleMs: number, alone = false): Verdict {
    const remaining = (answer: Answer) => answer.body?.data?.remainingCredits as number;
    if (![before, ...after].every((answer) => answer.status === 200 && typeof remaining(answer) === 'number')) return { notVerifiable: `the account could not be read (${CREDIT_USAGE_PATH})` };
    const jobs = new Map<string, Answer[]>();
    for (const stop of stops) jobs.set(stop.path.toLowerCase(), [...(jobs.get(stop.path.toLowerCase()) ?? []), stop]);
    const settlements = [...jobs].map(([jobId, answers]) => ({ jobId, settled: distinctSettlements(answers), reports: answers.filter((answer) => settlementOf(answer)).length }));
    const prices = scrapes.map((scrape) => scrape.body?.data?.metadata?.creditsUsed);
    const spending = { settlements, scrapes: { count: scrapes.length, credits: prices.filter((price) => typeof price === 'number').reduce((sum, price) => sum + price, 0), unpriced: prices.filter((price) => typeof price !== 'number').length } };
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
  /** Several named checks as one, in order: the first that fails decides. */
  all(calls: NamedCall[]): Verdict {
    for (const call of calls) {
      const verdict = runCheck(call);
      if (verdict) return verdict;
    }
  },
} satisfies Record<string, (...args: never[]) => Verdict>;

export type JudgeName = keyof typeof JUDGES;

/** A named check applied to its arguments: what a spec hands to `check`, and what a reproduction runs again. */
export interface CheckCall<J extends JudgeName = JudgeName> {
  judge: J;
  args: Parameters<(typeof JUDGES)[J]>;
}

/** The named checks, by name: `judge.status(answer, 200)` is the call, run by `check`. */
export const judge = Object.fromEntries(Object.keys(JUDGES).map((name) => [name, (...args: unknown[]) => ({ judge: name, args })])) as {
  [J in JudgeName]: (...args: Parameters<(typeof JUDGES)[J]>) => CheckCall<J>;
};

/** Runs a named check: nothing when it holds, `{ notVerifiable }` when it cannot tell; it throws when it fails. */
export function runCheck(call: NamedCall): Verdict {
  const run = JUDGES[call.judge as JudgeName] as (...args: unknown[]) => Verdict;
  if (!run) throw new Error(`no named check "${call.judge}" (src/domain/named-checks.ts)`);
  return run(...call.args);
}
