import path from 'node:path';
import { defineConfig } from '@playwright/test';
import { version } from './package.json';
import { filesOf, RULE_IDS } from './src/config/rules';
import { loadSettingsOrExit } from './src/config/settings';
import { channel } from './src/coordination/run-folder';
import { predict } from './src/domain/budget';
import { burstHasOwnTeam, registerKeys } from './src/domain/target';
import type { SummaryOptions } from './src/playwright/summary-reporter';

const settings = loadSettingsOrExit();
// The reporters run here: what they write is redacted too.
registerKeys({ baseURL: settings.baseURL ?? '', embedded: settings.embedded }, settings);
// The burst on a team of its own runs beside the others, from the start: it holds and waits for its limit to recover.
const LONGEST = [
  '**/10-sequences.spec.ts',
  '**/01-owner-stop.spec.ts',
  '**/02-billing.spec.ts',
  ...(burstHasOwnTeam(settings) ? ['**/06-rate-limit.spec.ts'] : []),
];
/** Tests that judge the whole run (the account check), of the rules this run chose: a teardown of the project every other test depends on. */
const chosen = RULE_IDS.filter((rule) => !settings.selectedRules || settings.selectedRules.includes(rule));
const lastFiles = chosen.flatMap((rule) =>
  filesOf(rule)
    .slice(1)
    .map((file) => `**/${file}`),
);
// Tests that spend a team's limit come last of all, after the account's: they would delay it by a window.
const LAST = lastFiles.filter((file) => !file.endsWith('.last.spec.ts'));
const LAST_OF_ALL = lastFiles.filter((file) => file.endsWith('.last.spec.ts'));
const first = LAST.length ? ['the run'] : LAST_OF_ALL.length ? ['the whole run'] : [];
const target = settings.embedded ? 'embedded reference' : settings.baseURL!;
const prediction = predict(settings);

export default defineConfig({
  testDir: 'tests/rules',
  // Playwright's output folder holds nothing (traces, screenshots and videos are off): it lives in the run's working folder.
  outputDir: channel(settings.reportsDir, 'test-results'),
  fullyParallel: true,
  // The tests mostly wait on the target: seven at once, six of them for the longest (projects below).
  workers: 7,
  retries: 0,
  timeout: settings.testTimeoutMs,
  globalTimeout: settings.runTimeoutMs,
  forbidOnly: !!process.env.CI,
  // The embedded reference's setup comes first, so that its leak check runs after the suite's cleanup.
  globalSetup: [...(settings.embedded ? ['./reference/embedded.ts'] : []), './src/playwright/global-setup.ts'],
  // The summary reporter writes the console: a line per test with its id and outcome, then the verdict.
  reporter: [
    [
      'allure-playwright',
      {
        resultsDir: path.join(settings.reportsDir, 'allure-results'),
        // Only the suite's own steps: Playwright's own steps could carry request details verbatim.
        detail: false,
        environmentInfo: {
          target,
          embedded_reference: String(settings.embedded),
          known_deviations: settings.knownDeviationsFile ? path.basename(settings.knownDeviationsFile) : 'none',
          strict: String(settings.strict),
          burst: burstHasOwnTeam(settings) ? "a third team's limit, beside the other tests" : "the owner's limit, alone, last",
          suite_version: version,
          node: process.version,
        },
      },
    ],
    [
      './src/playwright/summary-reporter.ts',
      {
        reportsDir: settings.reportsDir,
        target,
        embedded: settings.embedded,
        strict: settings.strict,
        sessionCap: settings.sessionCap,
        rateLimit: settings.rateLimit,
        predicted: { sessions: prediction.sessions, scrapes: prediction.scrapes, credits: prediction.credits, budget: prediction.budget },
      } satisfies SummaryOptions,
    ],
  ],
  // The tests have no browser fixture (src/playwright/fixtures.ts), so nothing is traced; these stay off
  // all the same, should one be added: Playwright records request headers verbatim.
  use: { trace: 'off', screenshot: 'off', video: 'off' },
  // Playwright starts tests in the order of their projects, then of their files: the longest
  // (billing holds and rule 1's test on the short one, the sequences rule, a burst on a team of its own) go first, so that the run waits for nothing else. Two
  // workers run the other tests (one while six of the longest run, within the run's seven), which are short: a worker costs about half a second of CPU to
  // start, and more would end no sooner (against a remote target, the sequences rule's minute
  // outlasts them). Against a target whose clock is declared coarse, each chain of refusals holds its
  // session for seconds, and against a remote one each test waits on the network and on the target's
  // browser: four of them at once, within the run's seven workers.
  // The last project runs once every test of the others has ended, failed or not: Playwright runs a
  // project's teardown after all that depend on it, and 'the run' is an empty project for that alone.
  // 'the whole run' is empty too: its teardown, last of all, waits for every project under it, 'after the run' included.
  projects: [
    ...(LAST_OF_ALL.length ? [{ name: 'the whole run', testMatch: /^$/, teardown: 'last of all' }] : []),
    ...(LAST.length ? [{ name: 'the run', testMatch: /^$/, teardown: 'after the run', dependencies: LAST_OF_ALL.length ? ['the whole run'] : [] }] : []),
    { name: 'rules, longest first', testMatch: LONGEST, workers: 6, dependencies: first },
    {
      name: 'rules',
      testIgnore: [...LONGEST, '**/*.account.spec.ts', '**/*.last.spec.ts'],
      workers: settings.declaredClock || !settings.embedded ? 4 : 2,
      dependencies: first,
    },
    ...(LAST.length ? [{ name: 'after the run', testMatch: LAST, fullyParallel: false }] : []),
    ...(LAST_OF_ALL.length ? [{ name: 'last of all', testMatch: LAST_OF_ALL }] : []),
  ],
});
