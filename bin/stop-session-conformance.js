#!/usr/bin/env node
// The kit's command: loads its TypeScript sources through tsx (a dependency), then runs the CLI.
require('tsx/cjs');
require('../scripts/cli.ts');
