/**
 * Sessions a test provisions through the public flow (scrape, then interact), and their cleanup.
 * Every job is in the ledger as soon as the scrape answers; whatever happens to the test, its
 * teardown stops every session it created that no owner's stop has ended, each on its own, and
 * lists every one it could not stop.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { notVerifiable } from '../checks/checks';
import { schemaErrors } from '../checks/schemas';
import { lastStatusOf, RunError } from '../config/errors';
import type { Settings } from '../config/settings';
import { giveBack } from '../coordination/budget';
import { countProvisioningRetry, countSession } from '../coordination/cost';
import type { SessionSlots } from '../coordination/session-slots';
import { openAccount, REFUSER_OPENING } from './account';
import { PROVISIONING_RACE_MS } from './answer';
import { type Opening, openingOf } from './cap-discovery';
import { stopAsOwner } from './cleanup';
import { type Answer, type Client, interactPath, summary } from './client';
import type { Ledger } from './ledger';
import type { Identities, Identity } from './target';

export interface Session {
  jobId: string;
  /** The scrape that created the job. */
  scrape: Answer;
  /** The interact call that created the session: the session began inside its sentAt..receivedAt. */
  created: Answer;
  /** The team that owns it: the owner, or the burst team for the rate-limit burst. */
  owner: Identity;
}

export interface ProvisionOptions {
  /** Pause between the scrape and the interact that creates the session. */
  gapMs?: number;
  /** Leave the exchanges out of the report (the sequences rule attaches its own history instead). */
  quiet?: boolean;
  /** The team that owns the session: the owner unless said otherwise. */
  as?: Identity;
  /** Room for it was taken with others (provisionMany): a cap that shows is the caller's to handle. */
  reserved?: boolean;
}

/** What the sessions' code runs: cheap, and billed at the code rate (a prompt bills more). */
export const INTERACT_BODY = { code: 'console.log("conformance session")', language: 'node' };

/** Job ids as the ledger and cleanup accept them: nothing that could turn a path into another path. */
const PLAIN_ID = /^[A-Za-z0-9_-]{1,100}$/;

/** A scrape job the run made for a session, and its scrape's answer. */
export type ScrapedJob = { jobId: string; scrape: Answer };

/** An interact that would open a session was refused with 429 while the team's limiter had room: the target's cap on live sessions. */
export class CapReached extends Error {
  /** `job`: the scrape job the refused interact was for, which a later try opens its session on (no new scrape). */
  constructor(
    readonly cap: number,
    readonly job?: ScrapedJob,
  ) {
    super(`the target refused a session beyond its cap of ${cap} live session(s) per team`);
    this.name = 'CapReached';
  }
}

/** The run's session budget is spent, or the share of it given to these sessions (`allowance`). */
export class BudgetSpent extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BudgetSpent';
  }
}

export interface SessionsOptions {
  api: Client;
  identities: Identities;
  settings: Pick<
    Settings,
    | 'scrapeUrl'
    | 'sessionCap'
    | 'backoffBudgetMs'
    | 'requestTimeoutMs'
    | 'testTimeoutMs'
    | 'accountCheck'
    | 'accountSettleMs'
    | 'sessionBudget'
    | 'budgetFolder'
  >;
  ledger: Ledger;
  testId?: string;
  signal?: AbortSignal;
  /** A share of the run's budget (the sequences rule's): past it, or past the budget, provisioning throws BudgetSpent instead of ending the test as not verifiable. */
  allowance?: { left: number };
  /** The most sessions the run opens (its prediction within SESSION_BUDGET, or less to fit CREDIT_BUDGET), and what the chosen tests need: what a test refused one is told would verify it. */
  budget?: { sessions: number; needed: number };
}

/** How long after its scrape's answer the target last found a new job, where it did not at once: told to every worker. */
const PROVISIONING_LAG = 'provisioning-lag';
const FIRST_INTERACT = 'first-interact-answered';
/** Whether this process saw the run's first interact answered, or waited for it as long as it may. */
let firstAnswered = false;

/** The sessions of one test (or one history of the sequences rule): provisioned, used, and stopped afterwards. */
export class Sessions {
  /** Every job a session may have followed, in the order created, with the team that owns it. */
  private readonly created: { jobId: string; owner: Identity }[] = [];
  private readonly inFlight = new Set<Promise<unknown>>();
  /** Room taken for live sessions, per team (session-slots.ts), and the sessions of this test that went live. */
  private readonly room = new Map<string, { slots: SessionSlots; taken: number }>();
  private readonly live: { jobId: string; owner: Identity }[] = [];

  constructor(private readonly options: SessionsOptions) {}

  private get owner(): Identity {
    return this.options.identities.owner;
  }

  private roomOf(owner: Identity) {
    const team = owner.team ?? owner.name;
    let room = this.room.get(team);
    if (!room) {
      const { settings, api } = this.options;
      if (!api.coordination)
        throw new RunError("sessions take turns under the target's cap with the run's other workers: their client needs the run's coordination");
      this.room.set(team, (room = { slots: api.coordination.sessionSlots(team, settings.sessionCap), taken: 0 }));
    }
    return room;
  }

  /** This test's sessions of `owner` that are live: provisioned, and not ended by an owner's stop it sent. */
  private liveOf(owner: Identity): number {
    return this.live.filter((session) => session.owner === owner && !this.options.ledger.endedHere(this.options.api.target.baseURL, session.jobId, owner.name))
      .length;
  }

  /**
   * Takes room for `count` live sessions of `owner` at once, before any is provisioned, giving back
   * what this test held: a test that needs several sessions at once never holds one while it waits
   * for another. Returns how many the target's cap allows (at most `count`).
   */
  async reserve(count: number, owner: Identity = this.owner): Promise<number> {
    const room = this.roomOf(owner);
    room.slots.release();
    room.taken = 0;
    // Waiting for room under a cap is the plan: the other tests hold their sessions for no longer than a test lasts.
    room.taken = await room.slots.take(
      count,
      performance.now() + Math.max(this.options.settings.backoffBudgetMs, this.options.settings.testTimeoutMs),
      this.options.api.signal,
    );
    return room.taken;
  }

  /** The cap on live sessions per team the run met or was told, if any. */
  cap(owner: Identity = this.owner): number | undefined {
    return this.roomOf(owner).slots.cap();
  }

  /**
   * Provisions a session; teardown waits for it even when the test was abandoned mid-way. A test
   * that reserved no room takes it for one session more than it has live. When the target's cap
   * shows, the room is given back and taken again under the cap, and provisioning tries again.
   */
  provision(options?: ProvisionOptions & { reserved?: boolean; job?: ScrapedJob }): Promise<Session> {
    const promise = this.provisionWithRoom(options);
    this.inFlight.add(promise);
    return promise.finally(() => this.inFlight.delete(promise));
  }

  /**
   * Provisions up to `count` sessions at once, as many as the target's cap allows; when the cap
   * shows meanwhile, those already provisioned are stopped and it begins again under the cap.
   */
  async provisionMany(count: number, options: ProvisionOptions = {}): Promise<Session[]> {
    const owner = options.as ?? this.owner;
    const deadline = { at: Infinity };
    // Jobs scraped for sessions the cap refused: the next try opens its sessions on them.
    let spare: ScrapedJob[] = [];
    for (;;) {
      const room = await this.reserve(count, owner);
      if (room === 0) throw new RunError(`the target allows no live session for the ${owner.name} (a cap of 0)`);
      const results = await Promise.allSettled(Array.from({ length: room }, () => this.provision({ ...options, reserved: true, job: spare.pop() })));
      const failures = results.filter((result) => result.status === 'rejected').map((result) => (result as PromiseRejectedResult).reason);
      if (!failures.length) return results.map((result) => (result as PromiseFulfilledResult<Session>).value);
      await this.stopLive(owner);
      const other = failures.find((reason) => !(reason instanceof CapReached));
      if (other) throw other;
      spare = [...spare, ...failures.flatMap((reason: CapReached) => (reason.job ? [reason.job] : []))];
      await this.pauseAfterCap(failures[0], deadline);
    }
  }

  /** A second between tries under a cap, for as long as a test lasts from the first time it showed: the sessions of other tests end meanwhile. */
  private async pauseAfterCap(reached: CapReached, deadline: { at: number }): Promise<void> {
    const { backoffBudgetMs, testTimeoutMs } = this.options.settings;
    if (deadline.at === Infinity) deadline.at = performance.now() + Math.max(backoffBudgetMs, testTimeoutMs);
    // Sessions the run cannot see hold the cap (a target that orphans them, another client of the team): this test cannot tell anything, the target's other answers still can.
    if (performance.now() + 1000 > deadline.at)
      notVerifiable(
        `${reached.message}, and no room came for as long as a test lasts (TEST_TIMEOUT_MS=${testTimeoutMs}, BACKOFF_BUDGET_MS=${backoffBudgetMs}): sessions the run did not open, or could not stop, hold it`,
      );
    await sleep(1000, undefined, { signal: this.options.api.signal });
  }

  private async provisionWithRoom(options: ProvisionOptions & { reserved?: boolean; job?: ScrapedJob } = {}): Promise<Session> {
    const owner = options.as ?? this.owner;
    const deadline = { at: Infinity };
    // Tried again under a cap, on the job already scraped: a scrape costs a credit, a wait for room nothing.
    let job = options.job;
    for (;;) {
      if (!options.reserved && this.roomOf(owner).taken <= this.liveOf(owner)) {
        if ((await this.reserve(this.liveOf(owner) + 1, owner)) <= this.liveOf(owner)) {
          throw new RunError(`the target's cap of ${this.cap(owner)} live session(s) per team leaves no room for another session of this test`);
        }
      }
      try {
        const session = await this.provisionNow({ ...options, job });
        this.live.push({ jobId: session.jobId, owner });
        return session;
      } catch (error) {
        // Room taken together for several sessions is the caller's to take again (provisionMany).
        if (!(error instanceof CapReached) || options.reserved) throw error;
        job = error.job;
        this.roomOf(owner).slots.release();
        this.roomOf(owner).taken = 0;
        await this.pauseAfterCap(error, deadline);
      }
    }
  }

  /** Stops, as its owner, every session of this test that is live: room given back must hold no session. */
  async stopLive(owner: Identity = this.owner): Promise<void> {
    await Promise.allSettled(this.inFlight);
    for (const { jobId } of this.live.filter((session) => session.owner === owner)) {
      if (this.options.ledger.endedHere(this.options.api.target.baseURL, jobId, owner.name)) continue;
      const problem = await stopAsOwner(this.options.api, owner, jobId);
      if (problem) throw new RunError(`could not stop ${jobId} to give its room back: ${problem}`);
    }
  }

  /**
   * A scrape job that never gets a session. It takes no room: it holds a job slot only while it is
   * scraped, and a test waiting for room while its own session runs could hold up every other.
   */
  jobWithoutSession(): Promise<{ jobId: string; scrape: Answer }> {
    return this.scrape(false, false, this.owner);
  }

  /**
   * Another interact call on a session, as real clients make between creating and stopping it.
   * On a session an owner's stop had ended, a 200 may begin a new one: the ledger opens it again.
   */
  async interact({ jobId, owner = this.owner }: Pick<Session, 'jobId'> & Partial<Pick<Session, 'owner'>>, { quiet = false } = {}): Promise<Answer> {
    const { api, ledger, testId } = this.options;
    // On a stopped session it may open a new one: a cap on live sessions then refuses it (429) for as
    // long as other tests hold theirs, and the refusal is the answer, not a wait.
    const reopens = ledger.endedHere(api.target.baseURL, jobId, owner.name);
    // It may open a new session: one of the budget's, given back if it opens none.
    const giveBack = reopens ? this.takeFromBudget() : undefined;
    const { answer, opening } = await this.sendOpening(owner, jobId, { marks: reopens, attach: !quiet });
    // Of interacts sent at once on a stopped job, the first to answer 200 writes the session it opened; the others used it.
    const opened = answer.status === 200 && reopens && ledger.endedHere(api.target.baseURL, jobId, owner.name);
    if (!opened) giveBack?.();
    if (answer.status === 429 && opening.cap !== undefined) this.roomOf(owner).slots.learn(opening.cap, answer.refusal?.cap);
    if (opened) {
      ledger.created({ target: api.target.baseURL, embedded: api.target.embedded, jobId, identity: owner.name, test: testId });
      countSession();
    }
    opening.ended(answer.status);
    return answer;
  }

  /**
   * Stops, as its owner, every session this test created that no owner's stop ended. Waits for
   * provisioning still in flight first. Returns one line per session it could not stop.
   */
  async cleanup(cleaner: Client): Promise<string[]> {
    await Promise.allSettled(this.inFlight);
    // All at once: a target that is slow to answer a stop holds up the end of the run once, not once per session.
    const { ledger, api } = this.options;
    const open = this.created.filter(({ jobId, owner }) => !ledger.endedHere(api.target.baseURL, jobId, owner.name));
    // A job whose interacts were all refused gets one stop, in case the target opens what it refuses: not waited for, nor reported as left running.
    const outcomes = await Promise.all(
      open.map(async ({ jobId, owner }) => ({
        jobId,
        problem: await stopAsOwner(cleaner, owner, jobId, { once: ledger.heldNothing(api.target.baseURL, jobId) }),
      })),
    );
    const problems = outcomes
      .filter(({ jobId, problem }) => problem && !ledger.heldNothing(api.target.baseURL, jobId))
      .map(({ jobId, problem }) => `${jobId} (${problem})`);
    // Room stays taken for a session that could not be stopped: it may still count against the cap.
    if (!problems.length) for (const room of this.room.values()) room.slots.release(), (room.taken = 0);
    return problems;
  }

  /** Waits until `session` is `ms` old, from its interact's answer. */
  holdUntil(session: Session, ms: number): Promise<void> {
    return sleep(Math.max(0, ms - (performance.now() - session.created.receivedAt)), undefined, { signal: this.options.signal });
  }

  /** Whether the budget has sessions beyond what the rules' own tests need (the sequences rule's share), and `count` left. */
  spare(count = 1): boolean {
    const { settings, budget = { sessions: settings.sessionBudget, needed: 0 } } = this.options;
    return budget.sessions - budget.needed > 2 && this.budgetLeft() >= count;
  }

  /** Takes `count` sessions of the run's budget for sessions opened outside these (a replay): all of them, or none and false. */
  fromBudget(count: number): boolean {
    const { settings, budget = { sessions: settings.sessionBudget, needed: 0 } } = this.options;
    const tickets: string[] = [];
    for (let i = 0; i < count; i++) {
      const ticket = this.options.api.coordination?.takeSession(budget.sessions, settings.budgetFolder);
      if (!ticket) return (tickets.forEach(giveBack), false);
      tickets.push(ticket);
    }
    return true;
  }

  /** How many sessions of the run's budget are left, every worker's together. */
  budgetLeft(): number {
    const { settings, budget = { sessions: settings.sessionBudget, needed: 0 } } = this.options;
    return this.options.api.coordination?.sessionsLeft(budget.sessions, settings.budgetFolder) ?? 0;
  }

  /** The owner's cap on live sessions as stated up front or in the target's words, not inferred. */
  statedCap(): number | undefined {
    return this.roomOf(this.owner).slots.statedCap();
  }

  /** The owner team's cap in its refusals' own words. */
  capInWords(): number | undefined {
    return this.roomOf(this.owner).slots.capInWords();
  }

  /**
   * One session on each of `count` new jobs, the jobs scraped first (a cap on jobs counts a scrape
   * in progress), then the interacts at once. While fewer than `enough` opened, as many of those a cap
   * refused are asked again, at growing intervals within `confirmMs` (a stop may release its slot late).
   */
  async openEvery(count: number, enough: number, confirmMs: number): Promise<{ answers: Answer[]; jobs: ScrapedJob[] }> {
    const jobs = await Promise.all(Array.from({ length: count }, () => this.scrape(true, false, this.owner)));
    const open = (job: ScrapedJob) => this.openOn(job);
    const answers = await Promise.all(jobs.map(open));
    const until = performance.now() + confirmMs;
    // Only as many as are missing, each wait twice the last: a target slow to free a slot is not flooded with refusals.
    for (let wait = 1000; performance.now() + wait < until; wait *= 2) {
      const missing = enough - answers.filter((answer) => answer.status === 200).length;
      const refused = answers.flatMap((answer, i) => (answer.status === 429 ? [i] : [])).slice(0, Math.max(0, missing));
      if (!refused.length) break;
      await sleep(wait, undefined, { signal: this.options.signal });
      await Promise.all(refused.map(async (i) => (answers[i] = await open(jobs[i]))));
    }
    return { answers, jobs };
  }

  /** An interact that would open a session on a job the run scraped before (openEvery's), once. */
  openOn(job: ScrapedJob): Promise<Answer> {
    return this.openAtOnce(1, { once: true, job }).then(({ opens }) => opens[0]);
  }

  /**
   * `count` interacts that would open a session on a new job, sent at once as the owner: the job is
   * in the ledger first, so that the teardown stops whatever they opened. Every one 404 (the job
   * not written yet) is tried again, as provisioning does.
   */
  async openAtOnce(count: number, { as, once, job }: { as?: Identity; once?: boolean; job?: ScrapedJob } = {}): Promise<{ jobId: string; opens: Answer[] }> {
    const owner = as ?? this.owner;
    if (this.roomOf(owner).taken <= this.liveOf(owner)) await this.reserve(this.liveOf(owner) + 1, owner);
    const giveBackSession = this.takeFromBudget();
    const { jobId, scrape } =
      job ??
      (await this.scrape(true, false, owner).catch((error) => {
        giveBackSession();
        throw error;
      }));
    const release = await this.written(scrape).catch((error) => {
      giveBackSession();
      throw error;
    });
    const opens = await this.untilWritten(scrape, release, () =>
      Promise.all(
        Array.from({ length: count }, async () => {
          const { answer, opening } = await this.sendOpening(owner, jobId, { once });
          opening.ended(answer.status);
          return answer;
        }),
      ),
    );
    if (opens.some((answer) => answer.status === 200)) this.live.push({ jobId, owner }), countSession();
    else giveBackSession();
    return { jobId, opens };
  }

  /** A scrape job; it goes in the ledger when a session may follow (`forSession`). */
  private async scrape(forSession: boolean, quiet: boolean, owner: Identity): Promise<{ jobId: string; scrape: Answer }> {
    const { api, ledger, settings, testId } = this.options;
    // The owner's account, and the foreign team's (which refuses the owner's sessions), are read before the run's first charge: the account check holds them to what the run saw.
    if (owner === this.owner)
      await Promise.all([openAccount(api, owner, settings), openAccount(api, this.options.identities.foreign, settings, REFUSER_OPENING)]);
    const token = randomUUID();
    const scraping = { target: api.target.baseURL, identity: owner.name, scrape: token };
    let sent = false;
    // Written as each attempt leaves (not while it waits for a place under the scrape limiter): a scrape holds a job slot from then on.
    const onAttempt = () => (sent || ledger.scrape('scraping', scraping), (sent = true));
    const answer = await api
      .send({ method: 'POST', path: '/v2/scrape', as: owner, data: { url: settings.scrapeUrl }, attach: !quiet, onAttempt })
      .catch((error) => {
        if (sent) ledger.scrape('scrape-done', scraping);
        throw error;
      });
    const jobId: unknown = answer.body?.data?.metadata?.scrapeId;
    if (answer.status === 200) {
      const price = answer.body?.data?.metadata?.creditsUsed;
      ledger.scraped({
        target: api.target.baseURL,
        jobId: typeof jobId === 'string' && PLAIN_ID.test(jobId) ? jobId : undefined,
        identity: owner.name,
        credits: typeof price === 'number' && Number.isFinite(price) ? price : undefined,
        scrape: token,
      });
    } else ledger.scrape('scrape-done', scraping);
    if (forSession && typeof jobId === 'string' && PLAIN_ID.test(jobId)) {
      ledger.created({ target: api.target.baseURL, embedded: api.target.embedded, jobId, identity: owner.name, test: testId });
      this.created.push({ jobId, owner });
    }
    const problems = answer.status === 200 ? schemaErrors(answer.body, 'scrape-result') : [`status ${answer.status}`];
    if (problems.length) throw new RunError(`provisioning: POST /v2/scrape must answer 200 with a scrape result (${problems.join('; ')}): ${summary(answer)}`);
    return { jobId: jobId as string, scrape: answer };
  }

  /**
   * One session from the run's budget (and this test's share of it), before anything is sent: a test
   * that gets none is not verifiable. Returns how to give it back, should nothing open.
   */
  private takeFromBudget(): () => void {
    const { allowance, settings, budget = { sessions: settings.sessionBudget, needed: 0 } } = this.options;
    if (allowance && allowance.left <= 0) throw new BudgetSpent(`its share of the session budget (${budget.sessions}) is spent`);
    if (!this.options.api.coordination) throw new RunError("sessions take the run's budget with its other workers: their client needs the run's coordination");
    const ticket = this.options.api.coordination.takeSession(budget.sessions, settings.budgetFolder);
    if (ticket) {
      if (allowance) allowance.left -= 1;
      return () => (giveBack(ticket), allowance && (allowance.left += 1));
    }
    const spent = `the run's session budget (${budget.sessions}, as predicted: SESSION_BUDGET, or less to fit CREDIT_BUDGET) is spent`;
    if (allowance) throw new BudgetSpent(spent);
    return notVerifiable(
      `${spent}, so this test could not open its session${budget.needed ? `: a budget of ${budget.needed} or more verifies every chosen test` : ''}`,
    );
  }

  private async provisionNow({ gapMs = 0, quiet = false, as: owner = this.owner, job }: ProvisionOptions & { job?: ScrapedJob } = {}): Promise<Session> {
    const giveBackSession = this.takeFromBudget();
    const tried: { sent?: boolean; status?: number } = {};
    try {
      return await this.provisionTaken({ gapMs, quiet, as: owner }, tried, job);
    } catch (error) {
      // Nothing opened (no interact sent, or one answered other than 200): a later test may have the session.
      if (!tried.sent || (tried.status !== undefined && tried.status !== 200)) giveBackSession();
      throw error;
    }
  }

  private async provisionTaken(
    { gapMs = 0, quiet = false, as: owner = this.owner }: ProvisionOptions,
    tried: { sent?: boolean; status?: number },
    job?: ScrapedJob,
  ): Promise<Session> {
    const { jobId, scrape } = job ?? (await this.scrape(true, quiet, owner));
    if (gapMs > 0 && !job) await sleep(gapMs, undefined, { signal: this.options.signal });
    const release = await this.written(scrape);
    let opening: Opening | undefined;
    const [interact] = await this.untilWritten(scrape, release, async () => {
      tried.sent = true;
      const sent = await this.sendOpening(owner, jobId, { attach: !quiet, provisions: true });
      opening = sent.opening;
      tried.status = sent.answer.status;
      opening.ended(sent.answer.status);
      return [sent.answer];
    });
    if (interact.status === 429) throw new CapReached(this.roomOf(owner).slots.learn(opening!.cap!, interact.refusal?.cap), { jobId, scrape });
    if (interact.status === 200) countSession();
    const problems = interact.status === 200 ? schemaErrors(interact.body, 'interact-result') : [`status ${interact.status}`];
    if (problems.length) throw new RunError(`provisioning: POST /v2/scrape/{jobId}/interact must answer 200 (${problems.join('; ')}): ${summary(interact)}`);
    return { jobId, scrape, created: interact, owner };
  }

  /**
   * One interact that may open a session on `jobId`, each attempt marked in the ledger (`marks`,
   * openingOf), a 429 returned at once (`once`) or waited out while it is the team's rate. The caller
   * ends the opening with the answer's status, once what it opened is written.
   */
  private async sendOpening(
    owner: Identity,
    jobId: string,
    { marks = true, once = false, attach = true, provisions }: { marks?: boolean; once?: boolean; attach?: boolean; provisions?: true },
  ): Promise<{ answer: Answer; opening: Opening }> {
    const opening = openingOf(this.options, owner, jobId, marks);
    const on429 = once ? { on429: 'once' as const } : { giveUpOn429: opening.giveUpOn429 };
    const answer = await this.options.api
      .send({
        method: 'POST',
        path: interactPath(jobId),
        as: owner,
        data: INTERACT_BODY,
        attach,
        ...(marks ? { onAttempt: opening.onAttempt, opens: true, ...on429 } : {}),
        ...(provisions ? { provisions } : {}),
      })
      .catch((error) => {
        opening.ended(lastStatusOf(error));
        throw error;
      });
    return { answer, opening };
  }

  /**
   * `send`'s interacts, sent again while every one answers 404 (a job the target writes after answering
   * its scrape, as the hosted service does), PROVISIONING_RACE_MS at most; then `release` ends the run's
   * first interact's turn (written).
   */
  private async untilWritten(scrape: Answer, release: () => void, send: () => Promise<Answer[]>): Promise<Answer[]> {
    let notYet: number | undefined;
    try {
      for (let wait = 100, until = performance.now() + PROVISIONING_RACE_MS; ; wait *= 2) {
        const answers = await send();
        const found = answers.some((answer) => answer.status !== 404);
        if (found) this.learnLag(scrape, notYet);
        if (found || performance.now() + wait > until) return answers;
        countProvisioningRetry();
        notYet = Math.max(...answers.map((answer) => answer.receivedAt));
        await sleep(wait, undefined, { signal: this.options.signal });
      }
    } finally {
      release();
    }
  }

  /**
   * A target that wrote its last job late is given as long after this job's scrape: a 404 tried again is a request of the limit spent.
   * The run's first interact goes alone, the others waiting for its answer: until then nobody knows that lag. Returns what ends its turn.
   */
  private async written(scrape: Answer): Promise<() => void> {
    const turn: { lead?: () => void } = {};
    if (!firstAnswered) {
      // A waiter whose lead died takes the lead itself (readOnce): it stops waiting then.
      let becameLead = () => {};
      const leading = new Promise<void>((resolve) => (becameLead = resolve));
      const lead = () =>
        new Promise<boolean>((resolve) => {
          turn.lead = () => ((firstAnswered = true), resolve(true));
          becameLead();
        });
      const first = this.options.api.coordination?.readOnce(FIRST_INTERACT, lead, PROVISIONING_RACE_MS, this.options.signal);
      if (!turn.lead) await Promise.race([first, leading]);
      // Answered, or waited for as long as a job can take to be written: this process does not wait again.
      if (!turn.lead) firstAnswered = true;
    }
    const learnt = this.options.api.coordination?.readShared<number>(PROVISIONING_LAG);
    const lag = (typeof learnt === 'number' ? learnt : 0) - (performance.now() - scrape.receivedAt);
    if (lag > 0) await sleep(lag, undefined, { signal: this.options.signal });
    return turn.lead ?? (() => {});
  }

  /**
   * `notYet`: when the target last answered that it had no such job, a little past which it is taken to have written it; without one
   * (found at once), the wait shrinks a tenth, so that a target that got faster is not waited for. Never past half PROVISIONING_RACE_MS.
   */
  private learnLag(scrape: Answer, notYet: number | undefined): void {
    const { coordination } = this.options.api;
    const learnt = coordination?.readShared<number>(PROVISIONING_LAG);
    if (notYet === undefined && typeof learnt !== 'number') return;
    const lag = notYet === undefined ? (learnt as number) * 0.9 : notYet - scrape.receivedAt + 50;
    coordination?.share(PROVISIONING_LAG, Math.round(Math.min(lag, PROVISIONING_RACE_MS / 2)));
  }
}
