/**
 * From test results to one verdict. Every test of the catalogue gets an outcome; a rule's status
 * is the worst of its tests'; the verdict and its exit code follow:
 *
 *   fail        1  a test failed (with STRICT=1, a test that could not be verified too)
 *   error       2  an error of the run: provisioning, back-off budget, a target that stopped
 *                  answering, a session teardown could not stop, or a run with no result
 *   incomplete  3  every test that ran passed, but some did not run (--grep, a shard, skipped)
 *   pass        0  every test passed, known deviations and (without STRICT) not verifiable allowed
 *
 * Summaries of shards merge into one verdict (`mergeSummaries`, `npm run verdict`).
 */
import { isKnownDeviation, isRunError, plain } from '../config/errors';
import { entryOf, type Level, RULE_IDS, RULES, type RuleId, ruleOf, TEST_IDS, type TestId } from '../config/rules';
import { type Cost, describeCost, mergeCosts } from '../coordination/cost';

export type Outcome = 'pass' | 'fail' | 'error' | 'known deviation' | 'not verifiable' | 'not run';
export type Verdict = 'pass' | 'fail' | 'error' | 'incomplete';

export interface TestRecord {
  id: TestId;
  title?: string;
  level: Level;
  outcome: Outcome;
  note?: string;
  /** What a test that did not pass noted of its run all the same (the sequences rule: what it searched). */
  notes?: string;
  /** A failed test's reproduction, relative to the reports folder, and a curl line where one request shows the fault. */
  reproduction?: string;
  curl?: string;
}

export interface RuleRecord {
  title: string;
  status: Outcome;
  tests: TestRecord[];
}

export interface Summary {
  verdict: Verdict;
  exitCode: number;
  target: string;
  embedded: boolean;
  strict: boolean;
  /** "1/3" when this run was one shard. */
  shard?: string;
  /** Set when the run was filtered (--grep, --grep-invert, files named on the command line). */
  filtered?: boolean;
  durationMs: number;
  /** When the tests began (ms since the epoch): the global setup done, the workers not yet started; durationMs runs from there to the verdict. */
  startedAt?: number;
  /** When the first test started, and from then to the last test's end: what the Allure report shows as the run's duration. */
  firstTestStartedAt?: number;
  testsMs?: number;
  /** Errors of the run outside any test (global setup or teardown, a leak). */
  errors: string[];
  /** The target's cap on each team's live sessions, as the run met it or was told (SESSION_CAP). */
  sessionCap?: { cap: number; how: string };
  /** The rates the run learnt or was told, per team and limiter. */
  rateLimits?: { team: string; limiter: string; limit: number; windowMs: number; from: string }[];
  /** What the run spent on the target (src/coordination/cost.ts). */
  cost?: Cost;
  notRun: TestId[];
  rules: Record<RuleId, RuleRecord>;
}

export const EXIT_CODES: Record<Verdict, number> = { pass: 0, fail: 1, error: 2, incomplete: 3 };

/** Worst first. */
const SEVERITY: Outcome[] = ['fail', 'error', 'known deviation', 'not verifiable', 'pass', 'not run'];

export interface ResultFacts {
  status: 'passed' | 'failed' | 'timedOut' | 'skipped' | 'interrupted';
  errors: string[];
  annotations: { type: string; description?: string }[];
}

/** A failure's message as every report shows it: all its lines, without terminal colours or blank lines. */
export function wholeMessage(message: string | undefined): string | undefined {
  const lines =
    message === undefined
      ? []
      : plain(message)
          .split('\n')
          .map((line) => line.trimEnd())
          .filter((line) => line.trim());
  return lines.length ? lines.join('\n') : undefined;
}

/** A message's lines, each after `prefix`: a failure shown under the line it belongs to. */
export const indented = (message: string, prefix: string) =>
  message
    .split('\n')
    .map((line) => `${prefix}${line}`)
    .join('\n');

/** The outcome of one test result, and the message that explains it. */
export function outcomeOf({ status, errors, annotations }: ResultFacts): { outcome: Outcome; note?: string; notes?: string } {
  const note = (type: string) => annotations.find((annotation) => annotation.type === type)?.description;
  // A note added while the test ran is both the test's and its result's annotation: once each.
  const notes =
    [...new Set(annotations.filter((annotation) => annotation.type === 'note').map((annotation) => annotation.description))].join('; ') || undefined;
  const kept = notes ? { notes } : {};
  if (status === 'skipped') {
    const reason = note('not-verifiable');
    return reason ? { outcome: 'not verifiable', note: reason, ...kept } : { outcome: 'not run', note: note('skip') };
  }
  if (status === 'interrupted') return { outcome: 'error', note: 'the run was interrupted before this test finished', ...kept };
  // A deviation counts only where its check recorded it: an answer's text can never make one.
  const declared = annotations.some((annotation) => annotation.type === 'known-deviation');
  const deviations = declared ? errors.filter(isKnownDeviation) : [];
  const others = errors.filter((message) => !deviations.includes(message));
  const failures = others.filter((message) => !isRunError(message));
  if (failures.length) return { outcome: 'fail', note: wholeMessage(failures[0]), ...kept };
  if (others.length) return { outcome: 'error', note: wholeMessage(others[0]), ...kept };
  if (deviations.length) return { outcome: 'known deviation', note: note('known-deviation'), ...kept };
  return status === 'passed' ? { outcome: 'pass', note: notes } : { outcome: 'fail', note: `ended ${status}`, ...kept };
}

export function emptyRecords(): Map<TestId, TestRecord> {
  return new Map(TEST_IDS.map((id) => [id, { id, level: entryOf(id).level, outcome: 'not run' }]));
}

export function summarise(records: Map<TestId, TestRecord>, facts: Omit<Summary, 'verdict' | 'exitCode' | 'notRun' | 'rules'>): Summary {
  const rules = Object.fromEntries(
    RULE_IDS.map((rule) => {
      const tests = TEST_IDS.filter((id) => ruleOf(id) === rule).map((id) => records.get(id)!);
      const status = SEVERITY.find((outcome) => tests.some((test) => test.outcome === outcome)) ?? 'not run';
      return [rule, { title: RULES[rule].title, status, tests }];
    }),
  ) as Record<RuleId, RuleRecord>;
  const all = [...records.values()];
  const notRun = all.filter((test) => test.outcome === 'not run').map((test) => test.id);
  const has = (outcome: Outcome) => all.some((test) => test.outcome === outcome);
  const verdict: Verdict =
    has('fail') || (facts.strict && has('not verifiable'))
      ? 'fail'
      : has('error') || facts.errors.length || notRun.length === all.length
        ? 'error'
        : notRun.length || facts.filtered || facts.shard
          ? 'incomplete'
          : 'pass';
  return { verdict, exitCode: EXIT_CODES[verdict], ...facts, notRun, rules };
}

/** One verdict from the summaries of several shards (or several runs of parts of the suite). */
export function mergeSummaries(summaries: Summary[]): Summary {
  if (!summaries.length) throw new Error('no summaries to merge');
  const targets = new Set(summaries.map((summary) => summary.target));
  const errors = summaries.flatMap((summary) => summary.errors);
  if (targets.size > 1) errors.push(`the summaries are of different targets: ${[...targets].join(', ')}`);
  const records = emptyRecords();
  for (const summary of summaries) {
    for (const rule of Object.values(summary.rules)) {
      for (const test of rule.tests) {
        const known = records.get(test.id);
        if (!known) continue;
        if (known.outcome === 'not run' || SEVERITY.indexOf(test.outcome) < SEVERITY.indexOf(known.outcome))
          records.set(test.id, { ...test, level: known.level });
      }
    }
  }
  return summarise(records, {
    target: [...targets].join(', '),
    embedded: summaries.every((summary) => summary.embedded),
    strict: summaries.some((summary) => summary.strict),
    durationMs: Math.max(...summaries.map((summary) => summary.durationMs)),
    ...testsSpan(summaries),
    errors,
    sessionCap: summaries
      .map((summary) => summary.sessionCap)
      .filter((cap) => cap !== undefined)
      .sort((a, b) => a!.cap - b!.cap)[0],
    cost: mergeCosts(summaries.map((summary) => summary.cost).filter((cost) => cost !== undefined)),
  });
}

/** From the first test's start in any summary to the last test's end in any: what one Allure report of them all shows. */
function testsSpan(summaries: Summary[]): Pick<Summary, 'firstTestStartedAt' | 'testsMs'> {
  const timed = summaries.filter((summary) => summary.firstTestStartedAt !== undefined && summary.testsMs !== undefined);
  if (!timed.length) return {};
  const first = Math.min(...timed.map((summary) => summary.firstTestStartedAt!));
  return { firstTestStartedAt: first, testsMs: Math.max(...timed.map((summary) => summary.firstTestStartedAt! + summary.testsMs!)) - first };
}

export function renderSummary(summary: Summary): string {
  const lines = ['', `Conformance summary — target: ${summary.target}${summary.shard ? ` (shard ${summary.shard})` : ''}`];
  for (const rule of Object.values(summary.rules)) {
    const ran = rule.tests.filter((test) => test.outcome !== 'not run').length;
    const status = rule.status === 'not run' || ran === rule.tests.length ? rule.status : `${rule.status} (${ran}/${rule.tests.length} run)`;
    lines.push(`  ${status.toUpperCase().padEnd(20)} ${rule.title}`);
    for (const test of rule.tests.filter((t) => t.outcome !== 'pass' && t.outcome !== 'not run')) {
      lines.push(`      ${test.outcome.padEnd(15)} [@${test.level}] ${test.id}${test.note ? `\n${indented(test.note, '          ')}` : ''}`);
      if (test.reproduction) lines.push(`          reproduction: ${test.reproduction}${test.curl ? `; one request shows it: ${test.curl}` : ''}`);
    }
  }
  const count = (outcome: Outcome) =>
    Object.values(summary.rules)
      .flatMap((rule) => rule.tests)
      .filter((test) => test.outcome === outcome).length;
  if (count('not verifiable')) {
    lines.push(
      `  NOT VERIFIABLE: ${count('not verifiable')} test(s) could not establish their fact${summary.strict ? ' (STRICT: they fail the gate)' : '; STRICT=1 makes them fail the gate'}`,
    );
  }
  if (count('error') || summary.errors.length)
    lines.push(`  ERRORS OF THE RUN: ${count('error')} test(s)${summary.errors.length ? `, and outside tests:` : ''}`);
  for (const error of summary.errors) lines.push(indented(error, '      '));
  if (summary.notRun.length && summary.notRun.length < TEST_IDS.length) {
    const rules = [...new Set(summary.notRun.map(ruleOf))];
    lines.push(
      `  NOT RUN: ${summary.notRun.length} of ${TEST_IDS.length} tests, in rules ${rules.join(', ')}${summary.shard ? ` (merge the shards: npm run verdict -- <summaries>)` : ''}`,
    );
  }
  // What the search did, whatever its outcome: a failed search's note is its failure, and what it searched is among its notes.
  const searched = summary.rules.sequences?.tests.flatMap((test) => [test.note, test.notes]).find((text) => text?.startsWith('searched '));
  if (searched) lines.push(`  SEQUENCES: ${searched}`);
  // A run that did not hold a session past a minute says so.
  const minute = summary.rules.billing?.tests.find((test) => test.id === 'billing/past-a-minute');
  if (minute?.outcome === 'pass' && minute.note) lines.push(`  BILLING: ${minute.note}`);
  // Whether the account was used, and what it said (or why not).
  const account = summary.rules['stop-is-final']?.tests.find((test) => test.id === 'stop-is-final/account');
  if (account && account.outcome !== 'not run') lines.push(`  ACCOUNT (${account.outcome}): ${account.note ?? ''}`);
  for (const rate of summary.rateLimits ?? [])
    lines.push(
      `  RATE LIMIT: the ${rate.team} team's ${rate.limiter === 'interact' ? 'stops and interacts' : rate.limiter === 'scrape' ? 'scrapes' : 'account reads'}, ${rate.limit} per ${rate.windowMs / 1000} s (${rate.from})`,
    );
  if (summary.sessionCap)
    lines.push(`  SESSION CAP: ${summary.sessionCap.cap} live session(s) per team (${summary.sessionCap.how}); tests took turns under it`);
  if (summary.cost) lines.push(...describeCost(summary.cost).map((line) => `  ${line}`));
  const tally = SEVERITY.map((outcome) => [outcome, count(outcome)] as const)
    .filter(([, n]) => n)
    .map(([outcome, n]) => `${n} ${outcome}`);
  lines.push(
    `Verdict: ${summary.verdict.toUpperCase()} (exit ${summary.exitCode}; ${TEST_IDS.length} tests in ${RULE_IDS.length} rules: ${tally.join(', ')})`,
    '',
  );
  return lines.join('\n');
}
