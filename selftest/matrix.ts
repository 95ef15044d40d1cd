/**
 * Runs the conformance suite against a set of reference variants and says, per variant, whether
 * the suite judged it as it should: a faulty variant caught by the rule named for it, a correct
 * one passed. Outcomes are read through the suite's own verdict logic (src/report/verdict.ts),
 * so an error of the run is never mistaken for a catch.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createReferenceServer, loadTeams, type ReferenceServer } from '../reference/server';
import { entryOf, filesOf, RULES, type RuleId, ruleOf, TEST_IDS, type TestId, testIdOf } from '../src/config/rules';
import { runFolder } from '../src/coordination/run-folder';
import { type Outcome, outcomeOf } from '../src/report/verdict';
import { planOf } from '../src/reproduction/plan';
import { productionVariants } from './production';
import { tempDir } from './temp';
import { capsSessions, variants as catalogue, type Variant } from './variants';

export interface TestOutcome {
  id: TestId;
  outcome: Outcome;
  note?: string;
  /** The whole message of the test's first error. */
  message?: string;
}

export interface VariantResult {
  variant: Variant;
  /** Rules with a test whose outcome is `fail` (or the outcome the variant is to be caught as). */
  caughtBy: RuleId[];
  tests: TestOutcome[];
  activeSessions: number;
  verdict: 'ok' | 'MISSED' | 'FALSE ALARM' | 'WRONG RULE' | 'RUN ERROR' | 'UNDECIDED';
  /** Why a run is an error that no test reported: tests of its rules that did not run, or ran twice. */
  problem?: string;
  /** Run a second time, alone: the first time its burst was too slow, or a test of its rule could not tell. */
  rerun?: boolean;
  /** With `reproductions`: each reproduction the run left, and its exit code against the variant and against the reference. */
  reproduced?: { test: string; onVariant: number; onReference: number; output: string; ms: number }[];
}

export interface MatrixRun {
  results: VariantResult[];
  /** The folders the runs wrote to. */
  outputs: string[];
  /** Everything the Playwright runs printed. */
  log: string;
  durationMs: number;
  /** Of which replaying the reproductions took. */
  replayMs?: number;
}

export const ROOT = path.join(__dirname, '..');
export const PLAYWRIGHT = path.join(ROOT, 'node_modules', '.bin', 'playwright');
/** What the command preloads into Playwright's processes; the matrix runs Playwright itself, and does too. */
const CODE_CACHE = path.join(ROOT, 'src', 'code-cache.cjs');

/** Environment for a suite run that must not pick up a developer's .env, target or settings. */
export function isolatedEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, CONFORMANCE_IGNORE_DOTENV: '1', FORCE_COLOR: '0' };
  for (const name of Object.keys(env)) {
    if (/^(BASE_URL|API_KEY|FOREIGN_API_KEY|BURST_API_KEY|KNOWN_DEVIATIONS|STRICT|REPORTS_DIR|CI|SEQUENCE_.*|CONFORMANCE_EMBEDDED_URL)$/.test(name))
      delete env[name];
  }
  // A short search, against external targets too: these runs check the command, the matrix searches
  // each variant deeply (MATRIX_SETTINGS). A test that needs the defaults passes ''.
  return { ...env, SEQUENCE_SECONDS: '10', SEQUENCE_BUDGET: '100', BILLING_MINUTE_HOLD_MS: '2750', ...extra };
}

export function runCommand(command: string, args: string[], env: NodeJS.ProcessEnv, cwd = ROOT): Promise<{ code: number; log: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env });
    let log = '';
    child.stdout.on('data', (chunk) => (log += chunk));
    child.stderr.on('data', (chunk) => (log += chunk));
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : 1), log }));
  });
}

/**
 * Shorter than the defaults, so that some 80 variants fit in a minute or two, and still large
 * against the tolerance: holds of which two are under a second (a duration truncated to whole
 * seconds shows) and one over two (a rate off by half shows), the default 2 s scrape gap (a clock
 * started at the scrape shows in the credits alone), and a fixed seed for the sequences rule.
 */
const MATRIX_SETTINGS = {
  BILLING_HOLDS_MS: '450,850,2250',
  BILLING_MINUTE_HOLD_MS: '2750',
  SEQUENCE_SEED: '1',
  SEQUENCE_BUDGET: '400',
  BURST_PROOF_RATE: String(3 * 40),
  BURST_CONCURRENCY: '50',
  TEST_TIMEOUT_MS: '90000',
};

/**
 * Every variant's limit, unless it brings its own: 150 a second per team, and the burst team's
 * plan 40 a second, so that a burst slowed by a busy runner still goes past it (its first wave,
 * BURST_CONCURRENCY=50, does), and its recovery without Retry-After fits BACKOFF_BUDGET_MS=6000;
 * BURST_PROOF_RATE, three times that, is a rate no limit of a correct variant lets through within
 * one second.
 */
const MATRIX_RATE_LIMIT = { limit: 150, windowMs: 1000, perTeam: { 'team-burst': { limit: 40, windowMs: 1000 } } };

/**
 * A correct variant's sequences rule runs 20 histories with one of these seeds, by turns along the
 * catalogue (with `severalSeeds`, with each): every seed meets a third of the variants.
 */
export const SEEDS_OF_CORRECT_VARIANTS = [1, 7, 42];

/** The rules a variant is run with: a faulty one its own rule (enough to prove the catch), unless it must show every other rule passes. */
function rulesFor(variant: Variant, full: boolean): RuleId[] | undefined {
  if (full || variant.runsEveryRule) return undefined;
  if (variant.rules) return variant.rules;
  if (!variant.breaks) return undefined;
  return [variant.breaks];
}

/** Whether the suite judged a variant as it should. */
function judge(variant: Variant, tests: TestOutcome[], caughtBy: RuleId[]): VariantResult['verdict'] {
  const errors = tests.some((test) => test.outcome === 'error');
  if (variant.declaredReasons) {
    const failed = tests.filter((test) => test.outcome === 'fail');
    return errors ? 'RUN ERROR' : !failed.length ? 'MISSED' : failed.every((test) => variant.declaredReasons!.test(test.message ?? '')) ? 'ok' : 'FALSE ALARM';
  }
  if (!variant.breaks) {
    const undecided = variant.decides && tests.some((test) => test.outcome === 'not verifiable');
    return errors ? 'RUN ERROR' : caughtBy.length ? 'FALSE ALARM' : undecided ? 'UNDECIDED' : tests.length ? 'ok' : 'MISSED';
  }
  const caught = tests.some((test) => ruleOf(test.id) === variant.breaks && test.outcome === (variant.caughtAs ?? 'fail'));
  // A fault that only an order of operations shows must pass every other rule's own tests; those that judge the whole run (the account, leaks) see what the sequences did too.
  const byOwnTests = [...new Set(tests.filter((test) => test.outcome === 'fail' && !entryOf(test.id).runWide).map((test) => ruleOf(test.id)))];
  const alone = !variant.runsEveryRule || byOwnTests.every((rule) => rule === variant.breaks);
  return caught && alone ? 'ok' : errors ? 'RUN ERROR' : caughtBy.length ? 'WRONG RULE' : 'MISSED';
}

/**
 * `reproductions`: the reproductions the failed tests left, replayed (all, or each variant's quickest);
 * `full`: every rule against every variant; `rules`: these rules against every variant;
 * `severalSeeds`: the sequences rule against every correct variant with each of SEEDS_OF_CORRECT_VARIANTS. `env`:
 * settings for the suite runs (the sequences rule runs with a fixed seed unless it gives another).
 */
type MatrixOptions = { full?: boolean; rules?: RuleId[]; severalSeeds?: boolean; env?: Record<string, string>; reproductions?: 'all' | 'quickest' };

/**
 * The matrix; a variant whose burst the busy runner kept too slow to tell a limit from none (an
 * error of the run, by the suite's own verdict), or whose fault a test of its rule said it could not
 * tell (not verifiable), runs once more, alone, once the rest has ended.
 */
export async function runMatrix(variants: Variant[], options: MatrixOptions = {}): Promise<MatrixRun> {
  const run = await runMatrixOnce(variants, options);
  // A burst too slow to tell a limit from none, or a fault the suite could not tell from the target's answers on a busy runner (a test of its rule not
  // verifiable: a burst whose refusals met no stop of its own, an account whose excess no settlement explained). Never a fault it passed.
  const tooSlow = run.results.filter(
    (r) =>
      (r.verdict === 'RUN ERROR' && r.tests.some((t) => t.outcome === 'error' && /below BURST_PROOF_RATE/.test(t.note ?? ''))) ||
      (r.verdict === 'MISSED' && r.tests.some((t) => t.outcome === 'not verifiable' && ruleOf(t.id) === r.variant.breaks)) ||
      r.verdict === 'UNDECIDED',
  );
  if (!tooSlow.length) return run;
  const again = await runMatrixOnce(
    tooSlow.map((r) => r.variant),
    options,
  );
  const rerun = new Map(again.results.map((r) => [r.variant.name, { ...r, rerun: true }]));
  return {
    results: run.results.map((r) => rerun.get(r.variant.name) ?? r),
    outputs: [...run.outputs, ...again.outputs],
    log: `${run.log}\n${again.log}`,
    durationMs: run.durationMs + again.durationMs,
    replayMs: (run.replayMs ?? 0) + (again.replayMs ?? 0),
  };
}

async function runMatrixOnce(
  variants: Variant[],
  { full = false, rules, severalSeeds = false, env: extraEnv = {}, reproductions }: MatrixOptions = {},
): Promise<MatrixRun> {
  const started = performance.now();
  const output = tempDir('conformance-matrix-');
  const servers: ReferenceServer[] = await Promise.all(variants.map((variant) => createReferenceServer({ rateLimit: MATRIX_RATE_LIMIT, ...variant.options })));
  try {
    const rulesOf = (variant: Variant) => rules ?? rulesFor(variant, full) ?? (Object.keys(RULES) as RuleId[]);
    const specs = variants.flatMap((variant, index) =>
      writeSpecs(
        output,
        index,
        variant.name,
        rulesOf(variant),
        {
          target: { baseURL: servers[index].url, embedded: true },
          reproductionsFolder: path.join(output, 'reproductions', variant.name),
          ...(variant.holdsPastAMinute ? { minuteHoldMs: 61_250 } : {}),
          // The hosted service's variants differ in what their file declares, not in their orders of operations: one seed.
          ...(!variant.breaks && !variant.knownDeviations && !variant.declaredReasons
            ? {
                sequenceSeeds: severalSeeds ? SEEDS_OF_CORRECT_VARIANTS : [SEEDS_OF_CORRECT_VARIANTS[index % SEEDS_OF_CORRECT_VARIANTS.length]],
                sequenceRuns: 20,
              }
            : {}),
        },
        variant.knownDeviations && path.join(ROOT, variant.knownDeviations),
        variant.sessionCap,
      ),
    );
    // The bursts split between two processes, one at a time in each, beside the rest.
    const bursts = specs.filter((spec) => spec.burst).map((spec) => spec.file);
    const parts = [
      { part: 'rest', files: specs.filter((spec) => !spec.burst).map((spec) => spec.file) },
      ...[0, 1].map((n) => ({ part: `burst-${n}`, files: bursts.filter((_, index) => index % 2 === n) })),
    ].filter((p) => p.files.length);
    // The variants' tests mostly wait (holds, the account's reads): fourteen workers for the rest keep two cores busy.
    const env = (part: string, files: string[]) =>
      isolatedEnv({
        NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${JSON.stringify(CODE_CACHE)}`.trim(),
        SELFTEST_SPECS: JSON.stringify(files),
        SELFTEST_OUTPUT: output,
        SELFTEST_PART: part,
        SELFTEST_WORKERS: part === 'rest' ? '14' : '1',
        REPORTS_DIR: output,
        // Room for a cap held empty-handed to show (5 refusals over 5 s, at growing waits) on a busy runner.
        BACKOFF_BUDGET_MS: '20000',
        REQUEST_TIMEOUT_MS: '30000',
        ...MATRIX_SETTINGS,
        ...extraEnv,
      });
    const runs = await Promise.all(parts.map(({ part, files }) => runCommand(PLAYWRIGHT, ['test', '-c', 'selftest/variants.config.ts'], env(part, files))));
    const log = runs.map((run) => run.log).join('\n');
    const byVariant = readReports(
      parts.map(({ part }) => path.join(output, `report-${part}.json`)),
      log,
    );
    const results = variants.map((variant, index): VariantResult => {
      const tests = byVariant.get(variant.name) ?? [];
      const caughtAs = variant.caughtAs ?? 'fail';
      const caughtBy = [...new Set(tests.filter((test) => test.outcome === caughtAs || test.outcome === 'fail').map((test) => ruleOf(test.id)))].sort();
      // Each test of the variant's rules once: a test that never ran, or ran for another variant too, is an error of the matrix.
      const ran = tests.map((test) => test.id).sort();
      const expected = TEST_IDS.filter((id) => rulesOf(variant).includes(ruleOf(id))).sort();
      const problem =
        JSON.stringify(ran) === JSON.stringify(expected)
          ? undefined
          : `ran ${ran.length} tests of its rules where ${expected.length} were due: missing ${JSON.stringify(expected.filter((id) => !ran.includes(id)))}, twice ${JSON.stringify(ran.filter((id, i) => ran.indexOf(id) !== i))}, others ${JSON.stringify(ran.filter((id) => !expected.includes(id)))}`;
      return {
        variant,
        caughtBy,
        tests,
        activeSessions: servers[index].activeSessions().length,
        verdict: problem ? 'RUN ERROR' : judge(variant, tests, caughtBy),
        problem,
      };
    });
    const replayStarted = performance.now();
    if (reproductions) await replayReproductions(output, variants, results, reproductions);
    return { results, outputs: [output], log, durationMs: performance.now() - started, replayMs: performance.now() - replayStarted };
  } finally {
    // Playwright ran without the command, which would have removed the run's working folder.
    rmSync(runFolder(output), { recursive: true, force: true });
    await Promise.all(servers.map((server) => server.close()));
  }
}

/** Replays mostly wait (holds, pauses between steps): several run at once. */
const REPLAYS_AT_ONCE = 8;

/**
 * Reproductions whose fault shows in one interleaving or timing of requests and not in another
 * (histories of the sequences rule, stops sent at once, the account's composed sessions): replayed
 * with MATRIX=full only, where a busy runner's timing is not the gate's.
 */
const TIMING_DEPENDENT = ['sequences/random-histories', 'stop-is-final/simultaneous-stops', 'stop-is-final/account'];
/** Reproductions that wait out a cap's confirmation (CAP_CONFIRM_MS) on both targets: replayed with MATRIX=full only. */
const WAITS_FOR_A_CAP = ['stop-is-final/simultaneous-opens'];

/** A target declared to count its clock in whole seconds: a fault of its settlements shows only when a second boundary falls between two stops. */
function wholeSecondClock(variant: Variant): boolean {
  if (!variant.knownDeviations) return false;
  const declared = JSON.parse(readFileSync(path.join(ROOT, variant.knownDeviations), 'utf8')) as { clock?: { resolutionMs?: number } };
  return (declared.clock?.resolutionMs ?? 0) >= 1000;
}

/** How long the test the reproduction replays took in the run, from its first request to its last answer. */
function recordedMs(file: string): number {
  const { steps } = planOf(readFileSync(file, 'utf8'));
  return steps.length ? steps.at(-1)!.receivedAt - steps[0].sentAt : 0;
}

/**
 * Runs every reproduction the variants' failed tests left against a fresh server of the variant
 * (it must show the fault again: exit 1) and against a correct target (it must not: exit 0): the
 * reference, or for a variant with a known-deviations file, the correct variant declared by the
 * same file, or for one its runs are told a cap of, the reference under that cap. A few at a time.
 */
async function replayReproductions(output: string, variants: Variant[], results: VariantResult[], reproductions: 'all' | 'quickest'): Promise<void> {
  const correctWith = (file?: string) => [...productionVariants, ...catalogue].find((v) => !v.breaks && !v.declaredReasons && v.knownDeviations === file);
  const [owner, foreign, burst] = loadTeams();
  const keys = { API_KEY: owner.keys[0], FOREIGN_API_KEY: foreign.keys[0], BURST_API_KEY: burst.keys[0] };
  const jobs = variants.flatMap((variant, index) => {
    const folder = path.join(output, 'reproductions', variant.name);
    if (!existsSync(folder)) return [];
    const all = readdirSync(folder, { recursive: true, encoding: 'utf8' })
      .filter((name) => name.endsWith('.mjs'))
      .map((name) => ({ index, file: path.join(folder, name), test: name.replace(/\.mjs$/, '') }));
    // Each variant's quickest, unless all are asked for: what the run spent on the test is about what its replay takes.
    return reproductions === 'all' ? all : [...all].sort((a, b) => recordedMs(a.file) - recordedMs(b.file)).slice(0, 1);
  });
  const replayOn = async (file: string, baseURL: string) => runCommand(process.execPath, [file], { PATH: process.env.PATH, BASE_URL: baseURL, ...keys });
  // The quickest of each variant's, then at most two of each test's, none past 20 s (a hold past a minute): every kind of reproduction, in a time npm test affords.
  const chosen =
    reproductions === 'all'
      ? jobs
      : jobs.filter(
          (job, index) =>
            recordedMs(job.file) <= 20_000 &&
            !TIMING_DEPENDENT.includes(job.test) &&
            !WAITS_FOR_A_CAP.includes(job.test) &&
            !variants[job.index].timingFault &&
            !wholeSecondClock(variants[job.index]) &&
            jobs.slice(0, index).filter((earlier) => earlier.test === job.test).length < 2,
        );
  let next = 0;
  const worker = async () => {
    while (next < chosen.length) {
      const { index, file, test } = chosen[next++];
      // Fresh servers: the run may have left the variant's limiter or sessions in a state of its fault, and each replay reads its own account.
      const fresh = await createReferenceServer({ rateLimit: MATRIX_RATE_LIMIT, ...variants[index].options });
      // A variant its runs are told a cap of is quiet under that cap, kept.
      const { knownDeviations, sessionCap } = variants[index];
      const correct = sessionCap !== undefined && !knownDeviations ? capsSessions(sessionCap, true) : correctWith(knownDeviations)?.options;
      const quiet = await createReferenceServer({ rateLimit: MATRIX_RATE_LIMIT, ...correct });
      const replayStarted = performance.now();
      const [onVariant, onReference] = await Promise.all([replayOn(file, fresh.url), replayOn(file, quiet.url)]);
      const ms = performance.now() - replayStarted;
      const left = quiet.activeSessions().length;
      await Promise.all([fresh.close(), quiet.close()]);
      (results[index].reproduced ??= []).push({
        test,
        onVariant: onVariant.code,
        onReference: onReference.code,
        output: `against the variant:\n${onVariant.log}\nagainst the reference:\n${onReference.log}`,
        ms,
      });
      if (left) throw new Error(`the reproduction of ${test} left ${left} session(s) running on a correct target`);
    }
  };
  await Promise.all(Array.from({ length: REPLAYS_AT_ONCE }, worker));
}

/**
 * Writes the spec files that run `rules` against a variant with `options` (its server, its
 * seeds): the burst's, and one for all its other rules, whose tests run one after the other in one
 * worker, as against a real target that caps live sessions. Each loads the rules' modules afresh,
 * so that they register their tests again, in a group named for the variant: a few workers then
 * serve every variant.
 */
function writeSpecs(
  output: string,
  index: number,
  variant: string,
  rules: RuleId[],
  options: Record<string, unknown>,
  knownDeviationsFile?: string,
  sessionCap?: number,
): { burst: boolean; file: string }[] {
  // Playwright takes files in the order of their paths: the variants' own order, so that the longest, given first, start first.
  const folder = path.join(output, 'specs', `${String(index).padStart(3, '0')}-${variant}`);
  mkdirSync(folder, { recursive: true });
  const groups = [
    { burst: false, rules: rules.filter((rule) => rule !== 'rate-limit') },
    { burst: true, rules: rules.filter((rule) => rule === 'rate-limit') },
  ];
  return groups
    .filter((group) => group.rules.length)
    .map(({ burst, rules: chosen }) => {
      const file = path.join(folder, burst ? 'burst.spec.js' : 'rules.spec.js');
      // A rule's tests that judge the whole run (the account) come after every other test of the variant.
      const files = [...chosen.map((rule) => filesOf(rule)[0]), ...chosen.flatMap((rule) => filesOf(rule).slice(1))].map((file) =>
        path.join(ROOT, 'tests', file),
      );
      writeFileSync(
        file,
        [
          `// Rules ${chosen.join(', ')} against variant ${variant} (written by selftest/matrix.ts).`,
          `const { test } = require(${JSON.stringify(path.join(ROOT, 'src', 'playwright', 'fixtures.ts'))});`,
          // A worker option: a variant with its own known-deviations file gets workers of its own.
          ...(knownDeviationsFile ? [`test.use({ knownDeviationsFile: ${JSON.stringify(knownDeviationsFile)} });`] : []),
          ...(sessionCap ? [`test.use({ sessionCap: ${sessionCap} });`] : []),
          `test.describe(${JSON.stringify(variant)}, () => {`,
          `  test.describe.configure({ mode: 'default' });`,
          `  test.use(${JSON.stringify(options)});`,
          `  for (const file of ${JSON.stringify(files)}) {`,
          '    delete require.cache[require.resolve(file)];',
          '    require(file);',
          '  }',
          '});',
          '',
        ].join('\n'),
      );
      return { burst, file };
    });
}

/** Test outcomes per variant (the group their spec file puts them in), from Playwright's JSON reports, judged as the summary reporter judges them. */
function readReports(files: string[], log: string): Map<string, TestOutcome[]> {
  const byVariant = new Map<string, TestOutcome[]>();
  for (const file of files) {
    if (!existsSync(file)) throw new Error(`The suite run wrote no JSON report (${path.basename(file)}). Its output:\n${log.slice(-3000)}`);
    const report = JSON.parse(readFileSync(file, 'utf8'));
    const visit = (suite: any, variant?: string) => {
      for (const spec of suite.specs ?? []) {
        for (const test of spec.tests) {
          const result = test.results.at(-1);
          const id = testIdOf(test.annotations);
          if (!id || !result || !variant) continue;
          const errors = (result.errors ?? []).map((error: { message?: string }) => error.message ?? '');
          const { outcome, note } = outcomeOf({ status: result.status, errors, annotations: [...test.annotations, ...(result.annotations ?? [])] });
          byVariant.set(variant, [...(byVariant.get(variant) ?? []), { id, outcome, note, message: errors[0] }]);
        }
      }
      for (const child of suite.suites ?? []) visit(child, variant ?? child.title);
    };
    // Each spec file wraps its rule's tests in a group named for the variant.
    for (const suite of report.suites) visit(suite);
  }
  return byVariant;
}

export function renderMatrix(run: MatrixRun): string {
  const rows = run.results.map((r) => [
    r.variant.name,
    r.variant.breaks ? `${r.variant.caughtAs ?? 'fail'} ${r.variant.breaks}` : 'pass',
    r.caughtBy.join(', ') || '-',
    String(r.tests.length),
    String(r.activeSessions),
    r.verdict,
  ]);
  const header = ['variant', 'expected', 'rules that caught it', 'tests', 'left running', 'verdict'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]) => cells.map((cell, i) => cell.padEnd(widths[i])).join('  ');
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}
