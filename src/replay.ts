/**
 * `replay [reports folder]`: runs every reproduction a run left (`<reports>/reproductions/`), one
 * after the other, against the target configured now (BASE_URL and its keys; unset, a fresh
 * embedded reference), and says per test FIXED (exit 0), STILL FAILING (1) or COULD NOT TELL (2).
 * It exits with the worst: 1 if any still fails, else 2 if any could not tell, else 0. It refuses
 * (exit 2) reproductions made against another target than the one configured now, unless told to
 * go on (--any-target): FIXED against another target says nothing of the one that failed.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Settings } from './config/settings';
import { TEAMS_FILE } from './domain/target';
import { EMBEDDED_TARGET, planOf, REPRODUCTIONS, targetOf } from './reproduction/plan';

const VERDICTS: Record<number, string> = { 0: 'FIXED', 1: 'STILL FAILING', 2: 'COULD NOT TELL' };

/** A run's reproductions: in its reports folder, and with --shards in each shard's folder and the rate-limit run's. */
export function reproductionsIn(reports: string): { id: string; file: string }[] {
  const folders = [
    reports,
    ...readdirSync(reports)
      .filter((name) => /^shard-\d+$/.test(name) || name === 'rate-limit')
      .map((name) => path.join(reports, name)),
  ];
  return folders
    .flatMap((folder) => {
      const own = path.join(folder, REPRODUCTIONS);
      if (!existsSync(own)) return [];
      return readdirSync(own, { recursive: true, encoding: 'utf8' })
        .filter((name) => name.endsWith('.mjs'))
        .map((name) => ({
          id: name
            .replace(/\.mjs$/, '')
            .split(path.sep)
            .join('/'),
          file: path.join(own, name),
        }));
    })
    .sort((a, b) => a.file.localeCompare(b.file));
}

function runOne(file: string, env: NodeJS.ProcessEnv): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [file], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('close', (code) => resolve({ code: code === 0 || code === 1 ? code : 2, output }));
  });
}

const named = (target: string) => (target === EMBEDDED_TARGET ? 'the embedded reference' : target);

export async function replay(settings: Settings, folder: string | undefined, anyTarget: boolean): Promise<number> {
  const reports = path.resolve(folder ?? settings.reportsDir);
  if (!existsSync(reports)) {
    console.error(`Configuration error:\n  - no reports folder at ${reports}: give the folder a run wrote its reports to`);
    return 2;
  }
  const shown = path.relative(process.cwd(), reports) || '.';
  const files = reproductionsIn(reports);
  if (!files.length) {
    console.log(`No reproductions in ${shown}: its run failed no check that leaves one.`);
    return 0;
  }
  // Where and when the run made them (reproductions of older versions of the kit do not say).
  const made = files.flatMap(({ file }) => planOf(readFileSync(file, 'utf8')).made ?? []);
  const targets = [...new Set(made.map((one) => one.target))];
  const times = made.map((one) => one.at).sort();
  const when = !times.length ? 'at a time not recorded' : times[0] === times.at(-1) ? `at ${times[0]}` : `from ${times[0]} to ${times.at(-1)}`;
  const now = targetOf(settings);
  const others = targets.filter((target) => target !== now);
  if (others.length && !anyTarget) {
    const there =
      others.length === 1
        ? others[0] === EMBEDDED_TARGET
          ? 'unset BASE_URL and the keys'
          : `set BASE_URL=${others[0]} and its keys`
        : 'set BASE_URL to the target each was made against';
    console.error(
      `Configuration error:\n  - the reproductions in ${shown} were made against ${targets.map(named).join(' and ')} ${when}, and the target configured now is ${named(now)}. ` +
        `To replay them where they failed, ${there}; to replay them against ${named(now)} all the same, give --any-target.`,
    );
    return 2;
  }
  const env = { ...process.env };
  let server: { url: string; close: () => Promise<void> } | undefined;
  if (settings.embedded) {
    const { createReferenceServer } = await import('../reference/server');
    server = await createReferenceServer({ port: 0 });
    const [owner, foreign, burst] = (JSON.parse(readFileSync(TEAMS_FILE, 'utf8')) as { teams: { keys: string[] }[] }).teams;
    Object.assign(env, { BASE_URL: server.url, API_KEY: owner.keys[0], FOREIGN_API_KEY: foreign.keys[0], BURST_API_KEY: burst.keys[0] });
  }
  console.log(`Replaying ${files.length} reproduction(s) of ${shown} against ${settings.embedded ? 'a fresh embedded reference' : settings.baseURL}`);
  console.log(
    `Made against ${targets.length ? targets.map(named).join(' and ') : 'a target not recorded'} ${when}${others.length ? ' (another target: --any-target)' : ''}`,
  );
  let worst = 0;
  try {
    for (const { id, file } of files) {
      const { code, output } = await runOne(file, env);
      writeFileSync(file.replace(/\.mjs$/, '.replay.log'), output);
      const why = output.split('\n').find((line) => /^(FAILS|COULD NOT TELL)/.test(line));
      console.log(`  ${VERDICTS[code].padEnd(15)} ${id}${code && why ? `\n      ${why.slice(0, 300)}` : ''}`);
      worst = code === 1 || worst === 1 ? 1 : Math.max(worst, code);
    }
  } finally {
    await server?.close();
  }
  console.log(`Replay: ${VERDICTS[worst]} (exit ${worst}); each reproduction's output is beside it, in <test>.replay.log.`);
  return worst;
}
