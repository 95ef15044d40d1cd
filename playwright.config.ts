import { defineConfig } from '@playwright/test';
import { readSettingsOrExit } from './tests/support/config';
import { version } from './package.json';

const settings = readSettingsOrExit();

export default defineConfig({
  testDir: 'tests',
  outputDir: 'reports/test-results',
  fullyParallel: true,
  // Three: the tests mostly wait on the target, and on two cores a fourth worker's start costs more than it saves.
  workers: 3,
  retries: 0,
  timeout: settings.testTimeoutMs,
  forbidOnly: !!process.env.CI,
  globalSetup: './tests/support/global-setup.ts',
  reporter: [
    ['list'],
    ['junit', { outputFile: 'reports/junit.xml' }],
    [
      'allure-playwright',
      {
        resultsDir: 'reports/allure-results',
        // Only the suite's own steps: Playwright's API-call steps carry its call log, which lists
        // request headers (the key included) verbatim when a request times out or fails.
        detail: false,
        environmentInfo: {
          target: settings.baseURL ?? 'embedded reference (ephemeral port)',
          embedded_reference: String(!settings.baseURL),
          known_deviations: settings.knownDeviationsFile ? settings.knownDeviationsFile.split(/[\\/]/).pop()! : 'none',
          suite_version: version,
          node: process.version,
        },
      },
    ],
    ['./tests/support/summary-reporter.ts', { outputFile: 'reports/conformance-summary.json' }],
  ],
  // Traces, screenshots and videos stay off: Playwright records request headers verbatim.
  use: { trace: 'off', screenshot: 'off', video: 'off' },
  projects: [{ name: 'rules', testDir: 'tests/rules' }],
});
