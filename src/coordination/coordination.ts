/**
 * What a test shares with the run's other workers about one target, through the run's working
 * folder (run-folder.ts): the burst's quiet spell, the turns after a 429, each limiter's schedule,
 * each team's live sessions, what the run spent, the first sign of a hang, and readings one
 * worker takes for all. Handed to tests as the `coordination` fixture; the client and the
 * sessions speak through it, and nothing else of the library opens a channel.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { LIMITERS, type Limiter, type Rate } from '../config/rates';
import { BackoffQueue } from './backoff-queue';
import { sessionsLeft, takeSession } from './budget';
import { recentRatePerMinute, writeSpend } from './cost';
import { QuietSpell } from './quiet-spell';
import { alive, channel } from './run-folder';
import { type Schedule, scheduleFor } from './schedule';
import { SessionSlots } from './session-slots';

/** Whether stops state their prices, shared by the run's workers once a first stop showed it. */
const PRICING = 'stops-pricing';
export type Pricing = 'stated' | 'silent';

export class Coordination {
  private known: Pricing | undefined;

  /** `statedRate`: RATE_LIMIT, the interact limiter's rate when the user states it. */
  constructor(
    readonly reportsDir: string,
    readonly baseURL: string,
    private readonly statedRate?: Rate,
  ) {}

  /** A client's part in the burst's quiet spell: no other request of the run in flight while it sends. */
  quietSpell(): QuietSpell {
    return new QuietSpell(this.reportsDir, this.baseURL);
  }

  /** A team's requests waiting after a 429, in the order they first waited. */
  backoffQueue(team: string): BackoffQueue {
    return new BackoffQueue(this.reportsDir, this.baseURL, team);
  }

  /** A team's schedule under one limiter: places in its window once its rate is known. */
  schedule(team: string, limiter: Limiter): Schedule {
    return scheduleFor(this.reportsDir, this.baseURL, team, limiter, limiter === 'interact' ? this.statedRate : undefined);
  }

  /** How many requests the team sent in [from, to) (epoch ms) to any of its limiters. */
  sentBy(team: string, from: number, to: number): number {
    return LIMITERS.reduce((sum, limiter) => sum + this.schedule(team, limiter).sentBetween(from, to), 0);
  }

  /** When (epoch ms) the run first sent a request as the team; the run's log holds nothing before. */
  firstSentBy(team: string): number {
    return Math.min(...LIMITERS.map((limiter) => this.schedule(team, limiter).firstSent() ?? Infinity));
  }

  /** A team's live sessions under its cap (SESSION_CAP, or the one learnt). */
  sessionSlots(team: string, statedCap?: number): SessionSlots {
    return new SessionSlots(this.reportsDir, this.baseURL, team, statedCap);
  }

  /** How many sessions of the run's budget on this target are left. */
  sessionsLeft(budget: number, shared?: string): number {
    return sessionsLeft(this.reportsDir, this.targetKey(), budget, shared);
  }

  /** One session of the run's budget on this target, if any is left: the ticket to give it back with (budget.ts). */
  takeSession(budget: number, shared?: string): string | undefined {
    return takeSession(this.reportsDir, this.targetKey(), budget, shared);
  }

  /** Adds this process's tally of what the run spent to the run's (after each test). */
  recordSpend(): void {
    writeSpend(this.reportsDir);
  }

  /** How many of a team's requests got through in the last minute, if it was throttled then. */
  recentRatePerMinute(team: string): number | undefined {
    return recentRatePerMinute(this.reportsDir, team);
  }

  /** Whether a request of the run went unanswered: the command ends the run on it. */
  hanging(): boolean {
    return existsSync(channel(this.reportsDir, 'hang'));
  }

  /** The first request the target left unanswered; a later one adds nothing. */
  markHang(message: string): void {
    try {
      writeFileSync(channel(this.reportsDir, 'hang'), message, { flag: 'wx' });
    } catch {
      // an earlier sign is already there
    }
  }

  /**
   * A value one worker of the run computes for all (`name` in the `account` channel, per target):
   * the first to ask reads it, the others wait for its reading, at most `waitMs`.
   */
  async readOnce<T>(name: string, read: () => Promise<T>, waitMs: number, signal?: AbortSignal): Promise<T | { unavailable: string }> {
    const file = this.sharedFile(name);
    mkdirSync(path.dirname(file), { recursive: true });
    try {
      writeFileSync(`${file}.lock`, String(process.pid), { flag: 'wx' });
    } catch {
      for (const until = performance.now() + waitMs; performance.now() < until; await sleep(50, undefined, { signal })) {
        const reading = this.readShared<T>(name);
        if (reading !== undefined) return reading;
        // Its worker ended before it wrote it (killed, or its test's time ran out): this one reads it instead.
        if (!alive(lockHolder(`${file}.lock`))) {
          rmSync(`${file}.lock`, { force: true });
          return this.readOnce(name, read, waitMs, signal);
        }
      }
      return { unavailable: `the worker that read the ${name} never wrote it` };
    }
    const write = <V>(value: V) => (this.share(name, value), value);
    // Whatever happens to this reading, the other workers hear of it.
    return read().then(write, (error: Error) => {
      write({ unavailable: `reading it failed: ${error.message}` });
      throw error;
    });
  }

  /** Whether the run's stops state their prices (creditsBilled), as a first stop of a session showed; undefined until one did. */
  pricing(): Pricing | undefined {
    if (this.known !== 'stated') this.known = (this.readShared<Pricing>(PRICING) as Pricing | undefined) ?? this.known;
    return this.known;
  }

  /** What a first stop showed; a stated price is never taken back. */
  showPricing(pricing: Pricing): void {
    if (this.pricing() === 'stated' || this.pricing() === pricing) return;
    this.share(PRICING, pricing);
    this.known = pricing;
  }

  /** Tells the run's other workers `value` under `name`, for `readShared`. */
  share<T>(name: string, value: T): void {
    const file = this.sharedFile(name);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(`${file}.${process.pid}`, JSON.stringify(value));
    renameSync(`${file}.${process.pid}`, file);
  }

  /** What `readOnce` or `share` wrote, if anything yet. */
  readShared<T>(name: string): T | { unavailable: string } | undefined {
    const file = this.sharedFile(name);
    return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : undefined;
  }

  /** Keeps a test's trace (its steps, without keys) for the checks that judge the whole run. */
  saveTrace(testId: string, steps: unknown[]): void {
    const file = this.traceFile(testId);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, JSON.stringify(steps));
  }

  /** A test's trace, if it ran against this target. */
  loadTrace<T>(testId: string): T[] | undefined {
    const file = this.traceFile(testId);
    return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : undefined;
  }

  private traceFile(testId: string): string {
    return path.join(channel(this.reportsDir, 'traces'), `${this.targetKey()}-${testId.replace(/\//g, '--')}.json`);
  }

  private targetKey(): string {
    return createHash('sha1').update(this.baseURL).digest('hex').slice(0, 12);
  }

  private sharedFile(name: string): string {
    return path.join(channel(this.reportsDir, 'account'), `${name}-${this.targetKey()}.json`);
  }
}

/** The process that holds a lock file; this one while the file is being written or gone (no one to take it over from). */
function lockHolder(file: string): number {
  try {
    return Number(readFileSync(file, 'utf8')) || process.pid;
  } catch {
    return process.pid;
  }
}
