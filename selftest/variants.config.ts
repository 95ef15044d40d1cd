/**
 * Playwright configuration for running the suite against many reference variants at once:
 * one project per variant, aimed at its own server.
 * The variant servers are started by selftest/matrix.ts, which passes their addresses in
 * SELFTEST_TARGETS.
 */
import path from 'node:path';
import { defineConfig } from '@playwright/test';
import type { Target } from '../tests/support/fixtures';
import { RULES, type RuleId } from '../tests/support/rules';

/** `only`: run just that rule's spec file against the variant. */
const targets: { name: string; url: string; only?: RuleId }[] = JSON.parse(process.env.SELFTEST_TARGETS ?? '[]');
// Each variant has its own server and runs its tests one at a time, so its burst needs no
// "-exclusive-" lock (which would hold every other variant back while it runs).
process.env.CONFORMANCE_BURST_ALONE = 'false';
const output = process.env.SELFTEST_OUTPUT ?? path.join(__dirname, '..', 'reports', 'selftest');

export default defineConfig<{ target: Target }>({
  outputDir: path.join(output, 'test-results'),
  fullyParallel: true,
  workers: Number(process.env.SELFTEST_WORKERS ?? 8),
  retries: 0,
  timeout: 60_000,
  reporter: [['json', { outputFile: path.join(output, 'report.json') }]],
  use: { trace: 'off', screenshot: 'off', video: 'off' },
  // Embedded: the fixture derives the keys from fixtures/teams.json, so none is in the config reporters print.
  // One worker per variant: a worker serves one project, so more would mean more worker starts.
  projects: targets.map(({ name, url, only }) => ({
    name,
    testDir: path.join(__dirname, '..', 'tests', 'rules'),
    testMatch: only ? path.basename(RULES[only].file) : undefined,
    workers: 1,
    use: { target: { baseURL: url, embedded: true } satisfies Target },
  })),
});
