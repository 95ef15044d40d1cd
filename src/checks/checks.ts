/**
 * Checks: the named assertions of a test, and the only thing a known deviation can excuse.
 *
 * `check(name, call)` (src/playwright/checks.ts) runs one check as a report step: a named check's
 * call (src/domain/named-checks.ts) or, where no named check fits, a body of assertions. When it fails and the target's file
 * declares exactly that deviation (test id, check name, and message pattern if given), the test
 * ends there as a known deviation; a failure anywhere else in the test still fails it. Where the
 * check found what the file states the target does instead (its billing rule, its clock, its
 * scheme word: DeclaredBehaviour), the test goes on, so that its later checks still judge, and
 * ends as a known deviation unless one of them fails. A declared check that passes fails the
 * test, so that the file stays true. `notVerifiable(reason)` ends a
 * test that could not establish its fact either way.
 */
import { annotate, skip } from './recorder';

/** A named check applied to its arguments (src/domain/named-checks.ts), run by the check fixture. */
export interface NamedCall {
  judge: string;
  args: readonly unknown[];
}

/**
 * For a check that judges the whole run, whose requests are other tests': the requests and named
 * checks its reproduction runs instead of the test's own (src/reproduction/compose.ts).
 */
export interface ComposedReproduction {
  steps: readonly unknown[];
  checks: readonly NamedCall[];
}

/** Runs check `name` of the test: a named check's call, or a body of assertions; `reproduce`, where its reproduction is composed. */
export type Check = (name: string, judgement: NamedCall | (() => unknown), reproduce?: () => ComposedReproduction | undefined) => Promise<void>;

/** Ends the test as "not verifiable": the target's answers could not establish the fact either way. */
export function notVerifiable(reason: string): never {
  annotate('not-verifiable', reason);
  return skip(`Not verifiable: ${reason}`);
}
