/**
 * Playwright configuration for running the suite against many reference variants at once:
 * one "rules" project and one "burst" project per variant, each aimed at its own server.
 * The variant servers are started by selftest/matrix.ts, which passes their addresses in
 * SELFTEST_TARGETS.
 */
import path from 'node:path';
import { defineConfig } from '@playwright/test';
import type { Target } from '../tests/support/fixtures';
import { RULES, type RuleId } from '../tests/support/rules';

/** `only`: run just that rule's spec file against the variant. */
const targets: { name: string; url: string; only?: RuleId }[] = JSON.parse(process.env.SELFTEST_TARGETS ?? '[]');
const output = process.env.SELFTEST_OUTPUT ?? path.join(__dirname, '..', 'reports', 'selftest');

export default defineConfig<{ target: Target }>({
  outputDir: path.join(output, 'test-results'),
  fullyParallel: true,
  workers: Number(process.env.SELFTEST_WORKERS ?? 8),
  retries: 0,
  timeout: 60_000,
  reporter: [['json', { outputFile: path.join(output, 'report.json') }]],
  use: { trace: 'off', screenshot: 'off', video: 'off' },
  projects: targets.flatMap(({ name, url, only }) => {
    // Embedded: the fixture derives the keys from fixtures/teams.json, so none is in the config reporters print.
    const target: Target = { baseURL: url, embedded: true };
    const tests = path.join(__dirname, '..', 'tests');
    // One worker per variant: a worker serves one project, so more would mean more worker starts.
    const project = (suffix: string, dir: string) => ({ name: `${name}${suffix}`, testDir: path.join(tests, dir), workers: 1, use: { target } });
    if (only) return [{ ...project('', path.dirname(RULES[only].file)), testMatch: path.basename(RULES[only].file) }];
    return [{ ...project('', 'rules'), teardown: `${name}:burst` }, project(':burst', 'burst')];
  }),
});
