/** Temporary folders of the kit's own tests: each removed when its test process ends, so that runs leave nothing behind. */
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// The runs of the kit's tests pass many small files between their processes: in memory where the system has it (loaded first by
// `npm test`, so that every process of the kit's tests, and every command they start, uses it).
if (!process.env.TMPDIR && writable('/dev/shm')) process.env.TMPDIR = '/dev/shm';

function writable(folder: string): boolean {
  try {
    accessSync(folder, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

const made: string[] = [];
process.on('exit', () => {
  for (const folder of made) rmSync(folder, { recursive: true, force: true });
});

export function tempDir(prefix: string): string {
  const folder = mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(folder);
  return folder;
}
