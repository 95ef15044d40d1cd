/**
 * Runs the conformance suite against a set of reference variants in one Playwright run and
 * reports, per variant, which rules failed and how many sessions were left running.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createReferenceServer, type ReferenceServer } from '../reference/server';
import type { Variant } from './variants';
import { firstLine } from '../tests/support/summary-reporter';

export interface VariantResult {
  variant: Variant;
  failedRules: string[];
  /** Title and first message line of each failed test. */
  failures: string[];
  passed: number;
  skipped: number;
  activeSessions: number;
  verdict: 'ok' | 'MISSED' | 'FALSE ALARM' | 'WRONG RULE';
}

export interface MatrixRun {
  results: VariantResult[];
  output: string;
  /** Everything the Playwright run printed. */
  log: string;
  durationMs: number;
}

export const ROOT = path.join(__dirname, '..');

/** Environment for a suite run that must not pick up a developer's .env or target. */
export function isolatedEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, CONFORMANCE_IGNORE_DOTENV: '1', FORCE_COLOR: '0' };
  for (const name of ['BASE_URL', 'API_KEY', 'FOREIGN_API_KEY', 'KNOWN_DEVIATIONS', 'CI']) delete env[name];
  return { ...env, ...extra };
}

export function runCommand(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; log: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: ROOT, env });
    let log = '';
    child.stdout.on('data', (chunk) => (log += chunk));
    child.stderr.on('data', (chunk) => (log += chunk));
    child.on('close', (code) => resolve({ code: code ?? 1, log }));
  });
}

/**
 * `full`: run every rule against every variant. Otherwise a faulty variant runs only the rule
 * named for it (enough to prove it is caught by that rule) and a correct one runs everything.
 */
export async function runMatrix(variants: Variant[], { full = false, env: extraEnv = {} }: { full?: boolean; env?: Record<string, string> } = {}): Promise<MatrixRun> {
  const started = performance.now();
  const output = mkdtempSync(path.join(os.tmpdir(), 'conformance-matrix-'));
  const servers: ReferenceServer[] = await Promise.all(variants.map((variant) => createReferenceServer({ rateLimit: { limit: 50, windowMs: 1000 }, ...variant.options })));
  try {
    const targets = variants.map((variant, index) => ({ name: variant.name, url: servers[index].url, only: full ? undefined : variant.breaks }));
    const { log } = await runCommand(
      path.join(ROOT, 'node_modules', '.bin', 'playwright'),
      ['test', '-c', 'selftest/variants.config.ts'],
      isolatedEnv({ SELFTEST_TARGETS: JSON.stringify(targets), SELFTEST_OUTPUT: output, BACKOFF_BUDGET_MS: '6000', REQUEST_TIMEOUT_MS: '10000', ...extraEnv }),
    );
    const byProject = readReport(path.join(output, 'report.json'), log);
    const results = variants.map((variant, index): VariantResult => {
      const tests = byProject.get(variant.name) ?? [];
      const failed = tests.filter((test) => test.status === 'failed');
      const failedRules = [...new Set(failed.map((test) => test.rule))].sort();
      const verdict = variant.breaks
        ? failedRules.includes(variant.breaks) ? 'ok' : failedRules.length ? 'WRONG RULE' : 'MISSED'
        : failed.length ? 'FALSE ALARM' : 'ok';
      return {
        variant,
        failedRules,
        failures: failed.map((test) => `${test.title}: ${test.message}`),
        passed: tests.filter((test) => test.status === 'passed').length,
        skipped: tests.filter((test) => test.status === 'skipped').length,
        activeSessions: servers[index].activeSessions().length,
        verdict,
      };
    });
    return { results, output, log, durationMs: performance.now() - started };
  } finally {
    await Promise.all(servers.map((server) => server.close()));
  }
}

interface TestOutcome {
  title: string;
  rule: string;
  status: 'passed' | 'failed' | 'skipped';
  message: string;
}

/** Test outcomes per project, from Playwright's JSON report. */
function readReport(file: string, log: string): Map<string, TestOutcome[]> {
  let report: any;
  try {
    report = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    throw new Error(`The suite run wrote no JSON report. Its output:\n${log.slice(-3000)}`);
  }
  const byProject = new Map<string, TestOutcome[]>();
  const visit = (suite: any) => {
    for (const spec of suite.specs ?? []) {
      for (const test of spec.tests) {
        const result = test.results.at(-1);
        const status = test.status === 'skipped' ? 'skipped' : test.status === 'expected' ? 'passed' : 'failed';
        const rule = test.annotations.find((a: { type: string }) => a.type === 'allure.label.rule')?.description ?? '?';
        const message = firstLine(result?.error?.message) ?? '';
        const list = byProject.get(test.projectName) ?? [];
        list.push({ title: spec.title, rule, status, message });
        byProject.set(test.projectName, list);
      }
    }
    for (const child of suite.suites ?? []) visit(child);
  };
  for (const suite of report.suites) visit(suite);
  return byProject;
}

export function renderMatrix(run: MatrixRun): string {
  const rows = run.results.map((r) => [
    r.variant.name,
    r.variant.breaks ? `fail ${r.variant.breaks}` : 'pass',
    r.failedRules.join(', ') || '-',
    String(r.activeSessions),
    r.verdict,
  ]);
  const header = ['variant', 'expected', 'rules that failed', 'left running', 'verdict'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]) => cells.map((cell, i) => cell.padEnd(widths[i])).join('  ');
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}
