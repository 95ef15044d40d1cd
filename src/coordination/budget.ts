/** The run's budget of sessions, shared by its workers: each session taken is a file only one worker can create. */
import { closeSync, existsSync, mkdirSync, openSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { channel } from './run-folder';

/** The run's sessions on one target (the variant matrix serves many targets from one run). */
const folderOf = (reportsDir: string, targetKey: string) => path.join(channel(reportsDir, 'budget'), targetKey);

/** Takes one session from the run's budget of `budget` on a target; false once it is spent. */
export function takeSession(reportsDir: string, targetKey: string, budget: number): boolean {
  const folder = folderOf(reportsDir, targetKey);
  mkdirSync(folder, { recursive: true });
  for (let n = readdirSync(folder).length; n < budget; n++) {
    try {
      closeSync(openSync(path.join(folder, String(n)), 'wx'));
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  return false;
}

/** Sessions taken so far in this run on a target. */
export function sessionsTaken(reportsDir: string, targetKey: string): number {
  const folder = folderOf(reportsDir, targetKey);
  return existsSync(folder) ? readdirSync(folder).length : 0;
}
