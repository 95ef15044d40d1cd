/**
 * Playwright configuration for running the suite against many reference variants at once: one
 * project per variant, aimed at its own server (selftest/matrix.ts starts them and passes their
 * addresses in SELFTEST_TARGETS). SELFTEST_PART picks the burst's file or every other file: each
 * burst waits about a second for its limiter to recover, in a worker a variant would otherwise keep
 * for all its rules, so the matrix runs the bursts in other Playwright processes beside the first.
 */
import path from 'node:path';
import { defineConfig } from '@playwright/test';
import type { Target } from '../tests/support/target';
import { RULES, type RuleId } from '../tests/support/rules';

/** `rules`: the spec files to run against the variant (all when absent); `seeds`, `runs`: of the sequences rule. */
const targets: { name: string; url: string; rules?: RuleId[]; seeds?: number[]; runs?: number }[] = JSON.parse(process.env.SELFTEST_TARGETS ?? '[]');
const burstFile = path.basename(RULES['rate-limit'].file);
/** `rest`, or `burst-<n>`: the bursts are split among several processes, one burst at a time in each. */
const part = process.env.SELFTEST_PART ?? 'rest';
const bursts = part.startsWith('burst');
const output = process.env.SELFTEST_OUTPUT ?? path.join(__dirname, '..', 'reports', 'selftest');

export default defineConfig<object, { target: Target; sequenceSeeds: number[]; sequenceRuns: number; keepWorkerOnFailure: boolean }>({
  outputDir: path.join(output, `test-results-${part}`),
  fullyParallel: true,
  workers: Number(process.env.SELFTEST_WORKERS ?? 8),
  retries: 0,
  // The slowest correct variant (answers 40 ms late) runs its sequences rule with three seeds in 21 s on an idle runner, and over 60 s on a busy one.
  timeout: 90_000,
  reporter: [['json', { outputFile: path.join(output, `report-${part}.json`) }]],
  use: { trace: 'off', screenshot: 'off', video: 'off' },
  // Embedded: the fixture reads the keys from fixtures/teams.json, so none is in the config reporters print.
  // One worker per variant: a worker serves one project, so more would mean more worker starts.
  projects: targets.map(({ name, url, rules, seeds, runs }) => {
    const files = (rules ?? (Object.keys(RULES) as RuleId[])).map((rule) => path.basename(RULES[rule].file));
    const testMatch = files.filter((file) => bursts === (file === burstFile));
    return {
      name,
      testDir: path.join(__dirname, '..', 'tests', 'rules'),
      testMatch: testMatch.length ? testMatch : ['nothing-to-run'],
      workers: 1,
      use: { target: { baseURL: url, embedded: true } satisfies Target, keepWorkerOnFailure: true, ...(seeds ? { sequenceSeeds: seeds } : {}), ...(runs ? { sequenceRuns: runs } : {}) },
    };
  }),
});
