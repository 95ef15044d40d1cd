/**
 * A team's rate limits as the run learns them, and the schedule its workers share under each. A
 * target may limit a team's scrapes, its stops and interacts, and its account reads apart (the
 * hosted service does): one limiter each. Every request to a limiter is logged in
 * the run folder's `limits/<target, team, limiter>/log` (run-folder.ts) (its send time; then whether it got through).
 *
 * The first 429 that is a rate's refusal (not a cap's: limits.ts) and names its window (`req/min`)
 * teaches the rate: where the window stands from its "retry after" or Retry-After; the limit from
 * its "Consumed" count where it gives one (the lowest seen is the limit), else from the requests
 * sent in that window and not refused. A later refusal can only lower it. A window no answer names
 * is not guessed (the client backs off instead, client.ts), and a rate can be stated (RATE_LIMIT).
 * Once known, each request waits for a place in the window
 * (a sliding window, a margin wider than the limiter's), stops of the run's sessions first, then
 * first come first served: the run plans to the limit instead of probing it.
 */
import { createHash } from 'node:crypto';
import { appendFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Limiter, Rate } from '../config/rates';
import type { Refusal } from '../http/limits';
import { locked } from './file-lock';
import { alive, channel } from './run-folder';

/** More than a file's modification time may lag behind its writes. */
const TICK_MS = 20;
const RATE_FILE = 'rate.json';
const POLL_MS = 100;

/** The limiter a request counts against, as the hosted service groups them. */
export function limiterOf(method: string, requestPath: string): Limiter | undefined {
  if (/\/interact$/.test(requestPath)) return 'interact';
  if (method === 'POST' && requestPath === '/v2/scrape') return 'scrape';
  if (requestPath.startsWith('/v2/team/')) return 'account';
  return undefined;
}

/** Places are kept this far apart beyond the window: the time a request takes to reach the target varies. */
export const marginMs = (windowMs: number) => Math.max(25, windowMs * 0.02);

const schedules = new Map<string, Schedule>();

/** The one schedule of this team's limiter at this target, in this process. */
export function scheduleFor(reportsDir: string, baseURL: string, team: string, limiter: Limiter, stated?: Rate): Schedule {
  const key = `${reportsDir}\n${baseURL}\n${team}\n${limiter}`;
  let schedule = schedules.get(key);
  if (!schedule)
    schedules.set(
      key,
      (schedule = new Schedule(path.join(limitsDir(reportsDir), createHash('sha1').update(key).digest('hex').slice(0, 12)), team, limiter, stated)),
    );
  return schedule;
}

const limitsDir = (reportsDir: string) => channel(reportsDir, 'limits');

/** The rates the run learnt or was told, per team and limiter: for the summary and the progress line. */
export function learntRates(reportsDir: string): { team: string; limiter: Limiter; rate: Rate }[] {
  let folders: string[];
  try {
    folders = readdirSync(limitsDir(reportsDir));
  } catch {
    return [];
  }
  return folders.flatMap((folder) => {
    try {
      return [JSON.parse(readFileSync(path.join(limitsDir(reportsDir), folder, RATE_FILE), 'utf8'))];
    } catch {
      return [];
    }
  });
}

let waiters = 0;

export class Schedule {
  private made = false;
  /** How late this process's last requests left after taking their places (a busy machine, a connection to open): the window is widened by twice that. */
  private readonly lateness: number[] = [];
  /** Places taken under a known rate, and how much wider the margin grew each time the limiter refused one of them (arrivals vary more than planned). */
  private readonly planned = new Set<number>();
  private widened = 0;
  private read: { written?: number; at: number; rate?: Rate } | undefined;

  constructor(
    readonly dir: string,
    private readonly team: string,
    private readonly limiter: Limiter,
    private readonly stated?: Rate,
  ) {}

  /** The rate known: stated, or learnt by any process of the run; `fresh` reads the file whatever this process read of it before. */
  rate(fresh = false): Rate | undefined {
    if (this.stated) return this.stated;
    // Read again only when some process wrote it since (it is asked around every request). A file's time ticks coarsely: a reading
    // taken within a few ms of its write may miss a second write in the same tick, and is not kept.
    const file = path.join(this.dir, RATE_FILE);
    const written = statSync(file, { throwIfNoEntry: false })?.mtimeMs;
    if (!fresh && this.read && written === this.read.written && this.read.at - (written ?? 0) > TICK_MS) return this.read.rate;
    const at = Date.now();
    try {
      const rate = written === undefined ? undefined : (JSON.parse(readFileSync(file, 'utf8')) as { rate: Rate }).rate;
      this.read = { written, at, rate };
      return rate;
    } catch {
      return undefined;
    }
  }

  /** A request sent without waiting for a place (no rate known, or one that must go now): it takes its place all the same. */
  sent(at = Date.now()): number {
    this.append(`${at} S`);
    return at;
  }

  private margin(rate: Rate): number {
    return Math.max(marginOf(rate), 2 * Math.max(0, ...this.lateness)) + Math.min(this.widened, rate.windowMs / 20);
  }

  /** A request that took its place at `at` left at `leftAt` (epoch ms). */
  left(at: number, leftAt: number): void {
    this.lateness.push(Math.max(0, leftAt - at));
    if (this.lateness.length > 20) this.lateness.shift();
  }

  /** A place taken at `at` and never used (its request was held past it): the limiter never counted it. */
  giveBack(at: number): void {
    this.append(`${at} R`);
  }

  /** Whether the rate's limiter refused the request sent at `at` (a cap's 429 got through it). */
  answered(at: number, refused: boolean): void {
    const rate = this.rate();
    if (refused && rate && this.planned.delete(at)) this.widened = Math.max(2 * this.widened, marginOf(rate));
    this.append(`${at} ${refused ? 'R' : 'A'}`);
  }

  /**
   * Waits for a place in the window, once a rate is known: stops (`first`) before other requests,
   * then in the order they first asked (`since`, epoch ms). Takes the place. Returns how long it
   * waited, and the place's time (what `answered` is told).
   */
  async admit(first: boolean, since: number, signal: AbortSignal, deadline = Infinity): Promise<{ waitedMs: number; at: number }> {
    if (!this.rate()) return { waitedMs: 0, at: this.sent() };
    const started = performance.now();
    const queue = path.join(this.dir, 'waiting');
    const me = `${first ? 0 : 1}-${String(since).padStart(15, '0')}-${String(++waiters).padStart(6, '0')}-${process.pid}`;
    mkdirSync(queue, { recursive: true });
    writeFileSync(path.join(queue, me), '');
    try {
      for (;;) {
        // Past its deadline a request goes without a place (the target then answers for itself), and still counts.
        const place = performance.now() > deadline ? { at: this.sent(), waitMs: 0 } : locked(this.dir, () => this.takePlace(queue, me));
        if (place.at !== undefined) return { waitedMs: performance.now() - started, at: place.at };
        await sleep(Math.min(place.waitMs, POLL_MS * 2), undefined, { signal });
      }
    } finally {
      rmSync(path.join(queue, me), { force: true });
    }
  }

  /** Within the lock: the place `me` took, or how long to wait before looking again. */
  private takePlace(queue: string, me: string): { at?: number; waitMs: number } {
    const rate = this.rate()!;
    const ahead = readdirSync(queue)
      .filter((name) => name === me || alive(Number(name.split('-')[3])))
      .sort()[0];
    if (ahead !== me) return { waitMs: POLL_MS };
    const now = Date.now();
    const margin = this.margin(rate);
    const inWindow = this.through().filter((at) => at > now - rate.windowMs - margin);
    if (inWindow.length < rate.limit) {
      this.planned.add(now);
      if (this.planned.size > 100) this.planned.delete(this.planned.values().next().value!);
      return { at: this.sent(now), waitMs: 0 };
    }
    return { waitMs: inWindow[inWindow.length - rate.limit] + rate.windowMs + margin - now };
  }

  /** Requests the window has room for now, once a rate is known. */
  room(): number | undefined {
    const rate = this.rate();
    if (!rate) return undefined;
    const now = Date.now();
    return Math.max(0, rate.limit - this.throughBetween(now - rate.windowMs - this.margin(rate), now + 1));
  }

  /** Whether the window held room for the request sent at `at`: fewer requests in it, not refused, than the known limit. */
  hadRoom(at: number): boolean | undefined {
    const rate = this.rate();
    if (!rate) return undefined;
    return this.throughBetween(at - rate.windowMs, at) < rate.limit;
  }

  /** What a rate's refusal of the request sent at `at` teaches (see the module's comment). Returns the rate now known. */
  learn(at: number, refusal: Refusal, answeredAt = at): Rate | undefined {
    if (this.stated) return this.stated;
    return locked(this.dir, () => {
      const known = this.rate(true);
      const windowMs = refusal.windowMs ?? known?.windowMs;
      // A window no answer names could be a second or an hour: planning to a guess is slower than backing off.
      if (windowMs === undefined) return undefined;
      const start = refusal.resetMs !== undefined && refusal.resetMs < windowMs ? at + refusal.resetMs - windowMs : at - windowMs;
      // The limiter's own count where it gives it (this request included, and any refused before it in the window); else the run's,
      // every request sent before the refusal's answer came (one sent earlier may have reached the target later), this one not.
      // Too high a limit is lowered by the next refusal; too low one would never be raised.
      const estimate =
        refusal.consumed !== undefined && refusal.remaining === 0 ? refusal.consumed - 1 : this.throughBetween(start, Math.max(at, answeredAt) + 1) - 1;
      // A refusal counted over another window than the one known: the stricter rate of the two is kept.
      if (known && known.windowMs !== windowMs) {
        if (estimate < 1 || estimate / windowMs >= known.limit / known.windowMs) return known;
        return this.keep({ limit: estimate, windowMs, from: 'learnt from a 429 that names its window' });
      }
      const limit = Math.min(known?.limit ?? Infinity, estimate >= 1 ? estimate : Infinity);
      if (!Number.isFinite(limit)) return known;
      return this.keep({ limit, windowMs, from: 'learnt from a 429 that names its window' });
    });
  }

  private keep(rate: Rate): Rate {
    writeFileSync(path.join(this.dir, RATE_FILE), JSON.stringify({ team: this.team, limiter: this.limiter, rate }));
    return rate;
  }

  /** When (epoch ms) the run first sent a request under this limiter. */
  firstSent(): number | undefined {
    const sent = this.entries('S');
    return sent.length ? Math.min(...sent) : undefined;
  }

  /** Places taken in [from, to): requests sent, and a few held past their place and never sent. */
  sentBetween(from: number, to: number): number {
    return this.entries('S').filter((at) => at >= from && at < to).length;
  }

  /** Whether the limit refused a request of the run sent at `from` or later. */
  refusedSince(from: number): boolean {
    return this.entries('R').some((at) => at >= from);
  }

  /** Requests sent in [from, to) and not refused: those the limiter counted, as far as the run can tell. */
  private throughBetween(from: number, to: number): number {
    return this.through().filter((at) => at >= from && at < to).length;
  }

  /** The send times of the requests not refused (got through, or still in flight), in order. */
  private through(): number[] {
    const refused = new Map<number, number>();
    for (const at of this.entries('R')) refused.set(at, (refused.get(at) ?? 0) + 1);
    return this.entries('S')
      .filter((at) => {
        const left = refused.get(at);
        if (!left) return true;
        refused.set(at, left - 1);
        return false;
      })
      .sort((a, b) => a - b);
  }

  private entries(kind: 'S' | 'A' | 'R'): number[] {
    let text = '';
    try {
      text = readFileSync(path.join(this.dir, 'log'), 'utf8');
    } catch {
      return [];
    }
    const found: number[] = [];
    for (const line of text.split('\n')) if (line.endsWith(kind)) found.push(Number(line.slice(0, -2)));
    return found;
  }

  private append(line: string): void {
    if (!this.made) mkdirSync(this.dir, { recursive: true });
    this.made = true;
    appendFileSync(path.join(this.dir, 'log'), `${line}\n`);
  }
}

const marginOf = (rate: Rate) => marginMs(rate.windowMs);
