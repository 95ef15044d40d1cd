// Allure Report 3 configuration for `npm run conformance` (allure generate --config allurerc.mjs).
import { defineConfig } from 'allure';

export default defineConfig({
  name: 'Stop interactive browser session — conformance',
  plugins: {
    awesome: {
      options: {
        // One self-contained index.html that opens from disk, e.g. as a CI artifact.
        singleFile: true,
        reportLanguage: 'en',
        groupBy: ['feature'],
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
        name: 'Suite or configuration error',
        matchers: [{ statuses: ['failed', 'broken'], message: /SuiteError|Configuration error|back-off budget/ }],
      },
      {
        name: 'Implementation defect',
        matchers: [{ statuses: ['failed', 'broken'] }],
      },
    ],
  },
});
