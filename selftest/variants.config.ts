/**
 * Playwright configuration for running the suite against many reference variants at once.
 * selftest/matrix.ts starts a server per variant and writes, per variant, spec files that aim
 * the rules' tests at it (the target is an option of each test), so that a few workers serve
 * every variant: a worker costs about half a second of CPU to start. SELFTEST_SPECS names the
 * files this process runs: bursts run one at a time in a run (their lock), so the matrix splits
 * them between two more Playwright processes beside the first; SELFTEST_PART names each
 * process's report.
 */
import path from 'node:path';
import { defineConfig } from '@playwright/test';

/** The spec files this part runs, written by selftest/matrix.ts. */
const specs: string[] = JSON.parse(process.env.SELFTEST_SPECS ?? '[]');
const part = process.env.SELFTEST_PART ?? 'rest';
const output = process.env.SELFTEST_OUTPUT ?? path.join(__dirname, '..', 'reports', 'selftest');

export default defineConfig<object, { keepWorkerOnFailure: boolean }>({
  testDir: path.join(output, 'specs'),
  testMatch: specs.length ? specs : ['nothing-to-run'],
  outputDir: path.join(output, `test-results-${part}`),
  fullyParallel: true,
  workers: Number(process.env.SELFTEST_WORKERS ?? 8),
  retries: 0,
  // The slowest correct variant (answers 40 ms late) runs its sequences rule with three seeds in 21 s on an idle runner, and over 60 s on a busy one.
  timeout: 90_000,
  reporter: [['json', { outputFile: path.join(output, `report-${part}.json`) }]],
  // Embedded: the fixture reads the keys from fixtures/teams.json, so none is in the config reporters print.
  use: { trace: 'off', screenshot: 'off', video: 'off', keepWorkerOnFailure: true },
});
