/**
 * Writes a failed test's reproduction: `<reports>/reproductions/<rule>/<test>.mjs`, one file that
 * Node 18 or later runs with no package beside it. It holds the test's trace and the checks that
 * failed (plan.ts), above the runner (runner.ts) bundled with the checks and the schemas.
 * Nothing is written that carries a registered key in any form.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Failure } from '../checks/failure';
import { RunError } from '../config/errors';
import type { Settings } from '../config/settings';
import { redact } from '../http/redact';
import { type Plan, planLine, reproductionFile, targetOf } from './plan';
import { answerRefs, type Serialized, type Trace, type TraceStep } from './trace';

let runner: Promise<string> | undefined;

/** The runner, bundled once per process. */
function bundledRunner(): Promise<string> {
  runner ??= (async () => {
    const { build } = await import('esbuild');
    const result = await build({
      entryPoints: [path.join(__dirname, 'standalone.ts')],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node18',
      minify: true,
      legalComments: 'none',
      write: false,
      logLevel: 'silent',
      banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
    });
    return result.outputFiles[0].text;
  })();
  return runner;
}

export interface Reproducible {
  testId: string;
  title: string;
  trace: Trace;
  failures: Failure[];
  /** In place of `<reports>/reproductions`. */
  folder?: string;
}

/** The plan of a failed test's reproduction, or undefined when no failed check can be run again. */
export function planFor(settings: Settings, { testId, title, trace, failures }: Omit<Reproducible, 'folder'>): Plan | undefined {
  const composed = failures.find((failure) => failure.composed);
  const own = failures.filter((failure) => failure.call);
  if (!composed && !own.length) return undefined;
  return {
    test: testId,
    title,
    // A check of the whole run replays what it found in other tests' requests; any other, the test's own.
    steps: composed ? (composed.composed!.steps as TraceStep[]) : trace.steps,
    checks: composed
      ? composed.composed!.checks.map(({ judge, args }) => ({ check: composed.check, judge, args: args as Serialized[], message: composed.message }))
      : own.map(({ check, judge, call, message, outcome }) => ({
          check,
          judge,
          args: call!.args.map((arg) => trace.serialize(arg)),
          message,
          ...(outcome === 'declared' ? { deviation: true as const } : {}),
        })),
    schemeWordIgnored: settings.declaredSchemeWord !== undefined,
    limits: { requestTimeoutMs: settings.requestTimeoutMs, maxBodyBytes: settings.maxBodyBytes, backoffBudgetMs: settings.backoffBudgetMs },
  };
}

/** Writes the reproduction and returns its path, or undefined when no failed check can be run again. */
export async function writeReproduction(settings: Settings, reproducible: Reproducible): Promise<string | undefined> {
  const { testId, title, folder } = reproducible;
  const planned = planFor(settings, reproducible);
  if (!planned) return undefined;
  const plan: Plan = { ...planned, made: { target: targetOf(settings), at: new Date().toISOString() } };
  const file = folder ? `${path.join(folder, ...testId.split('/'))}.mjs` : reproductionFile(settings.reportsDir, testId);
  const text = [
    `// Reproduction of ${testId}: ${title}`,
    '// The same requests, by the same callers, with the same pauses, then the same checks with the same bounds.',
    `// Run it: BASE_URL=<target> API_KEY=<key> FOREIGN_API_KEY=<other team's key>${plan.steps.some((step) => step.as === 'burst') ? " BURST_API_KEY=<third team's key>" : ''} node ${path.basename(file)}`,
    '// Node 18 or later, no packages. Exit 1: the fault shows; 0: it does not; 2: could not tell.',
    `// Made against ${plan.made!.target} at ${plan.made!.at}.`,
    '// Every reproduction of a run: npx stop-session-conformance replay <reports folder>',
    planLine(plan),
    await bundledRunner(),
  ].join('\n');
  if (redact(text) !== text) throw new RunError(`the reproduction of ${testId} would carry a key: not written`);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
  return file;
}

const SHELL_SAFE = /^[\w./%-]*$/;

/** A curl line, with the key as $API_KEY, where one request that needs no earlier one shows the fault; else undefined. */
export function curlLine({ trace, failures }: Reproducible): string | undefined {
  if (failures.some((failure) => !failure.call)) return undefined;
  const steps = answerRefs(failures.map(({ call }) => call!.args.map((arg) => trace.serialize(arg))));
  if (steps.length !== 1) return undefined;
  const step = trace.steps[steps[0]];
  const created = trace.steps.flatMap((earlier) => (earlier.createdJob ? [earlier.createdJob.toLowerCase()] : []));
  if (created.some((jobId) => step.path.toLowerCase().includes(jobId)) || step.data !== undefined || !SHELL_SAFE.test(step.path)) return undefined;
  const header =
    step.as === 'owner'
      ? ' -H "Authorization: Bearer $API_KEY"'
      : step.as === 'foreign'
        ? ' -H "Authorization: Bearer $FOREIGN_API_KEY"'
        : step.as === 'noKey'
          ? ''
          : undefined;
  return header === undefined ? undefined : `curl -sS -X ${step.method}${header} "$BASE_URL${step.path}"`;
}
