/** Temporary folders of the kit's own tests: each removed when its test process ends, so that runs leave nothing behind. */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const made: string[] = [];
process.on('exit', () => {
  for (const folder of made) rmSync(folder, { recursive: true, force: true });
});

export function tempDir(prefix: string): string {
  const folder = mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(folder);
  return folder;
}
