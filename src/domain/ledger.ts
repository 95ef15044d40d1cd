/**
 * The run ledger (`<reports>/ledger.jsonl`): every scrape job the suite created, written as soon
 * as the scrape answers (before any session exists), and every owner's stop that ended one. A
 * session left open in the ledger is stopped by the test's teardown, by the global teardown, or
 * by `npm run cleanup` after a run that was killed. It also keeps what the run was charged, as the
 * target's answers said: every settlement a stop reported, and the price of every scrape, which
 * the account check (account.ts) holds the account to. Identity names only, never a key.
 */
import { appendFileSync, closeSync, mkdirSync, openSync, readSync, statSync } from 'node:fs';
import path from 'node:path';
import { redact } from '../http/redact';
import { type Settled, sameSettlement } from './settlements';

export type LedgerEntry =
  | { event: 'created'; at: string; target: string; embedded: boolean; jobId: string; identity: string; test?: string }
  | { event: 'live' | 'opening' | 'not-opened' | 'maybe-open'; at: string; target: string; jobId: string; identity: string; status?: number }
  | { event: 'ended'; at: string; target: string; jobId: string; identity: string; status: number; sent?: string }
  | ({ event: 'settled'; at: string; target: string; jobId: string; identity: string } & Settled)
  | { event: 'reported'; at: string; target: string; jobId: string; identity: string; stated?: true }
  | { event: 'priced'; at: string; target: string; jobId: string; identity: string; credits: number }
  | { event: 'scraped'; at: string; target: string; jobId?: string; identity: string; credits?: number; scrape?: string }
  | { event: 'scraping' | 'scrape-done'; at: string; target: string; identity: string; scrape: string };

/** What the run was charged on one team's account, as the target's answers said (account.ts). */
export interface Spending {
  /** The distinct settlements reported for each session of the team's jobs, and how many 200 answers to its stops came (zeros and repeats too). */
  settlements: { jobId: string; settled: Settled[]; reports: number }[];
  /** The team's scrapes: how many, what those that gave a price (data.metadata.creditsUsed) cost, and how many gave none. */
  scrapes: { count: number; credits: number; unpriced: number };
  /** Sessions whose stops all answered 200 without a charge (a minimal body): the longest each can have lived, from its interact sent to its first such answer. */
  silent?: { jobId: string; lifeMs: number; reports: number }[];
}

export const ledgerFile = (reportsDir: string) => path.join(reportsDir, 'ledger.jsonl');

/** A job as the ledger matches it: a job id is a UUID, whose case means nothing (a stop naming it in another case names the same job). */
const jobKey = (jobId: string) => jobId.toLowerCase();

export class Ledger {
  private readonly endedInThisProcess = new Set<string>();
  /** What entries() has read of the file: its bytes, a last line not yet ended, and the entries parsed, by target too (the matrix's ledger holds a hundred). */
  private seen = { bytes: 0, rest: Buffer.alloc(0), entries: [] as LedgerEntry[], byTarget: new Map<string, LedgerEntry[]>() };

  constructor(readonly file: string) {}

  created(entry: { target: string; embedded: boolean; jobId: string; identity: string; test?: string }): void {
    this.write({ event: 'created', at: new Date().toISOString(), ...entry });
    this.endedInThisProcess.delete(`${entry.target} ${jobKey(entry.jobId)} ${entry.identity}`);
  }

  /**
   * An attempt of an interact that may open a session on the job is about to be sent ('opening'),
   * and what came of it: a session runs ('live', what a cap on live sessions counts), none
   * ('not-opened': a 4xx), or perhaps one ('maybe-open': any other answer, or none).
   */
  session(event: 'opening' | 'live' | 'not-opened' | 'maybe-open', entry: { target: string; jobId: string; identity: string; status?: number }): void {
    this.write({ event, at: new Date().toISOString(), ...entry });
  }

  /** `sent`: when the stop that ended it was sent, where the run's own client sent it. */
  ended(entry: { target: string; jobId: string; identity: string; status: number; sent?: string }): void {
    this.write({ event: 'ended', at: new Date().toISOString(), ...entry });
    this.endedInThisProcess.add(`${entry.target} ${jobKey(entry.jobId)} ${entry.identity}`);
  }

  /** A stop's answer settled the session on `jobId` (whoever sent it): its duration and credits as reported. */
  settled(entry: { target: string; jobId: string; identity: string } & Settled): void {
    this.write({ event: 'settled', at: new Date().toISOString(), ...entry });
  }

  /** A stop answered 200 without a charge (a repeat, a zero, a minimal body): the account may still show one. `stated`: it said creditsBilled 0. */
  reported(entry: { target: string; jobId: string; identity: string; stated?: true }): void {
    this.write({ event: 'reported', at: new Date().toISOString(), ...entry });
  }

  /** What the account moved by around a stop that answered 200 without a charge (account.ts stopPriced): the session's settlement, as the account shows it. */
  priced(entry: { target: string; jobId: string; identity: string; credits: number }): void {
    this.write({ event: 'priced', at: new Date().toISOString(), ...entry });
  }

  /** A scrape answered 200, with its price when the answer gave one. */
  scraped(entry: { target: string; jobId?: string; identity: string; credits?: number; scrape?: string }): void {
    this.write({ event: 'scraped', at: new Date().toISOString(), ...entry });
  }

  /** A scrape sent (`scraping`), or one that ended without a 200 (`scrape-done`): a scrape in progress holds one of the team's job slots where the target caps jobs. */
  scrape(event: 'scraping' | 'scrape-done', entry: { target: string; identity: string; scrape: string }): void {
    this.write({ event, at: new Date().toISOString(), ...entry });
  }

  /** What the run was charged on the account of the team `identity` stands for: the settlements of the jobs it created, and its scrapes. */
  spending(target: string, identity: string): Spending {
    // A job's sessions, one after the other: an interact that opened a new one on a stopped job wrote 'created' again.
    type Life = { settled: Settled[]; reports: number; openedAt?: number; reportedAt?: number; stated?: boolean };
    const jobs = new Map<string, { jobId: string; sessions: Life[]; reopening?: number }>();
    const scrapes = { count: 0, credits: 0, unpriced: 0 };
    for (const entry of this.entries(target)) {
      const job = 'jobId' in entry && entry.jobId !== undefined ? jobs.get(jobKey(entry.jobId)) : undefined;
      const session = job?.sessions.at(-1);
      if (entry.event === 'created' && entry.identity === identity) {
        // An interact that reopens a stopped job is written ('opening') before the session it opened ('created'): the first since the last session began.
        jobs.set(jobKey(entry.jobId), { jobId: entry.jobId, sessions: [...(job?.sessions ?? []), { settled: [], reports: 0, openedAt: job?.reopening }] });
      } else if (entry.event === 'opening' && job) {
        if (session!.openedAt === undefined) session!.openedAt = Date.parse(entry.at);
        else job.reopening ??= Date.parse(entry.at);
      } else if ((entry.event === 'settled' || entry.event === 'reported' || entry.event === 'priced') && session) {
        // What the account showed of a stop without a charge is its settlement, not one more answer.
        if (entry.event !== 'priced') session.reports += 1;
        if (entry.event !== 'priced') session.reportedAt ??= Date.parse(entry.at);
        // A stop that said it billed 0 stated its charge: not one the account may hold unseen.
        if (entry.event === 'reported' && entry.stated && session.reports === 1) session.stated = true;
        if (entry.event !== 'reported' && !session.settled.some((other) => sameSettlement(other, entry)))
          session.settled.push({
            credits: entry.credits,
            ...(entry.event === 'settled' && entry.durationMs !== undefined ? { durationMs: entry.durationMs } : {}),
          });
      } else if (entry.event === 'scraped' && entry.identity === identity) {
        scrapes.count += 1;
        if (typeof entry.credits === 'number') scrapes.credits += entry.credits;
        else scrapes.unpriced += 1;
      }
    }
    const all = [...jobs.values()].flatMap(({ jobId, sessions }) => sessions.map((session) => ({ jobId, ...session })));
    const settlements = all.filter((session) => session.settled.length > 0).map(({ jobId, settled, reports }) => ({ jobId, settled, reports }));
    // The ledger's times are whole milliseconds: one more for each end.
    const silent = all
      .filter((session) => !session.settled.length && !session.stated && session.reports && session.openedAt !== undefined)
      .map(({ jobId, openedAt, reportedAt, reports }) => ({ jobId, lifeMs: reportedAt! - openedAt! + 2, reports }));
    return { settlements, scrapes, ...(silent.length ? { silent } : {}) };
  }

  /**
   * The most sessions of `identity` that were surely live at once: each from its interact's 200 to
   * the sending of the stop that ended it with a 200 (a session its own client did not stop is left out).
   */
  mostLive(target: string, identity: string): { count: number; at?: number; jobs: string[] } {
    const since = new Map<string, number>();
    const lives: { jobId: string; from: number; to: number }[] = [];
    const mine = new Set<string>();
    for (const entry of this.entries(target)) {
      if (!('jobId' in entry) || entry.jobId === undefined) continue;
      const key = jobKey(entry.jobId);
      if (entry.event === 'created' && entry.identity === identity) mine.add(key);
      else if (entry.event === 'live' && mine.has(key) && !since.has(key)) since.set(key, Date.parse(entry.at));
      // A stop answered 404 found it gone already: when it ended is not known, and it counts for nothing.
      else if (entry.event === 'ended' && entry.identity === identity && since.has(key)) {
        if (entry.sent && entry.status === 200) lives.push({ jobId: entry.jobId, from: since.get(key)!, to: Date.parse(entry.sent) });
        since.delete(key);
      }
    }
    let most: { count: number; at?: number; jobs: string[] } = { count: 0, jobs: [] };
    for (const { from } of lives) {
      const at = lives.filter((life) => life.from <= from && from < life.to);
      if (at.length > most.count) most = { count: at.length, at: from, jobs: at.map((life) => life.jobId) };
    }
    return most;
  }

  /**
   * The jobs of `identity` whose last interact that could have opened a session was refused or
   * failed (4xx, 410, 5xx, no answer), so that the run holds no session there: where a session runs
   * all the same, nobody asked for it. With the settlements already seen for the job's last session.
   */
  /** The test that created a job, as its 'created' line says. */
  creatorOf(target: string, jobId: string): string | undefined {
    const entry = this.entries(target).find((one) => one.event === 'created' && jobKey(one.jobId) === jobKey(jobId));
    return entry && entry.event === 'created' ? entry.test : undefined;
  }

  /** The identity that created a job's latest session, as its last 'created' line says. */
  creatorIdentity(target: string, jobId: string): string | undefined {
    const entry = this.entries(target)
      .filter((one) => one.event === 'created' && jobKey(one.jobId) === jobKey(jobId))
      .at(-1);
    return entry && entry.event === 'created' ? entry.identity : undefined;
  }

  refusedOpenings(target: string, identity: string): { jobId: string; status?: number; settled: Settled[]; test?: string }[] {
    const jobs = new Map<string, { jobId: string; last?: { status?: number }; settled: Settled[]; test?: string }>();
    for (const entry of this.entries(target)) {
      if (!('jobId' in entry) || entry.event === 'scraped') continue;
      if (entry.event === 'created') {
        if (entry.identity === identity)
          jobs.set(jobKey(entry.jobId), {
            jobId: entry.jobId,
            settled: jobs.get(jobKey(entry.jobId))?.settled ?? [],
            ...(entry.test ? { test: entry.test } : {}),
          });
        continue;
      }
      const job = jobs.get(jobKey(entry.jobId));
      if (!job) continue;
      if (entry.event === 'settled') job.settled.push({ credits: entry.credits, ...(entry.durationMs === undefined ? {} : { durationMs: entry.durationMs }) });
      else if (entry.event === 'not-opened' || entry.event === 'maybe-open') job.last = entry;
      else if (entry.event === 'live' || entry.event === 'opening') job.last = undefined;
    }
    return [...jobs.values()]
      .filter((job) => job.last)
      .map(({ jobId, last, settled, test }) => ({ jobId, status: last!.status, settled, ...(test ? { test } : {}) }));
  }

  /**
   * Settlements reported by stops of jobs the run never gave a session (a random job id, a scrape job
   * left without one): each of those stops must have found nothing, so each of these stopped some
   * other session (of the run's, or of no one's the run knew).
   */
  settledWithoutSession(target: string): ({ jobId: string; identity: string } & Settled)[] {
    const entries = this.entries(target);
    const created = new Set(entries.filter((entry) => entry.event === 'created').map((entry) => jobKey((entry as { jobId: string }).jobId)));
    return entries.flatMap((entry) =>
      entry.event === 'settled' && !created.has(jobKey(entry.jobId))
        ? [
            {
              jobId: entry.jobId,
              identity: entry.identity,
              credits: entry.credits,
              ...(entry.durationMs === undefined ? {} : { durationMs: entry.durationMs }),
            },
          ]
        : [],
    );
  }

  /** Whether a stop by the team that owns the job, sent from this process, ended its session. */
  endedHere(target: string, jobId: string, owner: string): boolean {
    return this.endedInThisProcess.has(`${target} ${jobKey(jobId)} ${owner}`);
  }

  /** Jobs created and not ended by a stop of the team that created them, oldest first. */
  open(): Extract<LedgerEntry, { event: 'created' }>[] {
    return this.read().open;
  }

  /** Whether every interact that would open the job's session since its last stop was refused (a 4xx, a 429 the run gave up on) or never sent: it holds nothing, unless the target opens sessions it refuses. */
  heldNothing(target: string, jobId: string): boolean {
    return this.read(target).refused.has(`${target} ${jobKey(jobId)}`);
  }

  /** How many of an identity's open jobs on a target have a session live or opening (an interact answered 200, or not yet answered), but `except`. */
  liveSessions(target: string, identity: string, except?: string): number {
    const { open, live } = this.read(target);
    return open.filter(
      (entry) =>
        entry.identity === identity && (except === undefined || jobKey(entry.jobId) !== jobKey(except)) && live.has(`${entry.target} ${jobKey(entry.jobId)}`),
    ).length;
  }

  /**
   * The run's sessions of `identity` that may have been live at the target at some moment between
   * `sentAt` and `receivedAt` (epoch ms), `except` one job: an interact that would open one was sent
   * before `receivedAt`, did not fail to open it, and no owner's stop had ended it before `sentAt`.
   * An upper bound on what the target held then, as far as the run knows; `pending` of them are
   * interacts not answered yet (counted: they may have opened a session). Scrapes in progress at
   * some moment between are counted too: a cap on a team's jobs counts them.
   */
  possiblyLive(target: string, identity: string, except: string, sentAt: number, receivedAt: number): { count: number; pending: number } {
    // Ledger times are whole milliseconds, cut down: compare whole milliseconds, and keep every doubt on the side of "live".
    const [sent, received] = [Math.floor(sentAt), Math.ceil(receivedAt)];
    const episodes = new Map<string, { openedAt: number; outcome?: 'live' | 'not-opened' | 'maybe-open'; endedAt?: number }[]>();
    const scrapes = new Map<string, { sentAt: number; doneAt?: number }>();
    for (const entry of this.entries(target)) {
      if (entry.identity !== identity) continue;
      if (entry.event === 'scraping') scrapes.set(entry.scrape, { sentAt: Date.parse(entry.at) });
      else if ((entry.event === 'scraped' || entry.event === 'scrape-done') && entry.scrape && scrapes.has(entry.scrape))
        scrapes.get(entry.scrape)!.doneAt = Date.parse(entry.at);
      if (!('jobId' in entry) || entry.jobId === undefined || jobKey(entry.jobId) === jobKey(except) || entry.event === 'scraped') continue;
      const at = Date.parse(entry.at);
      const list = episodes.get(jobKey(entry.jobId)) ?? [];
      episodes.set(jobKey(entry.jobId), list);
      const last = list.at(-1);
      if (entry.event === 'opening') list.push({ openedAt: at });
      // A session opened by an interact on a job already stopped: sent at some time before this line.
      else if (entry.event === 'live' && (!last || last.endedAt !== undefined || last.outcome)) list.push({ openedAt: -Infinity, outcome: 'live' });
      else if ((entry.event === 'live' || entry.event === 'not-opened' || entry.event === 'maybe-open') && last) last.outcome = entry.event;
      else if (entry.event === 'ended' && last && last.endedAt === undefined) last.endedAt = at;
    }
    let count = 0;
    let pending = 0;
    for (const list of episodes.values()) {
      const live = list.filter((e) => e.openedAt <= received && e.outcome !== 'not-opened' && !(e.endedAt !== undefined && e.endedAt < sent));
      if (!live.length) continue;
      count++;
      if (live.every((e) => e.outcome === undefined)) pending++;
    }
    for (const { sentAt: began, doneAt } of scrapes.values()) if (began <= received && !(doneAt !== undefined && doneAt < sent)) count++;
    return { count, pending };
  }

  /** The entries so far, of one target or all: only what was appended since the last read is read and parsed (workers ask it around every interact). */
  private entries(target?: string): LedgerEntry[] {
    this.readAppended();
    return target === undefined ? this.seen.entries : (this.seen.byTarget.get(target) ?? []);
  }

  private readAppended(): void {
    const size = statSync(this.file, { throwIfNoEntry: false })?.size ?? 0;
    if (size < this.seen.bytes) this.seen = { bytes: 0, rest: Buffer.alloc(0), entries: [], byTarget: new Map() };
    if (size === this.seen.bytes) return;
    const added = Buffer.alloc(size - this.seen.bytes);
    const fd = openSync(this.file, 'r');
    try {
      readSync(fd, added, 0, added.length, this.seen.bytes);
    } finally {
      closeSync(fd);
    }
    const text = Buffer.concat([this.seen.rest, added]);
    const end = text.lastIndexOf(0x0a) + 1;
    for (const line of text.subarray(0, end).toString('utf8').split('\n')) {
      try {
        if (!line.trim()) continue;
        const entry = JSON.parse(line) as LedgerEntry;
        this.seen.entries.push(entry);
        const ofTarget = this.seen.byTarget.get(entry.target);
        if (ofTarget) ofTarget.push(entry);
        else this.seen.byTarget.set(entry.target, [entry]);
      } catch {
        // a line cut short by a killed process
      }
    }
    this.seen.bytes = size;
    this.seen.rest = text.subarray(end);
  }

  private read(target?: string) {
    const open = new Map<string, Extract<LedgerEntry, { event: 'created' }>>();
    const live = new Set<string>();
    // Since the job's last stop: interacts sent to open a session, refusals of them, and whether one may have opened one.
    const tries = new Map<string, { sent: number; refused: number; held: boolean }>();
    const triesOf = (key: string) =>
      tries.get(key) ?? (tries.set(key, { sent: 0, refused: 0, held: false }).get(key) as { sent: number; refused: number; held: boolean });
    for (const entry of this.entries(target)) {
      if (!('jobId' in entry) || entry.jobId === undefined) continue;
      const key = `${entry.target} ${jobKey(entry.jobId)}`;
      // A session opened again on a stopped job is 'created' between its interact's 'opening' and 'live': that keeps it live.
      if (entry.event === 'created') open.set(key, entry);
      else if (entry.event === 'opening') live.add(key), triesOf(key).sent++;
      else if (entry.event === 'live' || entry.event === 'maybe-open') live.add(key), (triesOf(key).held = true);
      else if (entry.event === 'not-opened') live.delete(key), triesOf(key).refused++;
      else if (entry.event === 'ended' && open.get(key)?.identity === entry.identity) open.delete(key), live.delete(key), tries.delete(key);
    }
    // Every interact that would open a session was refused (or never sent): the job holds nothing.
    const refused = new Set([...tries].filter(([, t]) => !t.held && t.refused >= t.sent && t.refused > 0).map(([key]) => key));
    return { open: [...open.values()], live, refused };
  }

  private write(entry: LedgerEntry): void {
    // One short line per append: several workers write to the same file without interleaving.
    const line = `${redact(JSON.stringify(entry))}\n`;
    try {
      appendFileSync(this.file, line);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      mkdirSync(path.dirname(this.file), { recursive: true });
      appendFileSync(this.file, line);
    }
  }
}
