/**
 * The fault classes a kit written from one implementation misses (identity per connection,
 * billing past a minute, sessions nobody asked for, a lockout at the third refusal), each served
 * as a remote target and met by the command with its defaults, several times; beside them correct
 * targets, whose wall time is compared with the same target met by another checkout of the kit
 * (`--baseline <dir>`, an earlier commit) in the same script.
 *
 *   npx tsx bench/fault-classes.ts [--runs 5] [--parallel 2] [--baseline <kit checkout>] [--only <variant,...>]
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createReferenceServer } from '../reference/server';
import { ROOT, runCommand } from '../selftest/matrix';
import { SECRETS } from '../selftest/secrets';
import { variants } from '../selftest/variants';
import type { Summary } from '../src/report/verdict';
import { renderPerformance } from './performance';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '5' }, parallel: { type: 'string', default: '2' }, baseline: { type: 'string' }, only: { type: 'string' } },
});
const CLASSES = [
  'keyless-rides-connection',
  'connection-keeps-first-team',
  'billing-started-minute-after-first',
  'refused-interact-opens-session',
  'third-foreign-refusal-ends-session',
];
const CORRECT = ['reference', 'connection-close'];
const chosen = values.only?.split(',') ?? [...CLASSES, ...CORRECT];

interface Run {
  variant: string;
  kit: 'this' | 'baseline';
  code: number;
  seconds: number;
  failed: string[];
  notPassing: string[];
}

/** The command as a user runs it against a remote target: defaults, no developer settings. */
function userEnv(baseURL: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, CONFORMANCE_IGNORE_DOTENV: '1', FORCE_COLOR: '0' };
  for (const name of Object.keys(env))
    if (/^(BASE_URL|API_KEY|FOREIGN_API_KEY|BURST_API_KEY|KNOWN_DEVIATIONS|STRICT|REPORTS_DIR|CI|SEQUENCE_.*|BILLING_.*|npm_.*)$/i.test(name)) delete env[name];
  return { ...env, BASE_URL: baseURL, API_KEY: SECRETS[0], FOREIGN_API_KEY: SECRETS[1], REPORTS_DIR: mkdtempSync(path.join(os.tmpdir(), 'fault-classes-')) };
}

async function once(variant: string, kit: Run['kit']): Promise<Run> {
  const found = variants.find((v) => v.name === variant);
  if (!found) throw new Error(`no variant ${variant}`);
  const server = await createReferenceServer(found.options);
  const root = kit === 'this' ? ROOT : path.resolve(values.baseline!);
  try {
    const env = userEnv(server.url);
    const started = performance.now();
    // The command's place: src/cli.ts, or scripts/cli.ts in a checkout from before the library's move.
    const cli = [path.join(root, 'src', 'cli.ts'), path.join(root, 'scripts', 'cli.ts')].find((file) => existsSync(file))!;
    const { code, log } = await runCommand(process.execPath, ['--import', 'tsx', cli, 'run'], env, root);
    const seconds = (performance.now() - started) / 1000;
    let summary: Summary | undefined;
    try {
      summary = JSON.parse(readFileSync(path.join(env.REPORTS_DIR!, 'conformance-summary.json'), 'utf8'));
    } catch {}
    const tests = Object.values(summary?.rules ?? {}).flatMap((rule) => rule.tests);
    if (!summary) console.log(`${variant} (${kit}): no verdict written:\n${log.slice(-1500)}`);
    return {
      variant,
      kit,
      code,
      seconds,
      failed: tests.filter((t) => t.outcome === 'fail').map((t) => t.id),
      notPassing: tests.filter((t) => t.outcome !== 'pass' && t.outcome !== 'fail').map((t) => `${t.id} ${t.outcome}`),
    };
  } finally {
    await server.close();
  }
}

(async () => {
  const jobs: [string, Run['kit']][] = [];
  for (let i = 0; i < Number(values.runs); i++) {
    for (const variant of chosen) {
      jobs.push([variant, 'this']);
      if (values.baseline && CORRECT.includes(variant)) jobs.push([variant, 'baseline']);
    }
  }
  const runs: Run[] = [];
  await Promise.all(
    Array.from({ length: Number(values.parallel) }, async () => {
      for (let job = jobs.shift(); job; job = jobs.shift()) {
        const run = await once(...job);
        runs.push(run);
        console.log(
          `${run.variant} (${run.kit}): exit ${run.code} in ${run.seconds.toFixed(1)} s; failed ${run.failed.join(', ') || 'nothing'}${run.notPassing.length ? `; ${run.notPassing.join(', ')}` : ''}`,
        );
      }
    }),
  );
  console.log('\nvariant | kit | runs | exit codes | caught by | median s');
  const figures: Record<string, { kit: string; runs: number; exitCodes: number[]; caughtBy: string[]; medianSeconds: number }[]> = {};
  for (const variant of chosen) {
    for (const kit of ['this', 'baseline'] as const) {
      const mine = runs.filter((run) => run.variant === variant && run.kit === kit);
      if (!mine.length) continue;
      const seconds = mine.map((run) => run.seconds).sort((a, b) => a - b);
      const figure = {
        kit,
        runs: mine.length,
        exitCodes: mine.map((run) => run.code),
        caughtBy: [...new Set(mine.flatMap((run) => run.failed))],
        medianSeconds: +seconds[Math.floor(seconds.length / 2)].toFixed(1),
      };
      (figures[variant] ??= []).push(figure);
      console.log(`${variant} | ${kit} | ${figure.runs} | ${figure.exitCodes.join(' ')} | ${figure.caughtBy.join(', ') || '-'} | ${figure.medianSeconds}`);
    }
  }
  // Into docs/bench.json and docs/performance.md, beside the other figures.
  const file = path.join(ROOT, 'docs', 'bench.json');
  const bench = JSON.parse(readFileSync(file, 'utf8'));
  bench.faultClasses = {
    date: new Date().toISOString().slice(0, 10),
    parallel: Number(values.parallel),
    baseline: values.baseline ? path.basename(path.resolve(values.baseline)) : undefined,
    variants: figures,
  };
  writeFileSync(file, `${JSON.stringify(bench, null, 2)}\n`);
  writeFileSync(path.join(ROOT, 'docs', 'performance.md'), renderPerformance(bench));
})();
