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

import type { NamedCall } from '../checks/checks';
import { expect } from '../checks/expect';
import type { SchemaName } from '../checks/schemas';
import type { DeclaredSchemeWord } from '../config/deviations';
import { DeclaredBehaviour } from '../config/errors';
import { type Answer, JSON_CONTENT_TYPE, JSON_ERROR_CONTENT_TYPE, summary } from './answer';
import { expectCreditsFor, expectDurationWithin, expectSurvived, measuredInterval, type Tolerances } from './billing';
import { expectRefusal, expectRevealsNothing, expectSchemeRefusal, ownerValuesOf } from './refusal-checks';
import { RUN_JUDGES } from './run-judges';
import { describeSettlement, distinctSettlements, isNewCharge, settlementOf, settlingStop } from './settlements';

export { countStatuses, peakPerSecond } from './run-judges';

type Verdict = void | { notVerifiable: string; tooSlow?: true };
const listed = (answers: Answer[]) => answers.map(summary).join('\n');

const JUDGES = {
  /** The answer's status is `expected`, or one of them. */
  status(answer: Answer, expected: number | readonly number[], why?: string): Verdict {
    const message = why ? `${why}: ${summary(answer)}` : summary(answer);
    if (typeof expected === 'number') expect(answer.status, message).toBe(expected);
    else expect(answer.status, message).toBeOneOf(expected);
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
    // A keyless tier's 429 has no body the specification fixes.
    if (answer.status === 429) return { notVerifiable: 'the request was answered 429 (rate limited), not with a refusal whose body could be checked' };
    expect(answer.status, summary(answer)).toBeGreaterThanOrEqual(400);
    expect(answer.headers['content-type'], `Content-Type of the ${answer.status} answer`).toMatch(JSON_ERROR_CONTENT_TYPE);
    expect(answer.body).toMatchSchema('error');
  },
  /** Each answer is a refusal: `status` when given, else a 4xx that does not say success. */
  refused(answers: Answer[], status?: number): Verdict {
    for (const answer of answers) expectRefusal(answer, status);
  },
  /** The owner's key under another scheme word: refused, or taken as the owner's where the target declares it. */
  schemeRefused(answers: Answer[], declaredSchemeWord?: DeclaredSchemeWord): Verdict {
    for (const answer of answers) expectSchemeRefusal(answer, { declaredSchemeWord });
  },
  /** No refusal carries a stop result's field or a value of the owner's answers (`sources`) or team. */
  revealsNothing(answers: Answer[], sources: Answer[], ownerTeam: string[], askedJobId: string): Verdict {
    const ownerValues = ownerValuesOf(sources, ownerTeam, askedJobId);
    for (const answer of answers) expectRevealsNothing(answer, ownerValues);
  },
  /** sessionDurationMs lies in the interval measured from the interact that opened the session to the stop. */
  duration(stop: Answer, opened: Answer, tolerances: Tolerances): Verdict {
    expectDurationWithin(stop.body, measuredInterval({ created: opened }, stop), tolerances);
  },
  /** creditsBilled is 2 per minute, prorated by the second, of that duration. */
  credits(stop: Answer | Answer[], opened: Answer, tolerances: Parameters<typeof expectCreditsFor>[2]): Verdict {
    const settled = settlingStop(stop);
    // A stop result may leave its charge out: then the account's move around the stop is held to the duration, where the run could read it.
    const charged = settled.charged;
    if (settled.body?.creditsBilled === undefined && !(charged && 'credits' in charged)) {
      const why = charged && 'unknown' in charged ? `, and the account could not price it: ${charged.unknown}` : ', and no reading of the account priced it';
      return { notVerifiable: `the stop result has no creditsBilled${why}: billing cannot be checked against the measured duration` };
    }
    expectCreditsFor(settled.body, measuredInterval({ created: opened }, settled), tolerances, charged);
  },
  /** The owner's stop after a refusal: 200, and a duration or charge only a session that lived through the refusal could have. */
  survived(stop: Answer, opened: Answer, refusal: Answer, tolerances: Tolerances): Verdict {
    // The request refused in the run got through this time (a burst's stop under a limit not yet reached): nothing to prove.
    if (refusal.status < 300) return { notVerifiable: `the request refused in the run was not refused this time: ${summary(refusal)}` };
    expect(stop.status, `the session must still be running: ${summary(stop)}`).toBe(200);
    expect(stop.body).toMatchSchema('stop-result');
    const proof = expectSurvived(stop, { created: opened }, refusal, tolerances);
    if (proof.notVerifiable) return { notVerifiable: proof.notVerifiable, ...(proof.tooSlow ? { tooSlow: true as const } : {}) };
    // Proven, with a duration the target's declared clock accounts for: its declared behaviour.
    if (proof.declared) throw new DeclaredBehaviour(proof.declared.message, proof.declared.reason);
  },
  /** The owner's interact after a refusal answers 200: the session is still usable. */
  usable(used: Answer): Verdict {
    expect(used.status, `the session must still be usable after the refusal: ${summary(used)}`).toBe(200);
  },
  /** A request taken as the owner's stopped the session: the owner's stop finds it settled, and settles nothing. */
  settledBy(stop: Answer, first: Answer): Verdict {
    expect(stop.status, `the session was stopped by the request taken as the owner's: ${summary(stop)}`).toBeOneOf([200, 404]);
    expect(isNewCharge(stop, first), `a stopped session is never settled again: ${summary(stop)}`).toBe(false);
  },
  /** A later stop repeats the first stop's settlement, or settles nothing. */
  noSecondCharge(second: Answer, first: Answer): Verdict {
    expect(
      isNewCharge(second, first),
      `the second stop must not settle the session again (the first settled ${describeSettlement(settlementOf(first) ?? { credits: 0 })}): ${summary(second)}`,
    ).toBe(false);
  },
  /** Of stops sent at once, one answers 200. */
  oneSucceeds(stops: Answer[]): Verdict {
    expect(stops.filter((stop) => stop.status === 200).length, `one stop must succeed:\n${listed(stops)}`).toBeGreaterThanOrEqual(1);
  },
  /** Of stops sent at once, each answers 200 or 404. */
  stopAnswers(stops: Answer[]): Verdict {
    expect(
      stops.every((stop) => stop.status === 200 || stop.status === 404),
      `each answer is 200 or 404:\n${listed(stops)}`,
    ).toBe(true);
  },
  /** Stops sent at once report one settlement at most. */
  settledOnce(stops: Answer[]): Verdict {
    expect(distinctSettlements(stops).length, `the two answers may report one settlement, never two different ones:\n${listed(stops)}`).toBeLessThanOrEqual(1);
  },
  /** Interacts sent at once on a job without a session: one opens it (200), the others answer 200 too or are refused (4xx). */
  opensOne(opens: Answer[]): Verdict {
    if (opens.every((open) => open.status === 429))
      return { notVerifiable: `every interact sent at once was refused 429 (the team's limit or cap was full): ${summary(opens[0])}` };
    expect(
      opens.some((open) => open.status === 200),
      `one of the interacts sent at once opens the session:\n${listed(opens)}`,
    ).toBe(true);
    expect(
      opens.every((open) => open.status === 200 || (open.status >= 400 && open.status < 500)),
      `each answers 200, or is refused (4xx):\n${listed(opens)}`,
    ).toBe(true);
  },
  /** The opens left one session: once it is stopped, a second stop finds nothing to settle. */
  oneSession(again: Answer, stop: Answer): Verdict {
    expect(again.status, `interacts sent at once must open one session, which the first stop ended: ${summary(again)}`).toBeOneOf([200, 404]);
    expect(isNewCharge(again, stop), `a second session opened beside the first, and this stop settled it: ${summary(again)}`).toBe(false);
  },
  /** After stopping what the opens left, the team opens a session under its cap: nothing they opened holds a slot. */
  roomLeft(opened: Answer[], free: number, opens: number): Verdict {
    expect(
      opened.filter((open) => open.status === 200).length,
      `after ${opens} interacts sent at once on one job and the owner's stop of it, the team must have its slots free again (a session nobody can stop would hold one): ${opened.length} interacts on new jobs at once, ${free} of which must open:\n${opened.map(summary).join('\n')}`,
    ).toBeGreaterThanOrEqual(free);
  },
  /** One more session than the cap the target states, opened at once: the one beyond it is refused (429). */
  capKept(opened: Answer[], cap: number): Verdict {
    expect(
      opened.filter((open) => open.status === 200).length,
      `${opened.length} interacts at once on new jobs with nothing else of the team live, under a cap of ${cap} the target states: the one beyond it must be refused (429):\n${opened.map(summary).join('\n')}`,
    ).toBeLessThanOrEqual(cap);
  },
  /** While the owner holds every slot of its cap, another team, which holds none, opens a session: a cap counts its own team's. */
  capsApart(theirs: Answer, cap: number, team: string): Verdict {
    expect(
      theirs.status,
      `while the owner team held the ${cap} live sessions its cap allows, the ${team}, which held none, was refused (${summary(theirs)}): the cap counts other teams' sessions`,
    ).toBe(200);
  },
  /**
   * A cap held during the whole run: the owner never had more live at once than `cap`, which `shownBy`
   * says how the run knows (its words, or sessions opened one after the other until one was refused).
   */
  capKeptAllRun(peak: { count: number; at?: number; jobs: string[] }, cap: number, shownBy: string): Verdict {
    expect(
      peak.count,
      `${shownBy}, yet the owner held ${peak.count} live at once during the run (at ${new Date(peak.at ?? 0).toISOString()}, each between its interact's 200 and its stop: ${peak.jobs.join(', ')}): interacts sent at the same moment got past the cap`,
    ).toBeLessThanOrEqual(cap);
  },
  /** After refusals, a stopped session is still stopped and settled once. */
  stillStopped(again: Answer, stop: Answer): Verdict {
    expect(again.status, `the refusals must not have brought the session back: ${summary(again)}`).toBeOneOf([200, 404]);
    expect(isNewCharge(again, stop), `a stopped session is never settled again: ${summary(again)}`).toBe(false);
  },
  /** An interact on a stopped session opens a new one (200) or is refused (4xx). */
  interactAfterStop(again: Answer): Verdict {
    expect(
      again.status === 200 || (again.status >= 400 && again.status < 500),
      `a new session (200) or a refusal (4xx; the hosted service answers 410): ${summary(again)}`,
    ).toBe(true);
  },
  /** The stop after that interact: it ends the new session, or finds nothing to settle. */
  nothingUnannounced(again: Answer, last: Answer, stop: Answer): Verdict {
    if (again.status === 200) return expect(last.status, `the interact answered 200, so a new session runs and this stop ends it: ${summary(last)}`).toBe(200);
    expect(last.status, `the refused interact must have opened nothing: ${summary(last)}`).toBeOneOf([200, 404]);
    expect(
      isNewCharge(last, stop),
      `the refused interact (${again.status}) opened a session nobody asked for, and this stop settled it: ${summary(last)}`,
    ).toBe(false);
  },
  ...RUN_JUDGES,
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
