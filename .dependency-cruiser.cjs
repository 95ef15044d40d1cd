/** The layout's rules, checked by npm test (selftest/suite.test.ts). */
module.exports = {
  forbidden: [
    { name: 'no-cycles', severity: 'error', comment: 'Data flows one way: settings → target → client → sessions → rules → verdict.', from: {}, to: { circular: true } },
    { name: 'suite-never-imports-the-reference', severity: 'error', comment: 'The suite treats every target as a black box; the embedded one is started by playwright.config.ts.', from: { path: '^tests/' }, to: { path: '^reference/' } },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
