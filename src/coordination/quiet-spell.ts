/**
 * The burst's quiet spell: while the burst sends, no other request of the run is in flight, so
 * that the target and the cores it ties up do not widen the intervals other tests measure. A
 * process marks itself while it has a request in flight; the burst raises a flag, waits for the
 * other processes' marks to clear, sends, and lowers it; a request that finds a flag up waits.
 * Marking comes before the last look at the flags, and raising the flag before looking at the
 * marks, so that one of the two always sees the other. One flag is up at a time (raised under a
 * lock once no other is). A flag holds the time it lapses, renewed while it is up: one a killed
 * process left (whose id may be in use again) lapses within seconds.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { locked } from './file-lock';
import { alive, channel, writeMaking } from './run-folder';

const inFlight = new Map<string, number>();
/** The spells this process holds, by folder. */
const held = new Set<string>();
const POLL_MS = 5;
const FLAG_LIFE_MS = 3_000;

export class QuietSpell {
  private readonly dir: string;

  constructor(reportsDir: string, baseURL: string) {
    this.dir = path.join(channel(reportsDir, 'quiet'), createHash('sha1').update(baseURL).digest('hex').slice(0, 12));
  }

  /** Before a request: waits while another process's flag is up (until `deadline`), then marks this process as sending. */
  async enter(deadline: number, signal: AbortSignal): Promise<void> {
    for (;;) {
      const waiting = performance.now() < deadline;
      if (waiting && this.flagsOfOthers()) {
        await sleep(POLL_MS, undefined, { signal });
        continue;
      }
      this.mark(+1);
      if (!waiting || !this.flagsOfOthers()) return;
      this.mark(-1);
    }
  }

  /** Whether another process's spell is up. */
  othersHolding(): boolean {
    return this.flagsOfOthers();
  }

  /** Whether this process holds a spell. */
  holding(): boolean {
    return held.has(this.dir);
  }

  /** Waits until no other process's spell is up, or until `deadline`. */
  async cleared(deadline: number, signal: AbortSignal): Promise<void> {
    while (performance.now() < deadline && this.flagsOfOthers()) await sleep(POLL_MS, undefined, { signal });
  }

  /** After a request. */
  leave(): void {
    this.mark(-1);
  }

  /**
   * Runs `send(true)` once no other process holds a spell and none has a request in flight (or
   * `drainMs` has passed), holding back theirs meanwhile; `send(false)`, without a spell, when
   * another's outlasts `waitMs`.
   */
  async hold<T>(drainMs: number, waitMs: number, signal: AbortSignal, send: (quiet: boolean) => Promise<T>): Promise<T> {
    const flag = path.join(this.dir, `quiet-${process.pid}`);
    mkdirSync(this.dir, { recursive: true });
    // Renamed into place, so that a reader never sees it half written.
    const raise = () => {
      writeFileSync(`${flag}.next`, String(Date.now() + FLAG_LIFE_MS));
      renameSync(`${flag}.next`, flag);
    };
    const waitUntil = performance.now() + waitMs;
    while (!locked(this.dir, () => !this.flagsOfOthers() && (raise(), true))) {
      if (performance.now() >= waitUntil) return send(false);
      await sleep(POLL_MS, undefined, { signal });
    }
    held.add(this.dir);
    const renewal = setInterval(raise, FLAG_LIFE_MS / 3);
    try {
      const until = performance.now() + drainMs;
      while (this.others('sending').length && performance.now() < until) await sleep(POLL_MS, undefined, { signal });
      return await send(true);
    } finally {
      clearInterval(renewal);
      held.delete(this.dir);
      rmSync(flag, { force: true });
    }
  }

  private mark(step: 1 | -1): void {
    const now = (inFlight.get(this.dir) ?? 0) + step;
    const file = path.join(this.dir, `sending-${process.pid}`);
    if (step > 0 && now === 1) writeMaking(file);
    else if (now === 0) {
      try {
        unlinkSync(file);
      } catch {
        // not made
      }
    }
    inFlight.set(this.dir, now);
  }

  private flagsOfOthers(): boolean {
    return this.others('quiet').some((pid) => {
      try {
        return Number(readFileSync(path.join(this.dir, `quiet-${pid}`), 'utf8')) > Date.now();
      } catch {
        return false; // lowered meanwhile
      }
    });
  }

  /** The live processes, other than this one, with a file of this kind. */
  private others(kind: 'quiet' | 'sending'): number[] {
    let names: string[];
    try {
      names = existsSync(this.dir) ? readdirSync(this.dir) : [];
    } catch {
      return [];
    }
    return names
      .filter((name) => name.startsWith(`${kind}-`) && !name.endsWith('.next'))
      .map((name) => Number(name.slice(kind.length + 1)))
      .filter((pid) => pid !== process.pid && alive(pid));
  }
}
