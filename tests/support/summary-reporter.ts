/**
 * Conformance summary: rule -> pass / fail / known deviation / not verifiable, printed at the
 * end of the run and written as JSON. A test whose declared known deviation did not happen
 * counts as a failure, so that the deviations file stays true.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { FullConfig, FullResult, Reporter, Suite, TestCase, TestError, TestResult } from '@playwright/test/reporter';
import { RULES, type RuleId } from './rules';

export type TestOutcome = 'pass' | 'fail' | 'known deviation' | 'not verifiable' | 'not run';
export type Verdict = 'pass' | 'fail' | 'error';

interface TestRecord {
  title: string;
  level: string;
  outcome: TestOutcome;
  note?: string;
}

const ORDER: TestOutcome[] = ['fail', 'known deviation', 'not verifiable', 'pass', 'not run'];

export default class SummaryReporter implements Reporter {
  private readonly outputFile: string;
  private readonly records = new Map<TestCase, TestRecord>();
  private readonly errors: string[] = [];
  private started = Date.now();

  constructor(options: { outputFile?: string } = {}) {
    this.outputFile = options.outputFile ?? 'reports/conformance-summary.json';
  }

  printsToStdio() {
    return false;
  }

  onBegin(_config: FullConfig, suite: Suite) {
    this.started = Date.now();
    for (const test of suite.allTests()) this.records.set(test, { title: test.title, level: annotation(test.annotations, 'allure.label.level') ?? '?', outcome: 'not run' });
  }

  onTestEnd(test: TestCase, result: TestResult) {
    const record = this.records.get(test);
    if (!record) return;
    const annotations = [...test.annotations, ...(result.annotations ?? [])];
    const deviation = annotation(annotations, 'known-deviation');
    const expectedToFail = test.expectedStatus === 'failed';
    if (result.status === 'skipped') {
      const reason = annotation(annotations, 'not-verifiable');
      record.outcome = reason ? 'not verifiable' : 'not run';
      record.note = reason;
    } else if (test.outcome() === 'expected') {
      record.outcome = expectedToFail ? 'known deviation' : 'pass';
      record.note = expectedToFail ? deviation : undefined;
    } else {
      record.outcome = 'fail';
      record.note = expectedToFail
        ? 'declared as a known deviation, but it passes: remove it from the known-deviations file'
        : firstLine(result.error?.message);
    }
  }

  onError(error: TestError) {
    this.errors.push(firstLine(error.message) ?? 'unknown error');
  }

  async onEnd(result: FullResult) {
    if (process.argv.includes('--list')) return; // listing runs nothing: keep the last run's summary
    const rules: Record<string, { title: string; status: TestOutcome; tests: TestRecord[] }> = {};
    for (const [test, record] of this.records) {
      const id = (annotation(test.annotations, 'allure.label.rule') ?? 'unlabelled') as RuleId;
      rules[id] ??= { title: RULES[id]?.title ?? id, status: 'not run', tests: [] };
      rules[id].tests.push(record);
    }
    for (const entry of Object.values(rules)) {
      entry.status = ORDER.find((outcome) => entry.tests.some((test) => test.outcome === outcome)) ?? 'not run';
    }
    const ran = [...this.records.values()].some((record) => record.outcome !== 'not run');
    const failed = Object.values(rules).some((entry) => entry.status === 'fail');
    const verdict: Verdict = this.errors.length || !ran ? 'error' : failed || result.status !== 'passed' ? 'fail' : 'pass';
    const summary = {
      verdict,
      target: process.env.BASE_URL || 'embedded reference',
      embedded: !process.env.BASE_URL,
      durationMs: Date.now() - this.started,
      errors: this.errors,
      rules: Object.fromEntries(Object.entries(rules).sort(([a], [b]) => order(a) - order(b))),
    };
    mkdirSync(path.dirname(this.outputFile), { recursive: true });
    writeFileSync(this.outputFile, JSON.stringify(summary, null, 2));
    console.log(render(summary));
  }
}

function order(id: string): number {
  const index = Object.keys(RULES).indexOf(id);
  return index < 0 ? 99 : index;
}

function annotation(annotations: { type: string; description?: string }[], type: string): string | undefined {
  return annotations.find((entry) => entry.type === type)?.description;
}

/** The first non-empty line of an error message, without terminal colours. */
export function firstLine(message: string | undefined): string | undefined {
  // eslint-disable-next-line no-control-regex
  return message?.replace(/\u001b\[[0-9;]*m/g, '').split('\n').find((line) => line.trim())?.trim();
}

function render(summary: { verdict: Verdict; target: string; errors: string[]; rules: Record<string, { title: string; status: TestOutcome; tests: TestRecord[] }> }): string {
  const lines = ['', `Conformance summary — target: ${summary.target}`];
  for (const entry of Object.values(summary.rules)) {
    lines.push(`  ${entry.status.toUpperCase().padEnd(16)} ${entry.title}`);
    for (const test of entry.tests.filter((t) => t.outcome !== 'pass')) {
      lines.push(`      ${test.outcome.padEnd(15)} [@${test.level}] ${test.title}${test.note ? `\n          ${test.note}` : ''}`);
    }
  }
  for (const error of summary.errors) lines.push(`  ERROR ${error}`);
  const counts = ORDER.map((outcome) => [outcome, Object.values(summary.rules).filter((entry) => entry.status === outcome).length] as const)
    .filter(([, count]) => count)
    .map(([outcome, count]) => `${count} ${outcome}`);
  lines.push(`Verdict: ${summary.verdict.toUpperCase()} (${Object.keys(summary.rules).length} rules: ${counts.join(', ')})`, '');
  return lines.join('\n');
}
