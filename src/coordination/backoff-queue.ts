/**
 * Who sends next while the target rate-limits a team: a first-come queue the run's workers share,
 * one per team (the hosted service limits each team on its own, so the burst team's wait holds
 * back no one else). A request that got 429 takes a ticket (a file named by the time it first
 * waited); while tickets are out, only the oldest one's holder sends, and fresh requests wait
 * behind them. Without it, a test that sends several requests back to back takes every slot a
 * window opens, and a request waiting in another worker starves. Tickets of processes that ended
 * are ignored.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { alive, channel } from './run-folder';

let taken = 0;
const EXHAUSTED = 'exhausted';

export class BackoffQueue {
  private readonly dir: string;
  private ticket?: string;

  constructor(reportsDir: string, baseURL: string, team: string) {
    this.dir = path.join(channel(reportsDir, 'backoff'), createHash('sha1').update(`${baseURL}\n${team}`).digest('hex').slice(0, 12));
  }

  /** Takes a ticket, once: from now on this request waits its turn like the others. */
  join(): void {
    if (this.ticket) return;
    mkdirSync(this.dir, { recursive: true });
    this.ticket = `${String(Date.now()).padStart(15, '0')}-${process.pid}-${++taken}`;
    writeFileSync(path.join(this.dir, this.ticket), '');
  }

  leave(): void {
    if (this.ticket) rmSync(path.join(this.dir, this.ticket), { force: true });
    this.ticket = undefined;
  }

  /**
   * Said by a request whose back-off budget ran out: the team's `limiter` did not recover within it.
   * Every other request of the run for that team and limiter then gives up at once, instead of waiting
   * a budget of its own (an owner's stop tries a few seconds more): a limiter that never recovers ends
   * the run within one budget. Until a request of theirs gets through (`recovered`).
   */
  exhaust(limiter: string): void {
    mkdirSync(this.dir, { recursive: true });
    writeFileSync(path.join(this.dir, `${EXHAUSTED}-${limiter}`), '');
  }

  exhausted(limiter: string): boolean {
    return existsSync(path.join(this.dir, `${EXHAUSTED}-${limiter}`));
  }

  recovered(limiter: string): void {
    rmSync(path.join(this.dir, `${EXHAUSTED}-${limiter}`), { force: true });
  }

  /**
   * Resolves when no older ticket is out (a request without one waits for every ticket), or once the
   * team's budget for `limiter` ran out or `deadline` passed. Whether this request had its turn: only a request that
   * had it and still met 429 past its budget shows a limiter that does not recover, not a long queue.
   */
  async turn(deadline: number, signal: AbortSignal, limiter: string): Promise<boolean> {
    while (performance.now() < deadline && !this.exhausted(limiter)) {
      const first = this.oldest();
      if (!first || first === this.ticket) return true;
      await sleep(200, undefined, { signal });
    }
    return false;
  }

  private oldest(): string | undefined {
    let names: string[];
    try {
      // No folder until a request of the run meets 429: a listing that fails costs far more than a look.
      names = existsSync(this.dir) ? readdirSync(this.dir).sort() : [];
    } catch {
      return undefined;
    }
    return names.find((name) => !name.startsWith(EXHAUSTED) && (name === this.ticket || alive(Number(name.split('-')[1]))));
  }
}
