/**
 * Before the run: the configuration is valid, an external target answers, and no session an
 * earlier, killed run left in the ledger is still running. After the run: every session the
 * ledger holds open is stopped, and one that cannot be is an error of the run.
 */
import { existsSync, renameSync } from 'node:fs';
import { exchange } from './client';
import { Ledger, ledgerFile } from './ledger';
import { RunError } from './run-error';
import { stopOpenSessions } from './sessions';
import { loadSettingsOrExit, type Settings } from './settings';

/** Any HTTP answer proves the target reachable; a refused connection or a timeout does not. */
export async function checkReachable(baseURL: string, settings: Pick<Settings, 'requestTimeoutMs'>): Promise<string | undefined> {
  try {
    await exchange(`${baseURL}/v2/scrape`, { method: 'OPTIONS', headers: {}, timeoutMs: Math.min(settings.requestTimeoutMs, 10_000), maxBodyBytes: 64 * 1024 });
    return undefined;
  } catch (error) {
    return `The target ${baseURL} is unreachable (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}).`;
  }
}

export default async function globalSetup() {
  const settings = loadSettingsOrExit();
  const exit = (message: string): never => {
    console.error(message);
    process.exit(2);
  };
  if (!settings.embedded) {
    const unreachable = await checkReachable(settings.baseURL!, settings);
    if (unreachable) exit(unreachable);
  }
  const ledger = new Ledger(ledgerFile(settings.reportsDir));
  // Sessions of an embedded reference died with its process; those of an external target did not.
  const left = ledger.open().filter((entry) => !entry.embedded);
  const elsewhere = left.filter((entry) => entry.target !== settings.baseURL);
  if (elsewhere.length) {
    exit(`${ledger.file} holds ${elsewhere.length} session(s) of ${[...new Set(elsewhere.map((e) => e.target))].join(', ')} that no run stopped. ` +
      'Run `npm run cleanup` with that BASE_URL and its API_KEY first, or delete the file if you know they are gone.');
  }
  if (left.length) {
    const { stopped, failed } = await stopOpenSessions(ledger, settings);
    console.log(`Stopped ${stopped.length} session(s) an earlier run left running:\n  ${stopped.join('\n  ')}`);
    if (failed.length) exit(`Could not stop ${failed.length} session(s) an earlier run left running:\n  ${failed.join('\n  ')}`);
  }
  if (existsSync(ledger.file)) renameSync(ledger.file, ledger.file.replace(/\.jsonl$/, '.previous.jsonl'));

  return async () => {
    const { stopped, failed } = await stopOpenSessions(ledger, settings);
    if (stopped.length) console.log(`The global teardown stopped ${stopped.length} session(s) their tests left:\n  ${stopped.join('\n  ')}`);
    if (failed.length) throw new RunError(`Could not stop ${failed.length} session(s) of this run; they may still be running and billed:\n  ${failed.join('\n  ')}`);
  };
}
