/** The layout's rules, checked by npm test (selftest/suite.test.ts). */
// The library's layers, lowest first: each may import only from itself and the layers below it.
const LAYERS = ['config', 'http', 'checks', 'coordination', 'domain', 'sequences', 'reproduction', 'report', 'playwright'];
const above = (layer) => LAYERS.slice(LAYERS.indexOf(layer) + 1);

module.exports = {
  forbidden: [
    { name: 'no-cycles', severity: 'error', comment: 'Data flows one way: settings → target → client → sessions → rules → verdict.', from: {}, to: { circular: true } },
    { name: 'suite-never-imports-the-reference', severity: 'error', comment: 'The suite treats every target as a black box; the embedded one is started by playwright.config.ts, and the command serves it.', from: { path: '^(src|tests)/', pathNot: '^src/(cli|replay)\\.ts$' }, to: { path: '^reference/' } },
    ...LAYERS.slice(0, -1).map((layer) => ({
      name: `${layer}-imports-no-layer-above`,
      severity: 'error',
      comment: `src/${layer}/ may import only from ${LAYERS.slice(0, LAYERS.indexOf(layer) + 1).join(', ')}.`,
      from: { path: `^src/${layer}/` },
      to: { path: `^src/(${above(layer).join('|')})/|^src/[^/]+\\.ts$` },
    })),
    {
      name: 'only-the-glue-imports-playwright',
      severity: 'error',
      comment: 'Playwright is the glue layer\'s (src/playwright/); the library records its steps through src/checks/recorder.ts.',
      from: { path: '^src/', pathNot: '^src/playwright/' },
      to: { path: 'node_modules/(@playwright/test|playwright)/' },
    },
    { name: 'specs-import-the-library-only', severity: 'error', comment: 'A spec uses the library and the fixtures, never the command.', from: { path: '^tests/' }, to: { path: '^src/[^/]+\\.ts$' } },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
