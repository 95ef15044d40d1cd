// Allure Report 3 configuration, used by src/report/allure-report.ts (allure generate --config allurerc.mjs).
import { defineConfig } from 'allure';

export default defineConfig({
  name: 'Stop interactive browser session — conformance',
  // Each run appends to the history, so the report shows every test's trend and marks flaky and
  // newly failing tests. Tests are keyed by their stable ids (historyId), not by their titles.
  historyPath: process.env.ALLURE_HISTORY_PATH ?? './reports/allure-history.jsonl',
  appendHistory: true,
  historyLimit: 50,
  plugins: {
    awesome: {
      options: {
        // One self-contained index.html that opens from disk, e.g. as a CI artifact.
        singleFile: true,
        reportLanguage: 'en',
        groupBy: ['feature'],
        // Groups and tests by name: the rules, numbered in two digits, in their order.
        defaultSortBy: 'name,asc',
      },
    },
  },
  categories: {
    rules: [
      {
        name: 'Known deviation',
        matchers: [{ labels: { knownDeviation: /.+/ } }],
      },
      {
        // Skipped in Allure's terms: the target's answers could not establish the fact either way.
        name: 'Not verifiable',
        matchers: [{ labels: { notVerifiable: /.+/ } }],
        // Such a test has no message (its reason is its description): no "No message" group.
        groupByMessage: false,
      },
      {
        name: 'Error of the run',
        matchers: [
          { statuses: ['failed', 'broken'], message: /RunError|Test timeout of|Configuration error|back-off budget|worker process exited unexpectedly/ },
        ],
      },
      {
        name: 'Implementation defect',
        matchers: [{ statuses: ['failed', 'broken'] }],
      },
    ],
  },
});
