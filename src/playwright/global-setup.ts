/**
 * Before the run: the configuration is valid, an external target answers and knows every key
 * (preflight.ts), and no session an earlier, killed run left in the ledger is still running. During
 * the run: once the command that started it is gone, the run winds down. After the run: every
 * session the ledger holds open is stopped, and one that cannot be is an error of the run.
 */
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { RunError, whyUnreachable } from '../config/errors';
import { loadSettingsOrExit, type Settings } from '../config/settings';
import { channel, reportsFolderInUse, takeReportsFolder } from '../coordination/run-folder';
import { stopOpenSessions } from '../domain/cleanup';
import { Ledger, ledgerFile } from '../domain/ledger';
import { checkKeys } from '../domain/preflight';
import { exchange } from '../http/exchange';

/** Any HTTP answer proves the target reachable; a refused connection or a timeout does not. */
async function checkReachable(baseURL: string, settings: Pick<Settings, 'requestTimeoutMs'>): Promise<string | undefined> {
  try {
    await exchange(`${baseURL}/v2/scrape`, { method: 'OPTIONS', headers: {}, timeoutMs: Math.min(settings.requestTimeoutMs, 10_000), maxBodyBytes: 64 * 1024 });
    return undefined;
  } catch (error) {
    return whyUnreachable(baseURL, error as NodeJS.ErrnoException);
  }
}

/** Set by the command for Playwright: the descriptor of a pipe whose other end the command holds. */
export const COMMAND_PIPE_VARIABLE = 'CONFORMANCE_COMMAND_PIPE_FD';

/**
 * Winds the run down as on Ctrl-C once the command that started it is gone (killed with SIGKILL,
 * which it cannot forward, or with its process group, which Playwright is not in): its end of the
 * pipe closes, and the teardowns stop the sessions instead of a run going on unseen. Returns what
 * ends the watch.
 */
function windDownWithoutCommand(): () => void {
  const fd = process.env[COMMAND_PIPE_VARIABLE];
  delete process.env[COMMAND_PIPE_VARIABLE]; // not for the workers
  if (!fd) return () => {};
  let pipe: net.Socket;
  try {
    pipe = new net.Socket({ fd: Number(fd), readable: true, writable: false });
  } catch {
    return () => {};
  }
  const windDown = () => {
    console.error('\nThe command that started this run is gone: stopping the run; its teardown stops the sessions it created.');
    process.kill(process.pid, 'SIGINT');
  };
  // The end of the stream, not an error: a descriptor that is no pipe must not stop the run.
  pipe
    .once('end', windDown)
    .on('error', () => {})
    .resume()
    .unref();
  return () => {
    pipe.off('end', windDown);
    pipe.destroy();
  };
}

export default async function globalSetup() {
  const settings = loadSettingsOrExit();
  const exit = (message: string): never => {
    console.error(message);
    process.exit(2);
  };
  // A second run writing to the same folder would take the first one's sessions in the ledger for leftovers and stop them.
  const busy = reportsFolderInUse(settings.reportsDir);
  if (busy) exit(busy);
  mkdirSync(settings.reportsDir, { recursive: true });
  let release: () => void = () => {};
  try {
    release = takeReportsFolder(settings.reportsDir);
  } catch (error) {
    exit((error as Error).message);
  }
  const endWatch = windDownWithoutCommand();
  if (!settings.embedded) {
    const unreachable = await checkReachable(settings.baseURL!, settings);
    if (unreachable) exit(unreachable);
    // Before anything is provisioned or stopped: a key the target refuses is the configuration's fault, not the target's.
    const refused = await checkKeys(settings);
    if (refused) exit(refused);
  }
  const ledger = new Ledger(ledgerFile(settings.reportsDir));
  // Sessions of an embedded reference died with its process; those of an external target did not.
  const left = ledger.open().filter((entry) => !entry.embedded);
  const elsewhere = left.filter((entry) => entry.target !== settings.baseURL);
  if (elsewhere.length) {
    exit(
      `${ledger.file} holds ${elsewhere.length} session(s) of ${[...new Set(elsewhere.map((e) => e.target))].join(', ')} that no run stopped. ` +
        'Run `npm run cleanup` with that BASE_URL and its API_KEY first, or delete the file if you know they are gone.',
    );
  }
  if (left.length) {
    const { stopped, failed } = await stopOpenSessions(ledger, settings);
    console.log(`Stopped ${stopped.length} session(s) an earlier run left running:\n  ${stopped.join('\n  ')}`);
    if (failed.length) exit(`Could not stop ${failed.length} session(s) an earlier run left running:\n  ${failed.join('\n  ')}`);
  }
  if (existsSync(ledger.file)) renameSync(ledger.file, ledger.file.replace(/\.jsonl$/, '.previous.jsonl'));

  return async () => {
    // The run is ending by itself: the command no longer interrupts it on a hang (cli.ts), which would cut its reports short.
    writeFileSync(endingFile(settings.reportsDir), '');
    endWatch();
    const { stopped, failed } = await stopOpenSessions(ledger, settings);
    release();
    if (stopped.length) console.log(`The global teardown stopped ${stopped.length} session(s) their tests left:\n  ${stopped.join('\n  ')}`);
    if (failed.length)
      throw new RunError(`Could not stop ${failed.length} session(s) of this run; they may still be running and billed:\n  ${failed.join('\n  ')}`);
  };
}

/** Written when the global teardown begins. */
export const endingFile = (reportsDir: string) => channel(reportsDir, 'ending');
