/**
 * A critical section across the run's processes: a lock folder inside `dir`, taken over from a
 * process that ended (or that ended before it could say who it was). The sections it guards are a
 * directory listing and a few small writes, so a waiter sleeps a millisecond between looks.
 */
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { alive } from './run-folder';

/** A synchronous sleep that leaves the core to the holder (a spin would take it from a process on the same core). */
const PAUSE = new Int32Array(new SharedArrayBuffer(4));

export function locked<T>(dir: string, body: () => T): T {
  mkdirSync(dir, { recursive: true });
  const lock = path.join(dir, 'lock');
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(path.join(lock, 'pid'), String(process.pid));
      break;
    } catch {
      let holder = 0;
      try {
        holder = Number(readFileSync(path.join(lock, 'pid'), 'utf8'));
      } catch {
        // being written: try again
      }
      if ((holder && !alive(holder)) || (!holder && ageMs(lock) > 5_000)) rmSync(lock, { recursive: true, force: true });
      Atomics.wait(PAUSE, 0, 0, 1);
    }
  }
  try {
    return body();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

function ageMs(file: string): number {
  try {
    return Date.now() - statSync(file).mtimeMs;
  } catch {
    return 0;
  }
}
