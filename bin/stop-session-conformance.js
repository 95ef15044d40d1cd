#!/usr/bin/env node
// The kit's command: loads its TypeScript sources through tsx (a dependency), then runs the CLI.
const path = require('node:path');

// The kit's own compiler options, not those of the project the command runs in (tsx would read
// the tsconfig.json of the working directory). Children (Playwright, its workers) inherit it.
process.env.TSX_TSCONFIG_PATH = path.join(__dirname, '..', 'tsconfig.json');
require('tsx/cjs');

// Installed as a package, the kit's sources lie under node_modules, where Playwright leaves
// TypeScript untransformed: its processes (runner and workers) preload tsx to compile them.
if (__dirname.split(path.sep).includes('node_modules')) {
  const preload = `--require ${JSON.stringify(require.resolve('tsx/cjs'))}`;
  if (!(process.env.NODE_OPTIONS ?? '').includes(preload)) process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} ${preload}`.trim();
}

// ESM hooks too, for the CLI's dynamic import() of the reference server.
import('tsx/esm').then(() => require('../src/cli.ts'));
