/**
 * The whole gate, as CI runs it, several times: each run clones the committed HEAD afresh and runs
 * `.ci/run` there (`npm ci`, then `npm test`). With --beside, another fresh clone, installed
 * beforehand, starts its `npm test` the moment the gate's own `npm test` starts, as on a busy shared
 * runner: the two run side by side from their first test. Prints each run's exit code, the time
 * `npm ci` and `npm test` took, and every failing test.
 *
 *   npm run flake:gate [-- <runs> [--beside]]     default: 5 runs, alone
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from './matrix';

const runs = Number(process.argv.slice(2).find((arg) => /^\d+$/.test(arg)) ?? 5);
const beside = process.argv.includes('--beside');

interface Gate {
  code: number;
  seconds: number;
  log: string;
  /** What node's test runner said of its own duration, and the tests that failed. */
  testSeconds?: number;
  failures: string[];
}

async function clone(): Promise<string> {
  const folder = mkdtempSync(path.join(os.tmpdir(), 'gate-'));
  const cloned = await run('git', ['clone', '--quiet', ROOT, folder], ROOT);
  if (cloned.code !== 0) throw new Error(`git clone of ${ROOT} failed`);
  return folder;
}

/** Runs a command; `onOutput` sees its output as it comes. */
function run(command: string, args: string[], cwd: string, onOutput: (log: string) => void = () => {}): Promise<Gate> {
  return new Promise((resolve) => {
    const started = performance.now();
    // CI's environment: a developer's .env, target or settings must not leak in.
    const env = Object.fromEntries(
      Object.entries(process.env).filter(([name]) => !/^(BASE_URL|API_KEY|FOREIGN_API_KEY|BURST_API_KEY|KNOWN_DEVIATIONS|REPORTS_DIR|SEQUENCE_.*)$/.test(name)),
    );
    const child = spawn(command, args, { cwd, env: { ...env, CI: 'true' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    const take = (chunk: Buffer) => {
      log += chunk;
      onOutput(log);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('close', (code) => {
      const duration = /^# duration_ms ([\d.]+)/m.exec(log);
      resolve({
        code: code ?? 1,
        log,
        seconds: (performance.now() - started) / 1000,
        testSeconds: duration ? Number(duration[1]) / 1000 : undefined,
        failures: log
          .split('\n')
          .filter((line) => /^not ok /.test(line) || /(FALSE ALARM|MISSED|WRONG RULE|RUN ERROR)\s*$/.test(line))
          .map((line) => line.trim()),
      });
    });
  });
}

(async () => {
  const results: Gate[] = [];
  for (let index = 1; index <= runs; index++) {
    const folder = await clone();
    const other = beside ? await clone() : undefined;
    // The other copy installs first; its npm test starts with the gate's (npm's banner of the test script).
    if (other) await run('npm', ['ci', '--no-audit', '--no-fund'], other);
    let load: Promise<Gate> | undefined;
    let testStarted = 0;
    const gate = await run('bash', ['.ci/run'], folder, (log) => {
      if (testStarted || !/^> \S+ test$/m.test(log)) return;
      testStarted = performance.now();
      if (other) load = run('npm', ['test'], other);
    });
    const installed = testStarted ? `npm ci ${(gate.seconds - (performance.now() - testStarted) / 1000).toFixed(0)} s` : 'npm test never started';
    const loaded = await load;
    results.push(gate);
    const took = gate.testSeconds === undefined ? '' : `, npm test ${gate.testSeconds.toFixed(0)} s`;
    console.log(
      `run ${index}/${runs}${beside ? ' (another npm test beside it)' : ''}: exit ${gate.code} in ${gate.seconds.toFixed(0)} s (${installed}${took})`,
    );
    for (const failure of gate.failures) console.log(`    ${failure}`);
    if (gate.code !== 0) {
      const kept = path.join(os.tmpdir(), `gate-run-${index}-${Date.now()}.log`);
      writeFileSync(kept, gate.log);
      // What failed, as the test runner said it: each failing test's error lines.
      const errors = gate.log
        .split('\n')
        .filter(
          (line, i, lines) => /^\s+error: /.test(line) || (/^\s+(\+|-) /.test(line) && lines.slice(Math.max(0, i - 12), i).some((l) => /error: /.test(l))),
        );
      console.log(`    ${errors.slice(0, 30).join('\n    ')}\n    whole log: ${kept}`);
    }
    if (loaded)
      console.log(
        `    the npm test beside it: exit ${loaded.code} in ${loaded.seconds.toFixed(0)} s${loaded.failures.length ? `; ${loaded.failures.join('; ')}` : ''}`,
      );
    if (loaded && loaded.code !== 0) {
      const kept = path.join(os.tmpdir(), `gate-beside-${index}-${Date.now()}.log`);
      writeFileSync(kept, loaded.log);
      console.log(`    its whole log: ${kept}`);
    }
    for (const dir of [folder, other]) if (dir) rmSync(dir, { recursive: true, force: true });
  }
  const failed = results.filter((gate) => gate.code !== 0).length;
  const slowest = Math.max(...results.map((gate) => gate.testSeconds ?? Infinity));
  console.log(`${runs - failed} of ${runs} gate runs green; slowest npm test ${slowest.toFixed(0)} s (goal: under 300 s)`);
  process.exit(failed ? 1 : 0);
})();
