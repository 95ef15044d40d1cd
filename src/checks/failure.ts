/**
 * A named check that did not hold, typed: which check of the test, which judge, what it expected
 * and what it got, and the answers it judged. The check fixture attaches it to the report, and the
 * test's reproduction (src/reproduction/) runs the same call again.
 */
import { plain } from '../config/errors';
import { redact } from '../http/redact';
import type { ComposedReproduction, NamedCall } from './checks';

export interface AnswerSeen {
  method: string;
  path: string;
  status: number;
}

export interface Failure {
  /** The check's name in the test's catalogue entry (src/config/rules.ts). */
  check: string;
  /** The named check that judged (src/domain/named-checks.ts). */
  judge: string;
  /** `declared`: the target did what its known-deviations file says it does instead. */
  outcome: 'failed' | 'declared';
  message: string;
  expected?: unknown;
  actual?: unknown;
  answers: AnswerSeen[];
  /** The named check's call, run again by the reproduction on the test's own trace... */
  call?: NamedCall;
  /** ...or the reproduction composed for a check that judges the whole run. */
  composed?: ComposedReproduction;
}

const isAnswer = (value: unknown): value is AnswerSeen & { sentAt: number } =>
  typeof value === 'object' && value !== null && typeof (value as AnswerSeen).status === 'number' && typeof (value as { sentAt?: unknown }).sentAt === 'number';

/** The answers among a call's arguments, in order, each once. */
export function answersOf(args: readonly unknown[]): AnswerSeen[] {
  const found = new Set<AnswerSeen>();
  const visit = (value: unknown) => {
    if (isAnswer(value)) found.add(value);
    else if (Array.isArray(value)) value.forEach(visit);
    // A call of several named checks as one: their answers.
    else if (value && typeof value === 'object' && Array.isArray((value as NamedCall).args)) (value as NamedCall).args.forEach(visit);
  };
  args.forEach(visit);
  return [...found].map(({ method, path, status }) => ({ method, path, status }));
}

export function failureOf(check: string, call: NamedCall | undefined, error: unknown, composed?: ComposedReproduction): Failure {
  const matcher = (error as { matcherResult?: { expected?: unknown; actual?: unknown } })?.matcherResult;
  const declared = (error as Error)?.name === 'DeclaredBehaviour';
  return {
    check,
    judge: call?.judge ?? composed?.checks[0]?.judge ?? check,
    outcome: declared ? 'declared' : 'failed',
    message: plain(redact(String((error as Error)?.message ?? error))),
    ...(matcher && 'expected' in matcher ? { expected: matcher.expected } : {}),
    ...(matcher && 'actual' in matcher ? { actual: matcher.actual } : {}),
    answers: call ? answersOf(call.args) : [],
    ...(call ? { call } : {}),
    ...(composed ? { composed } : {}),
  };
}
