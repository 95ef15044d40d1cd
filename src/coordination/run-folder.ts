/**
 * The run's working folder, apart from the user's reports: the run's lock and every channel
 * between the processes of one run (the command, the global setup and teardown, the workers). One
 * per reports folder, named for its real path, in a folder of the user's own (mode 700) in the
 * system's temporary folder. Each channel is a file or a folder of it; the modules that speak
 * through one take its path from here.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The channels, and who writes them. */
export const CHANNELS = {
  lock: 'the process id of the run that holds the reports folder (global-setup.ts, shards.ts)',
  hang: 'the first request the target left unanswered, for the command to end the run (client.ts)',
  ending: 'written when the global teardown begins: the command no longer interrupts the run (global-setup.ts)',
  limits: "each team's limiters: a log of requests and the rate learnt (schedule.ts)",
  backoff: 'requests waiting after a 429, in the order they first waited (backoff-queue.ts)',
  quiet: "the burst's quiet spell: no other request in flight while it sends (quiet-spell.ts)",
  sessions: "each team's live sessions and the cap learnt (session-slots.ts)",
  cost: "each worker's tally of what the run spent (cost.ts)",
  budget: "one empty file per session taken from the run's budget, created once by whichever worker takes it (budget.ts)",
  account: "what workers tell each other once: the owner team's credit counter before the run (account.ts), the target's provisioning lag, a chain's record",
  traces: "each test's requests, without keys, for the reproductions of the checks that judge the whole run (coordination.ts)",
  'test-results': "Playwright's output folder (traces, screenshots and videos are off)",
} as const;
export type Channel = keyof typeof CHANNELS;

/** Cleared when a run starts: what an earlier, killed run's processes told each other (their process ids may be in use again). */
const PER_RUN: Channel[] = ['hang', 'ending', 'limits', 'backoff', 'quiet', 'sessions', 'cost', 'budget', 'account', 'traces', 'test-results'];

const USER = process.getuid?.() ?? os.userInfo().username;
/** The user's folder of working folders: no other user's process can write there. */
const HOME = path.join(os.tmpdir(), `stop-session-conformance-${USER}`);
const folders = new Map<string, string>();

export function runFolder(reportsDir: string): string {
  let folder = folders.get(reportsDir);
  if (!folder) folders.set(reportsDir, (folder = path.join(HOME, createHash('sha1').update(realPath(reportsDir)).digest('hex').slice(0, 12))));
  return folder;
}

/** The real path of a folder that may not exist yet: its nearest existing parent's, and the rest. The same whether it exists or not, and through any link. */
function realPath(folder: string): string {
  const absolute = path.resolve(folder);
  for (let existing = absolute, rest = ''; ; rest = path.join(path.basename(existing), rest), existing = path.dirname(existing)) {
    try {
      return path.join(realpathSync(existing), rest);
    } catch {
      if (existing === path.dirname(existing)) return absolute;
    }
  }
}

export function channel(reportsDir: string, name: Channel): string {
  return path.join(runFolder(reportsDir), name);
}

/** Why the reports folder cannot be used now (another live run holds it), or undefined when it can. */
export function reportsFolderInUse(reportsDir: string): string | undefined {
  const lock = channel(reportsDir, 'lock');
  const holder = existsSync(lock) ? Number(readFileSync(lock, 'utf8')) : undefined;
  if (!holder || holder === process.pid || !alive(holder)) return undefined;
  return `Another run (process ${holder}) is writing to ${reportsDir}. Give each run its own folder (REPORTS_DIR or --reports); if no such run is alive, delete ${lock}.`;
}

/** Takes the reports folder for this process's run and clears the channels of an earlier one. Returns the release. */
export function takeReportsFolder(reportsDir: string): () => void {
  mkdirSync(HOME, { recursive: true, mode: 0o700 });
  const owner = statSync(HOME).uid;
  if (typeof USER === 'number' && owner !== USER)
    throw new Error(
      `${HOME}, where the run keeps its working folder, belongs to another user (uid ${owner}): remove it, or set TMPDIR to a folder of your own.`,
    );
  const lock = channel(reportsDir, 'lock');
  mkdirSync(path.dirname(lock), { recursive: true, mode: 0o700 });
  writeFileSync(lock, String(process.pid));
  for (const name of PER_RUN) rmSync(channel(reportsDir, name), { recursive: true, force: true });
  return () => rmSync(lock, { force: true });
}

/** Removes the working folder once its run has ended, unless another live run holds it. */
export function removeRunFolder(reportsDir: string): void {
  if (!reportsFolderInUse(reportsDir)) rmSync(runFolder(reportsDir), { recursive: true, force: true });
}

/** Whether a process runs: a zombie (killed, not yet reaped) does not. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true; // no /proc: take the signal's word
  }
}

/** Writes an empty file, making its folder the first time: a request's marks are its hottest file operations. */
export function writeMaking(file: string): void {
  try {
    writeFileSync(file, '');
  } catch {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, '');
  }
}
