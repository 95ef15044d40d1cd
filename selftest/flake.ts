/**
 * Flake check: runs the suite N times (default 20) against the embedded reference, once idle
 * and once with both cores kept busy by a spinning process, and reports failures per run.
 * Usage: npm run flake [-- N]
 */
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { isolatedEnv, ROOT, runCommand } from './matrix';

const runs = Number(process.argv[2] ?? 20);

async function series(label: string): Promise<{ failures: number; seconds: number[] }> {
  const seconds: number[] = [];
  let failures = 0;
  for (let i = 1; i <= runs; i++) {
    const started = performance.now();
    const { code, log } = await runCommand(path.join(ROOT, 'node_modules', '.bin', 'playwright'), ['test', '--reporter=line'], isolatedEnv({}));
    seconds.push((performance.now() - started) / 1000);
    if (code !== 0) {
      failures += 1;
      console.log(
        `${label} run ${i}: exit ${code}\n${log
          .split('\n')
          .filter((line) => /✘|Error|fail/i.test(line))
          .slice(0, 10)
          .join('\n')}`,
      );
    }
  }
  const median = [...seconds].sort((a, b) => a - b)[Math.floor(seconds.length / 2)];
  console.log(`${label}: ${failures} of ${runs} runs failed; median ${median.toFixed(1)} s per run`);
  return { failures, seconds };
}

(async () => {
  const idle = await series('idle');
  const spinners = Array.from({ length: os.cpus().length }, () => spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));
  const loaded = await series('both cores loaded').finally(() => {
    for (const spinner of spinners) spinner.kill();
  });
  process.exit(idle.failures + loaded.failures ? 1 : 0);
})();
