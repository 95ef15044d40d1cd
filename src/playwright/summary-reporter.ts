/**
 * The console of a run and its verdict: one line per test as it ends (the verdict's outcome, the
 * test id, and for anything but a pass the whole of why, indented under it), what tests print as they print it,
 * then `conformance-summary.json` (every test of the catalogue with its outcome), `junit.xml` (one
 * test case per test, its class name the rule, its rule id, test id, level and outcome as
 * properties) and the console summary.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { FullConfig, FullResult, Reporter, Suite, TestCase, TestError, TestResult } from '@playwright/test/reporter';
import { describeRate, type Limiter, type Rate } from '../config/rates';
import { ruleOf, type TestId, testIdOf } from '../config/rules';
import { type Cost, costOf, readSpend } from '../coordination/cost';
import { channel } from '../coordination/run-folder';
import { learntRates } from '../coordination/schedule';
import { learntCaps } from '../coordination/session-slots';
import { redact } from '../http/redact';
import { emptyRecords, indented, outcomeOf, renderSummary, type Summary, summarise, type TestRecord, wholeMessage } from '../report/verdict';
import { REPRODUCTION } from '../reproduction/plan';

export interface SummaryOptions {
  reportsDir: string;
  target: string;
  embedded: boolean;
  strict: boolean;
  sessionCap?: number;
  rateLimit?: Rate;
  /** What the run said it would spend at most (domain/budget.ts). */
  predicted?: Cost['predicted'];
}

/** How often, at most, the console says how the run stands against a limit it learnt. */
const PROGRESS_EVERY_MS = 60_000;
const LIMITERS: Record<Limiter, string> = { interact: 'stop and interact', scrape: 'scrapes', account: 'account reads' };

export default class SummaryReporter implements Reporter {
  private records = emptyRecords();
  private readonly errors: string[] = [];
  private readonly durations = new Map<TestId, number>();
  private shard?: string;
  private filtered = false;
  private started = Date.now();
  /** The first test's start and the last one's end, as the Allure report takes them: its start when it began, its end that plus its duration. */
  private firstTestStarted?: number;
  private lastTestEnded?: number;
  private readonly begun = new Map<string, number>();
  private total = 0;
  private done = 0;
  private told = 0;

  constructor(private readonly options: SummaryOptions) {}

  printsToStdio() {
    return true;
  }

  // What tests print, redacted as everything the run writes.
  onStdOut(chunk: string | Buffer) {
    process.stdout.write(redact(String(chunk)));
  }

  onStdErr(chunk: string | Buffer) {
    process.stderr.write(redact(String(chunk)));
  }

  onBegin(config: FullConfig, suite: Suite) {
    this.started = Date.now();
    this.shard = config.shard ? `${config.shard.current}/${config.shard.total}` : undefined;
    const grep = ([] as RegExp[]).concat(config.grep);
    this.filtered = !!config.grepInvert || grep.some((pattern) => pattern.source !== '.*');
    this.total = suite.allTests().length;
    this.told = this.started;
    for (const test of suite.allTests()) {
      const id = testIdOf(test.annotations);
      if (id) this.records.get(id)!.title = test.title;
      else this.errors.push(`"${test.title}" (${test.location.file}) has no test id`);
    }
  }

  onTestBegin(test: TestCase) {
    this.begun.set(test.id, Date.now());
    this.firstTestStarted ??= Date.now();
  }

  onTestEnd(test: TestCase, result: TestResult) {
    this.lastTestEnded = Math.max(this.lastTestEnded ?? 0, (this.begun.get(test.id) ?? Date.now() - result.duration) + result.duration);
    const id = testIdOf(test.annotations);
    if (!id) return;
    const { outcome, note, notes } = outcomeOf({
      status: result.status,
      errors: result.errors.map((error) => error.message ?? error.value ?? 'unknown error'),
      annotations: [...test.annotations, ...(result.annotations ?? [])],
    });
    const annotation = (type: string) => [...test.annotations, ...(result.annotations ?? [])].find((found) => found.type === type)?.description;
    const [reproduction, curl] = outcome === 'fail' || outcome === 'known deviation' ? [annotation(REPRODUCTION), annotation('curl')] : [];
    this.records.set(id, {
      ...this.records.get(id)!,
      outcome,
      note: note && redact(note),
      ...(notes ? { notes: redact(notes) } : {}),
      ...(reproduction ? { reproduction } : {}),
      ...(curl ? { curl } : {}),
    });
    this.durations.set(id, result.duration);
    // Why, for anything but a pass: each error whole (the test's own, its teardown's), or the note, indented under the test's line.
    const errors = result.errors.map((error) => wholeMessage(redact(error.message ?? error.value ?? '')));
    const why =
      outcome === 'pass'
        ? []
        : outcome === 'fail' || outcome === 'error'
          ? [...new Set(errors.filter((error) => error !== undefined))].slice(0, 3)
          : [wholeMessage(note && redact(note))].filter((text) => text !== undefined);
    const reproduce = reproduction
      ? [`      reproduce: node ${path.relative(process.cwd(), path.join(this.options.reportsDir, reproduction))}${curl ? `, or: ${curl}` : ''}`]
      : [];
    console.log(
      [`  ${outcome.toUpperCase().padEnd(16)} ${id} (${result.duration} ms)`, ...why.map((text) => indented(text, '      ')), ...reproduce].join('\n'),
    );
    this.done += 1;
    this.progress();
  }

  /** Once a limit is known, about once a minute: what remains, at the pace of the slowest team's stops and interacts. */
  private progress(): void {
    if (Date.now() - this.told < PROGRESS_EVERY_MS || this.done >= this.total) return;
    const teams = readSpend(this.options.reportsDir).teams;
    // Each team's pace so far, carried over the tests left: the slowest decides.
    const [minutesLeft, rate] = this.rates()
      .filter((known) => known.limiter === 'interact' && teams[known.team]?.through.length)
      .map((known) => [(((teams[known.team].through.length / this.done) * (this.total - this.done)) / known.limit) * (known.windowMs / 60_000), known] as const)
      .sort(([a], [b]) => b - a)[0] ?? [0, undefined];
    if (!rate) return;
    this.told = Date.now();
    console.log(
      `Progress: ${this.done} of ${this.total} tests in ${Math.round((Date.now() - this.started) / 60_000)} min; about ${Math.max(1, Math.round(minutesLeft))} min left at ${describeRate(rate)} ` +
        `(the ${rate.team} team's ${LIMITERS[rate.limiter]}, ${rate.from}).`,
    );
  }

  /** The rates the run learnt or was told, the stated one first. */
  private rates(): { team: string; limiter: Limiter; limit: number; windowMs: number; from: string }[] {
    const learnt = learntRates(this.options.reportsDir).map(({ team, limiter, rate }) => ({ team, limiter, ...rate }));
    const teams = Object.entries(readSpend(this.options.reportsDir).teams)
      .filter(([, spend]) => spend.limited > 0)
      .map(([team]) => team);
    const stated = this.options.rateLimit ? teams.map((team) => ({ team, limiter: 'interact' as const, ...this.options.rateLimit! })) : [];
    return [...stated, ...learnt.filter((known) => !(this.options.rateLimit && known.limiter === 'interact'))];
  }

  onError(error: TestError) {
    const message = redact(error.message ?? error.value ?? 'unknown error');
    // The whole of it, on the console and in the summary (a teardown's list of sessions it could not stop).
    console.error(message);
    this.errors.push(wholeMessage(message) ?? 'unknown error');
  }

  /** The cap on live sessions stated up front, or the lowest the run learnt, and from which team. */
  private sessionCap(): Summary['sessionCap'] {
    if (this.options.sessionCap !== undefined) return { cap: this.options.sessionCap, how: 'stated: SESSION_CAP' };
    const [lowest, ...others] = learntCaps(channel(this.options.reportsDir, 'sessions')).sort((a, b) => a.cap - b.cap);
    const teams = [lowest, ...others].filter(Boolean).map((learnt) => learnt.team);
    return lowest && { cap: lowest.cap, how: `learnt from refused interacts of the ${teams.join(' and ')} team${teams.length > 1 ? 's' : ''}` };
  }

  async onEnd(_result: FullResult) {
    if (process.argv.includes('--list')) return; // listing runs nothing: keep the last run's summary
    const summary = summarise(this.records, {
      target: this.options.target,
      embedded: this.options.embedded,
      strict: this.options.strict,
      shard: this.shard,
      filtered: this.filtered || undefined,
      durationMs: Date.now() - this.started,
      startedAt: this.started,
      ...(this.firstTestStarted !== undefined
        ? { firstTestStartedAt: this.firstTestStarted, testsMs: (this.lastTestEnded ?? this.firstTestStarted) - this.firstTestStarted }
        : {}),
      errors: this.errors,
      sessionCap: this.sessionCap(),
    });
    const rates = this.rates();
    if (rates.length) summary.rateLimits = rates.map(({ team, limiter, limit, windowMs, from }) => ({ team, limiter, limit, windowMs, from }));
    summary.cost = {
      ...costOf(
        readSpend(this.options.reportsDir),
        summary.durationMs,
        rates.filter((rate) => rate.limiter === 'interact'),
      ),
      ...(this.options.predicted ? { predicted: this.options.predicted } : {}),
    };
    mkdirSync(this.options.reportsDir, { recursive: true });
    writeFileSync(path.join(this.options.reportsDir, 'conformance-summary.json'), JSON.stringify(summary, null, 2));
    writeFileSync(path.join(this.options.reportsDir, 'junit.xml'), junitXml(summary, this.durations));
    console.log(renderSummary(summary));
  }
}

const xml = (text: string) => text.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!);

/** JUnit that CI test views group by rule: class name = rule id, properties = ids, level, outcome. */
export function junitXml(summary: Summary, durations: Map<TestId, number>): string {
  const cases = (tests: TestRecord[]) =>
    tests.map((test) => {
      const reproduction = test.reproduction ? [['reproduction', test.reproduction], ...(test.curl ? [['curl', test.curl]] : [])] : [];
      const props = [['rule', ruleOf(test.id)], ['test-id', test.id], ['level', test.level], ['outcome', test.outcome], ...reproduction]
        .map(([name, value]) => `        <property name="${name}" value="${xml(value)}"/>`)
        .join('\n');
      // The message attribute holds the first line (CI views show it as the title), the element the whole message.
      const [first, note] = [xml(test.note?.split('\n')[0] ?? ''), xml(test.note ?? '')];
      const body = {
        fail: `<failure message="${first}" type="conformance failure">${note}</failure>`,
        error: `<error message="${first}" type="error of the run">${note}</error>`,
        'not verifiable': `<skipped message="not verifiable: ${first}">${note}</skipped>`,
        'not run': '<skipped message="not run"/>',
        'known deviation': `<system-out>known deviation: ${note}</system-out>`,
        pass: '',
      }[test.outcome];
      const seconds = ((durations.get(test.id) ?? 0) / 1000).toFixed(3);
      return `    <testcase classname="${ruleOf(test.id)}" name="${xml(test.title ?? test.id)}" time="${seconds}">\n      <properties>\n${props}\n      </properties>\n      ${body}\n    </testcase>`;
    });
  const suites = Object.entries(summary.rules).map(([id, rule]) => {
    const count = (outcome: string) => rule.tests.filter((test) => test.outcome === outcome).length;
    const skipped = count('not verifiable') + count('not run');
    return `  <testsuite name="${xml(id)}" tests="${rule.tests.length}" failures="${count('fail')}" errors="${count('error')}" skipped="${skipped}">\n${cases(rule.tests).join('\n')}\n  </testsuite>`;
  });
  const cost = summary.cost
    ? Object.entries({
        ...summary.cost,
        floor: undefined,
        ...(summary.cost.floor
          ? {
              floorMs: summary.cost.floor.floorMs,
              floorRatio: summary.cost.floor.ratio,
              floorTeam: summary.cost.floor.team,
              limitPerMinute: summary.cost.floor.perMinute,
            }
          : {}),
      })
        // What the run predicted and the 429s not earned, per field: cost.predicted.sessions, cost.unearned.owner.
        .flatMap(([name, value]) =>
          value !== null && typeof value === 'object'
            ? Object.entries(value).map(([key, inner]) => [`${name}.${key}`, inner] as const)
            : [[name, value] as const],
        )
        .filter(([, value]) => value !== undefined)
        .map(([name, value]) => `    <property name="cost.${name}" value="${xml(String(value))}"/>`)
    : [];
  const properties = cost.length ? `  <properties>\n${cost.join('\n')}\n  </properties>\n` : '';
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="conformance: ${xml(summary.target)}" verdict="${summary.verdict}">\n${properties}${suites.join('\n')}\n</testsuites>\n`;
}
