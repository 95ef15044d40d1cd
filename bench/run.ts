/**
 * npm run bench [-- <part>]: every figure as a ratio against a baseline measured in the same run
 * (the machines are shared and noisy, so absolute times mean little). Writes docs/bench.json
 * and docs/performance.md.
 *   command     `npm run conformance` end to end, reports included / (one empty Playwright test
 *               + the longest billing hold), and what each phase costs                     goal <= 2, under 10 s
 *   suite       suite wall time / (one empty Playwright test + the longest billing hold)   goal <= 1.5
 *               and what the sequences rule adds to it                                     goal <= 3 s
 *   burst       the suite's burst rate / autocannon's, same endpoint and concurrency       goal >= 0.5, 200 requests within 1 s
 *   timing      median width of the measured billing interval (goal <= 5 ms) and the smallest
 *               sessionDurationMs bias the billing rule detects (goal <= 50 ms)
 *   sequences   how often the sequences rule, with its defaults, catches each order-only fault
 *               served as an external target at 50 requests a second, over ten seeds  goal >= 9 of 10
 *   throughput  reference throughput / a bare node:http server's, 404 and 401 paths         goal >= 0.8
 *   caps        the whole command against targets that cap each team's live sessions at 1, 2 and 4,
 *               wall time / the same target without a cap, and the cap each run learnt
 *   selftest    npm test's CPU time, by kind of process and by self-test file / one npm run conformance's
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { createReferenceServer, loadTeams } from '../reference/server';
import { isolatedEnv, PLAYWRIGHT, ROOT, runCommand, runMatrix } from '../selftest/matrix';
import { capsSessions, durationOffBy, orderFaults, rarerOrderFaults, type Variant } from '../selftest/variants';
import { readSettings } from '../src/config/settings';
import { renderPerformance } from './performance';

const [owner, foreign, burstTeam] = loadTeams();
const UUID = '3f2a1c4e-8b7d-4e6f-9a0b-1c2d3e4f5a6b';
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function serve(kind: 'reference' | 'bare', limit?: number): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(path.join(ROOT, 'node_modules', '.bin', 'tsx'), [path.join(__dirname, 'serve.ts'), kind, ...(limit ? [String(limit)] : [])], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve) => child.stdout!.once('data', (chunk) => resolve(String(chunk).trim())));
  return { url, child };
}

/** One Playwright run of the suite with a JSON report; returns its wall time and the report. */
async function suiteRun(args: string[], env: Record<string, string> = {}): Promise<{ seconds: number; report: any }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-'));
  const started = performance.now();
  const { code, log } = await runCommand(
    PLAYWRIGHT,
    ['test', '--reporter=json', ...args],
    isolatedEnv({ PLAYWRIGHT_JSON_OUTPUT_NAME: path.join(dir, 'report.json'), REPORTS_DIR: dir, ...env }),
  );
  const seconds = (performance.now() - started) / 1000;
  if (code !== 0) throw new Error(`the suite failed:\n${log.slice(-2000)}`);
  return { seconds, report: JSON.parse(readFileSync(path.join(dir, 'report.json'), 'utf8')) };
}

/** The JSON bodies of every attachment with this name in a Playwright JSON report. */
function attachments(report: any, name: string): any[] {
  const found: any[] = [];
  const visit = (suite: any) => {
    for (const spec of suite.specs ?? []) {
      for (const test of spec.tests)
        for (const result of test.results)
          for (const a of result.attachments ?? []) if (a.name === name) found.push(JSON.parse(Buffer.from(a.body, 'base64').toString('utf8')));
    }
    (suite.suites ?? []).forEach(visit);
  };
  report.suites.forEach(visit);
  return found;
}

async function suiteOverhead() {
  const config = emptySuite();
  const floors: number[] = [];
  const suites: number[] = [];
  const withoutSequences: number[] = [];
  // Interleaved, so that a slow spell of the machine falls on all three alike.
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    const { code } = await runCommand(PLAYWRIGHT, ['test', '-c', config], isolatedEnv({}));
    if (code !== 0) throw new Error('the empty test failed');
    floors.push((performance.now() - started) / 1000);
    suites.push((await suiteRun([])).seconds);
    withoutSequences.push((await suiteRun(['--grep-invert', 'random histories'])).seconds);
  }
  const longestHold = Math.max(...readSettings({}).billingHoldsMs, readSettings({}).billingMinuteHoldMs) / 1000;
  const floor = median(floors) + longestHold;
  return {
    suiteSeconds: +median(suites).toFixed(2),
    suiteRunsSeconds: suites.map((s) => +s.toFixed(2)),
    emptyTestSeconds: +median(floors).toFixed(2),
    longestHoldSeconds: longestHold,
    ratio: +(median(suites) / floor).toFixed(2),
    goal: '<= 1.5',
    withoutSequencesSeconds: +median(withoutSequences).toFixed(2),
    sequencesAddSeconds: +(median(suites) - median(withoutSequences)).toFixed(2),
    sequencesGoal: '<= 3 s',
  };
}

/** An empty Playwright test, run as the suite is: the part of every run that is Playwright's own. */
function emptySuite(): string {
  const empty = mkdtempSync(path.join(os.tmpdir(), 'empty-suite-'));
  writeFileSync(path.join(empty, 'empty.spec.ts'), "import { test } from '@playwright/test';\ntest('empty', () => {});\n");
  writeFileSync(
    path.join(empty, 'playwright.config.ts'),
    `export default { reporter: 'line', outputDir: ${JSON.stringify(path.join(empty, 'test-results'))} };\n`,
  );
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(empty, 'node_modules'));
  return path.join(empty, 'playwright.config.ts');
}

/** `npm run conformance` as users run it, against the embedded reference, its phases as it prints them; five runs interleaved with the floor's. */
async function command() {
  const config = emptySuite();
  const floors: number[] = [];
  const runs: { seconds: number; phases: Record<string, number> }[] = [];
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    if ((await runCommand(PLAYWRIGHT, ['test', '-c', config], isolatedEnv({}))).code !== 0) throw new Error('the empty test failed');
    floors.push((performance.now() - started) / 1000);
    const began = performance.now();
    const { code, log } = await runCommand(
      'npm',
      ['run', '--silent', 'conformance'],
      isolatedEnv({ REPORTS_DIR: mkdtempSync(path.join(os.tmpdir(), 'bench-command-')) }),
    );
    if (code !== 0) throw new Error(`npm run conformance failed:\n${log.slice(-2000)}`);
    const line = /Took [\d.]+ s: (.*)\./.exec(log)?.[1];
    if (!line) throw new Error('npm run conformance printed no phases');
    runs.push({
      seconds: (performance.now() - began) / 1000,
      phases: Object.fromEntries(
        line
          .replace(/ \([^)]*\)/g, '')
          .split(', ')
          .map((part) => [part.split(' ')[0], Number(part.split(' ')[1])]),
      ),
    });
  }
  const floor = median(floors) + Math.max(...readSettings({}).billingHoldsMs, readSettings({}).billingMinuteHoldMs) / 1000;
  const seconds = median(runs.map((run) => run.seconds));
  const phases = Object.fromEntries(Object.keys(runs[0].phases).map((phase) => [phase, +median(runs.map((run) => run.phases[phase])).toFixed(2)]));
  return {
    seconds: +seconds.toFixed(2),
    runsSeconds: runs.map((run) => +run.seconds.toFixed(2)),
    phases,
    emptyTestSeconds: +median(floors).toFixed(2),
    floorSeconds: +floor.toFixed(2),
    ratio: +(seconds / floor).toFixed(2),
    goal: '<= 2 and under 10 s',
  };
}

/** Runs a command with every Node process it starts accounted (bench/cpu-account.cjs): its wall time, exit code and processes. */
async function accounted(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ seconds: number; code: number; log: string; processes: { cpuSeconds: number; owner?: string; what: string }[] }> {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'bench-cpu-')), 'processes.jsonl');
  const preload = `--require ${path.join(__dirname, 'cpu-account.cjs')}`;
  const started = performance.now();
  const { code, log } = await runCommand(command, args, { ...env, NODE_OPTIONS: `${env.NODE_OPTIONS ?? ''} ${preload}`.trim(), CPU_ACCOUNT_FILE: file });
  const processes = existsSync(file)
    ? readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line))
    : [];
  return { seconds: (performance.now() - started) / 1000, code, log, processes };
}

/** What kind of process a command line is, for the CPU table. */
function kindOf(what: string): string {
  if (what.includes('workerProcessEntry')) return 'Playwright workers';
  if (/playwright(\/test)?\/cli\.js test|\.bin\/playwright test/.test(what)) return 'Playwright runners';
  if (/allure\/cli\.js/.test(what)) return 'Allure report builds';
  if (/stop-session-conformance|scripts\/cli\.ts|embedded\.ts/.test(what)) return 'the command and its embedded reference';
  if (what.endsWith('.test.ts')) return 'the self-test files (with their servers)';
  return 'npm, npx, tsx and the rest';
}

/**
 * Where npm test's CPU time goes, by kind of process and by self-test file, against one
 * \`npm run conformance\` (median of 3) measured the same way. On two cores shared with another
 * npm test, each gets about one core: npm test's CPU seconds are then about its wall time.
 */
async function selftestCpu() {
  const sum = (processes: { cpuSeconds: number }[]) => processes.reduce((total, p) => total + p.cpuSeconds, 0);
  const baselines: number[] = [];
  for (let i = 0; i < 3; i++) {
    const run = await accounted(
      'npm',
      ['run', '--silent', 'conformance', '--', '--no-allure'],
      isolatedEnv({ REPORTS_DIR: mkdtempSync(path.join(os.tmpdir(), 'bench-cpu-run-')) }),
    );
    if (run.code !== 0) throw new Error(`npm run conformance failed:\n${run.log.slice(-2000)}`);
    baselines.push(sum(run.processes));
  }
  // As CI runs it: none of the settings the self-tests' own runs are given.
  const env = isolatedEnv({ CI: 'true' });
  delete env.SEQUENCE_SECONDS;
  delete env.SEQUENCE_BUDGET;
  const gate = await accounted('npm', ['test'], env);
  const total = sum(gate.processes);
  const group = (key: (p: { owner?: string; what: string }) => string) => {
    const groups: Record<string, { cpuSeconds: number; processes: number }> = {};
    for (const p of gate.processes) {
      const entry = (groups[key(p)] ??= { cpuSeconds: 0, processes: 0 });
      entry.cpuSeconds += p.cpuSeconds;
      entry.processes += 1;
    }
    return Object.fromEntries(
      Object.entries(groups)
        .sort(([, a], [, b]) => b.cpuSeconds - a.cpuSeconds)
        .map(([name, g]) => [name, { cpuSeconds: +g.cpuSeconds.toFixed(1), processes: g.processes }]),
    );
  };
  return {
    exitCode: gate.code,
    wallSeconds: +gate.seconds.toFixed(1),
    cpuSeconds: +total.toFixed(1),
    processes: gate.processes.length,
    baselineCpuSeconds: +median(baselines).toFixed(2),
    ratio: +(total / median(baselines)).toFixed(1),
    byKind: group((p) => kindOf(p.what)),
    byFile: group((p) => p.owner ?? 'npm test itself'),
    goal: 'under 300 CPU-s: about its wall time beside another npm test on two cores',
  };
}

/**
 * The whole command (no Allure) against the reference served as an external target with three
 * keys, without a cap and with caps of 1, 2 and 4 live sessions per team (429 without Retry-After
 * beyond), in rounds so that each cap meets the same machine: verdict, median wall time, its ratio
 * to the uncapped target's, and the cap each run learnt.
 */
async function caps() {
  const caps = [0, 1, 2, 4];
  const runs = new Map(caps.map((cap) => [cap, [] as { seconds: number; code: number; verdict: string; learnt?: number }[]]));
  for (let round = 0; round < 3; round++) {
    for (const cap of caps) {
      const server = await createReferenceServer(cap ? capsSessions(cap, false) : {});
      const reports = mkdtempSync(path.join(os.tmpdir(), 'bench-caps-'));
      const started = performance.now();
      try {
        const { code } = await runCommand(
          process.execPath,
          [path.join(ROOT, 'bin', 'stop-session-conformance.js'), 'run', '--no-allure'],
          isolatedEnv({
            BASE_URL: server.url,
            API_KEY: owner.keys[0],
            FOREIGN_API_KEY: foreign.keys[0],
            BURST_API_KEY: burstTeam.keys[0],
            REPORTS_DIR: reports,
          }),
        );
        const summary = JSON.parse(readFileSync(path.join(reports, 'conformance-summary.json'), 'utf8'));
        runs.get(cap)!.push({ seconds: (performance.now() - started) / 1000, code, verdict: summary.verdict, learnt: summary.sessionCap?.cap });
        if (server.activeSessions().length) throw new Error(`a cap of ${cap}: ${server.activeSessions().length} sessions left running`);
      } finally {
        await server.close();
      }
    }
  }
  const uncapped = median(runs.get(0)!.map((run) => run.seconds));
  return {
    target: 'the reference as an external target, three keys; beyond the cap, 429 without Retry-After; 3 rounds',
    byCap: Object.fromEntries(
      caps.map((cap) => {
        const list = runs.get(cap)!;
        const seconds = median(list.map((run) => run.seconds));
        return [
          cap || 'none',
          {
            verdicts: [...new Set(list.map((run) => `${run.verdict} (exit ${run.code})`))],
            medianSeconds: +seconds.toFixed(1),
            ratio: +(seconds / uncapped).toFixed(2),
            learnt: list.map((run) => run.learnt ?? 'none'),
          },
        ];
      }),
    ),
  };
}

async function burst() {
  const reference = await serve('reference', 50);
  try {
    const requests = 200;
    const { report } = await suiteRun(['tests/rules/06-rate-limit.spec.ts'], {
      BASE_URL: reference.url,
      API_KEY: owner.keys[0],
      FOREIGN_API_KEY: foreign.keys[0],
      BURST_REQUESTS: String(requests),
    });
    const [suite] = attachments(report, 'burst answers by status');
    if (!suite) throw new Error('no burst attachment in the report');
    await sleep(1100); // a fresh rate-limit window for autocannon
    const cannon = await autocannon({
      url: `${reference.url}/v2/scrape/${UUID}/interact`,
      method: 'DELETE',
      headers: { authorization: `Bearer ${owner.keys[0]}` },
      connections: requests,
      amount: requests,
    });
    const cannonSeconds = (new Date(cannon.finish).getTime() - new Date(cannon.start).getTime()) / 1000;
    const suiteRps = suite.requests / (suite.durationMs / 1000);
    const cannonRps = requests / cannonSeconds;
    return {
      requests,
      suiteMs: suite.durationMs,
      suiteCounts: suite.counts,
      autocannonMs: Math.round(cannonSeconds * 1000),
      ratio: +(suiteRps / cannonRps).toFixed(2),
      goal: '>= 0.5 and 200 requests within 1000 ms',
    };
  } finally {
    reference.child.kill();
  }
}

async function timingPrecision() {
  // Five ordinary runs of the whole suite, three billing intervals each.
  const widths: number[] = [];
  for (let run = 0; run < 5; run++) {
    const intervals = attachments((await suiteRun([])).report, 'measured interval');
    if (intervals.length !== 3) throw new Error(`expected 3 measured intervals in a run's report, found ${intervals.length}`);
    widths.push(...intervals.map((interval) => interval.hiMs - interval.loMs));
  }
  widths.sort((a, b) => a - b);
  const biases = [5, 10, 15, 20, 25, 30, 40, 50, 75, 100].flatMap((ms) => [ms, -ms]);
  const variants: Variant[] = biases.map((bias) => ({
    name: `bias${bias}`,
    breaks: 'billing',
    description: `reports sessionDurationMs ${bias} ms off`,
    options: durationOffBy(bias),
  }));
  // Four variants at a time, so that the machine is about as busy as in a normal run.
  const detected = new Map<number, boolean>();
  for (let i = 0; i < variants.length; i += 4) {
    const run = await runMatrix(variants.slice(i, i + 4));
    for (const r of run.results) detected.set(Number(r.variant.name.slice(4)), r.caughtBy.includes('billing'));
  }
  const magnitudes = [...new Set(biases.map(Math.abs))];
  const smallest = magnitudes.find((ms) => magnitudes.filter((m) => m >= ms).every((m) => detected.get(m) && detected.get(-m)));
  return {
    intervals: widths.length,
    medianIntervalWidthMs: +median(widths).toFixed(2),
    intervalWidthsMs: widths.map((width) => +width.toFixed(1)),
    widthGoal: '<= 5 ms',
    detectedBiases: Object.fromEntries([...detected].sort(([a], [b]) => a - b)),
    smallestDetectedBiasMs: smallest,
    biasGoal: '<= 50 ms',
  };
}

/**
 * How often the sequences rule, with its defaults, catches each order-only fault served as an
 * external target that allows 50 requests a second per team (as users run it): over ten seeds,
 * two variants at a time. Also how long each run took and what its summary line said.
 */
async function sequences() {
  const faults = [...orderFaults, ...rarerOrderFaults];
  const seeds = Array.from({ length: Number(process.env.BENCH_SEEDS ?? 10) }, (_, i) => String(101 + i));
  const caught = new Map(faults.map((variant) => [variant.name, 0]));
  const seconds = new Map(faults.map((variant) => [variant.name, [] as number[]]));
  const shortest = new Map<string, string>();
  const jobs = faults.flatMap((variant) => seeds.map((seed) => ({ variant, seed })));
  const worker = async () => {
    for (let job = jobs.shift(); job; job = jobs.shift()) {
      const server = await createReferenceServer({ rateLimit: { limit: 50, windowMs: 1000 }, ...job.variant.options });
      const reports = mkdtempSync(path.join(os.tmpdir(), 'bench-sequences-'));
      const started = performance.now();
      try {
        await runCommand(
          process.execPath,
          [path.join(ROOT, 'bin', 'stop-session-conformance.js'), '--no-allure', '--rule', 'sequences'],
          isolatedEnv({
            BASE_URL: server.url,
            API_KEY: owner.keys[0],
            FOREIGN_API_KEY: foreign.keys[0],
            ALLOW_INSECURE_HTTP: '1',
            SEQUENCE_SEED: job.seed,
            SEQUENCE_SECONDS: '',
            SEQUENCE_BUDGET: '',
            REPORTS_DIR: reports,
          }),
        );
        seconds.get(job.variant.name)!.push(+((performance.now() - started) / 1000).toFixed(1));
        const summary = JSON.parse(readFileSync(path.join(reports, 'conformance-summary.json'), 'utf8'));
        const test = summary.rules.sequences.tests[0];
        if (test.outcome === 'fail') caught.set(job.variant.name, caught.get(job.variant.name)! + 1);
        // The failure's note holds the shrunk history whole, its lines as printed.
        const history = /A history of (\d+) steps breaks the model[^\n]*\n(?:.*\n)*?(?=Found)/.exec(test.note ?? '');
        if (history && (!shortest.has(job.variant.name) || Number(history[1]) < Number(/\d+/.exec(shortest.get(job.variant.name)!)![0])))
          shortest.set(job.variant.name, history[0].trim());
        console.log(`sequences: ${job.variant.name} seed ${job.seed}: ${test.outcome} in ${seconds.get(job.variant.name)!.at(-1)} s`);
      } finally {
        await server.close();
      }
    }
  };
  await Promise.all([worker(), worker()]);
  return {
    target: 'each variant served as an external target, 50 requests a second per team; --rule sequences with its defaults',
    seeds: seeds.length,
    caught: Object.fromEntries(caught),
    medianSeconds: Object.fromEntries([...seconds].map(([name, values]) => [name, median(values)])),
    shortestCounterexample: Object.fromEntries(shortest),
    required: orderFaults.map((v) => v.name),
    goal: 'every required one in at least 9 of 10 seeds',
  };
}

/** Both servers run at once in their own processes; rounds alternate between them and the median ratio counts. */
async function throughput() {
  const [reference, bare] = [await serve('reference'), await serve('bare')];
  try {
    const results: Record<string, unknown> = {};
    for (const [label, headers] of [
      ['404 path', { authorization: `Bearer ${owner.keys[0]}` }],
      ['401 path', {}],
    ] as const) {
      const hit = async (url: string, seconds: number) => {
        const result = await autocannon({
          url: `${url}/v2/scrape/${UUID}/interact`,
          method: 'DELETE',
          headers,
          connections: 10,
          pipelining: 10,
          duration: seconds,
        });
        if (result.non2xx !== result.requests.total || result.errors) throw new Error(`${url} ${label}: unexpected answers`);
        return { rps: result.requests.average, p99Ms: result.latency.p99 };
      };
      await hit(reference.url, 1);
      await hit(bare.url, 1);
      const rounds: { reference: { rps: number; p99Ms: number }; bare: { rps: number; p99Ms: number } }[] = [];
      for (let round = 0; round < 12; round++) {
        const first = round % 2 ? await hit(bare.url, 1) : await hit(reference.url, 1);
        const second = round % 2 ? await hit(reference.url, 1) : await hit(bare.url, 1);
        rounds.push(round % 2 ? { reference: second, bare: first } : { reference: first, bare: second });
      }
      const ratios = rounds.map((r) => r.reference.rps / r.bare.rps);
      results[label] = {
        referenceRps: Math.round(median(rounds.map((r) => r.reference.rps))),
        bareRps: Math.round(median(rounds.map((r) => r.bare.rps))),
        ratio: +median(ratios).toFixed(2),
        ratios: ratios.map((r) => +r.toFixed(2)),
        goal: '>= 0.8',
      };
    }
    return results;
  } finally {
    reference.child.kill();
    bare.child.kill();
  }
}

(async () => {
  const only = process.argv[2];
  const file = path.join(ROOT, 'docs', 'bench.json');
  let bench: Record<string, unknown> = {};
  try {
    bench = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    // first run
  }
  Object.assign(bench, { date: new Date().toISOString().slice(0, 10), cores: os.cpus().length, node: process.version });
  const parts: [string, () => Promise<unknown>][] = [
    ['throughput', throughput],
    ['burst', burst],
    ['timing', timingPrecision],
    ['sequences', sequences],
    ['suite', suiteOverhead],
    ['command', command],
    ['caps', caps],
    ['selftest', selftestCpu],
  ];
  for (const [name, run] of parts) {
    if (only && only !== name) continue;
    bench[name] = await run();
    console.log(name, JSON.stringify(bench[name], null, 2));
  }
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(bench, null, 2));
  writeFileSync(path.join(ROOT, 'docs', 'performance.md'), renderPerformance(bench));
  console.log('written docs/bench.json and docs/performance.md');
})();
