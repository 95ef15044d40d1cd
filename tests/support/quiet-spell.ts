/**
 * The burst's quiet spell: while the burst sends, no other request of the run is in flight, so
 * that the target and the cores it ties up do not widen the intervals other tests measure. A
 * process marks itself while it has a request in flight; the burst raises a flag, waits for the
 * other processes' marks to clear, sends, and lowers it; a request that finds a flag up waits.
 * Marking comes before looking at the flags, and raising the flag before looking at the marks,
 * so that one of the two always sees the other. Files of processes that ended are ignored.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { alive } from './backoff-queue';

const inFlight = new Map<string, number>();
const POLL_MS = 5;

export class QuietSpell {
  private readonly dir: string;

  constructor(reportsDir: string, baseURL: string) {
    this.dir = path.join(reportsDir, '.quiet', createHash('sha1').update(baseURL).digest('hex').slice(0, 12));
  }

  /** Before a request: marks this process as sending, once no other process's burst is under way. */
  async enter(deadline: number, signal: AbortSignal): Promise<void> {
    for (;;) {
      this.count(+1);
      if (!this.others('quiet').length || performance.now() >= deadline) return;
      this.count(-1);
      await sleep(POLL_MS, undefined, { signal });
    }
  }

  /** After a request. */
  leave(): void {
    this.count(-1);
  }

  /** Runs `send` once no other process has a request in flight (or `drainMs` has passed), holding back theirs meanwhile. */
  async hold<T>(drainMs: number, signal: AbortSignal, send: () => Promise<T>): Promise<T> {
    const flag = path.join(this.dir, `quiet-${process.pid}`);
    mkdirSync(this.dir, { recursive: true });
    writeFileSync(flag, '');
    try {
      const until = performance.now() + drainMs;
      while (this.others('sending').length && performance.now() < until) await sleep(POLL_MS, undefined, { signal });
      return await send();
    } finally {
      rmSync(flag, { force: true });
    }
  }

  private count(step: 1 | -1): void {
    const now = (inFlight.get(this.dir) ?? 0) + step;
    inFlight.set(this.dir, now);
    const mark = path.join(this.dir, `sending-${process.pid}`);
    if (step > 0 && now === 1) {
      mkdirSync(this.dir, { recursive: true });
      writeFileSync(mark, '');
    } else if (now === 0) rmSync(mark, { force: true });
  }

  /** The live processes, other than this one, with a file of this kind. */
  private others(kind: 'quiet' | 'sending'): number[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return [];
    }
    return names.filter((name) => name.startsWith(`${kind}-`)).map((name) => Number(name.slice(kind.length + 1))).filter((pid) => pid !== process.pid && alive(pid));
  }
}
