// Preloaded into every Node process of a measured run (NODE_OPTIONS=--require): at its exit, each
// process appends its CPU time, what it ran, and the self-test file it serves (passed down to its
// children through the environment) to CPU_ACCOUNT_FILE. See selftestCpu in bench/run.ts.
const { appendFileSync } = require('node:fs');
const path = require('node:path');

const file = process.env.CPU_ACCOUNT_FILE;
if (file) {
  const script = process.argv[1] ?? '';
  if (script.endsWith('.test.ts')) process.env.CPU_ACCOUNT_OWNER = path.basename(script);
  process.on('exit', () => {
    const { user, system } = process.cpuUsage();
    const what = process.argv.slice(1).join(' ').replace(/\s+/g, ' ').slice(0, 300);
    appendFileSync(file, `${JSON.stringify({ cpuSeconds: (user + system) / 1e6, owner: process.env.CPU_ACCOUNT_OWNER, what })}\n`);
  });
}
