/**
 * The suite's one client of the target. Every request goes through the transport (exchange.ts:
 * timed, bounded) and:
 * - is cancelled when its test ends (the signal);
 * - backs off on 429 (Retry-After when it means something, else exponential with jitter), or,
 *   once the team's rate is known, waits for its place in the window (schedule.ts);
 * - reaches the test only redacted: no key can flow from an answer into an assertion message;
 * - is attached to the report with `Authorization` and credential headers redacted, tallied in the
 *   run's cost, and written to the ledger when it creates, settles or stops a session.
 */
import { setMaxListeners } from 'node:events';
import http from 'node:http';
import https from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { RunError } from '../config/errors';
import type { Settings } from '../config/settings';
import type { Coordination } from '../coordination/coordination';
import { countCredits, countRequest, countScrape, countUnearned } from '../coordination/cost';
import { limiterOf, marginMs, type Schedule } from '../coordination/schedule';
import { epochOf, exchange, type RawAnswer } from '../http/exchange';
import { readRefusal, retryDelayMs } from '../http/limits';
import { redact, redactAuthorization } from '../http/redact';
import { type Answer, answerOf, interactPath, JOB_OF_PATH } from './answer';
import type { Ledger } from './ledger';
import { settlementOf } from './settlements';
import type { Identity, Target } from './target';

export { type Answer, interactPath, JSON_CONTENT_TYPE, JSON_ERROR_CONTENT_TYPE, type JsonBody, summary } from './answer';

/**
 * A kept-alive connection of its own (one socket at most): requests sent on it one after the other
 * share the connection while the target keeps it open. Identities belong to requests, not
 * connections: a refused identity is also sent where a valid key has just been.
 */
export type Connection = http.Agent;

/**
 * What to do with a 429: `retry` within the back-off budget and throw a RunError past it;
 * `return-last` retry likewise but hand back the last 429 instead of throwing; `once` never retry.
 * The default is `retry`, and `once` for an identity without a valid key (its 429 is a refusal).
 */
export type On429 = 'retry' | 'return-last' | 'once';

export interface SendOptions {
  method: 'GET' | 'POST' | 'DELETE' | 'OPTIONS';
  path: string;
  as: Identity;
  data?: unknown;
  on429?: On429;
  /** Attach the exchange to the report (default true); the burst attaches one summary instead. */
  attach?: boolean;
  /** On a kept-alive connection of the client's pool: for the burst, whose timing bounds nothing. */
  pooled?: boolean;
  /** On this kept-alive connection (`Client.connection()`), after whatever it carried before. */
  connection?: Connection;
  /** Asked after a 429, before backing off: `true` ends the retries, and the 429 is the answer. */
  giveUpOn429?: (attempt: number, answer: Answer) => Promise<boolean>;
  /** An interact that may open a session: its 429 may be a cap's, and teaches a rate only where its words say so. */
  opens?: boolean;
  /** The interact that provisions a session (not one that uses or reopens it): for the test's trace. */
  provisions?: true;
  /** Called just before each attempt is sent. */
  onAttempt?: () => void;
}

/** Below this, a place or a turn was free: taking it costs a few milliseconds of files and locks. */
const WAITED_FOR_LIMIT_MS = 20;
/** A request that has waited this long for a rate limit says so, once. */
const TELL_AFTER_MS = 5_000;
/** Once a request of the team waited its whole back-off budget in vain, an owner's stop still tries this long: a limiter that never recovers ends the run within one budget. */
const AFTER_EXHAUSTION_MS = 5_000;
/** Places in a row refused by the limit after which waiting for the next counts against the back-off budget. */
const PLACES_REFUSED = 3;

/** Attachments past this size are cut, with a note saying how much was left out. */
export const ATTACHMENT_LIMIT_BYTES = 64 * 1024;

export interface ClientOptions {
  target: Target;
  settings: Pick<Settings, 'requestTimeoutMs' | 'maxBodyBytes' | 'backoffBudgetMs'> & Partial<Pick<Settings, 'testTimeoutMs'>>;
  /**
   * With the run's coordination, requests that back off take turns with the run's other workers,
   * keep to each limiter's schedule, and wait while another worker's burst sends.
   */
  coordination?: Coordination;
  /** Where exchanges are attached (a test's report); nothing is attached without it. */
  attach?: (name: string, body: string) => Promise<void>;
  /** Records the owner's stops that ended a session. */
  ledger?: Ledger;
  /** A request the target leaves unanswered ends the run (a test's client; not the cleanup's, which runs as the run ends). */
  endsRunOnHang?: boolean;
  /** Told of every answer a test gets, in order (its reproduction's trace). */
  onAnswer?: (answer: Answer, request: SendOptions) => void;
}

export type Client = ReturnType<typeof createClient>;

/** How long the last stops on each target took, in this process (answered 200 or 404, not the burst's): a refusal's hold is sized from their median, up to STOP_EXCHANGE_CAP_MS. */
const recentStops = new Map<string, number[]>();
const RECENT_STOPS = 8;
/** A target whose stops take longer makes the refusal tests not verifiable rather than hold each session for minutes. */
const STOP_EXCHANGE_CAP_MS = 2_000;

export function createClient(options: ClientOptions) {
  const { target, settings, coordination } = options;
  const controller = new AbortController();
  const { signal } = controller;
  // The burst has hundreds of requests in flight on one signal.
  setMaxListeners(0, signal);
  const spell = coordination?.quietSpell();
  let pool: http.Agent | undefined;
  const connections = new Set<Connection>();
  const poolOf = () => (pool ??= new (target.baseURL.startsWith('https:') ? https : http).Agent({ keepAlive: true, maxSockets: 256 }));
  return {
    target,
    coordination,
    backoffBudgetMs: settings.backoffBudgetMs,
    /** The median of the last few stops' exchanges on this target (ms): how long a stop takes now (one slow outlier does not lengthen every hold). */
    stopExchangeMs: () => {
      const recent = [...(recentStops.get(target.baseURL) ?? [])].sort((a, b) => a - b);
      return Math.min(STOP_EXCHANGE_CAP_MS, recent.length ? recent[Math.floor(recent.length / 2)] : 0);
    },
    /** Aborted by `cancel`: the client's requests and back-off waits end at once. */
    signal,
    cancel: () => {
      controller.abort();
      pool?.destroy();
      for (const connection of connections) connection.destroy();
    },
    /** A kept-alive connection of its own, for requests that must share one; closed by `release`, or when the client is cancelled. */
    connection: (): Connection => {
      const connection = new (target.baseURL.startsWith('https:') ? https : http).Agent({ keepAlive: true, maxSockets: 1, maxFreeSockets: 1 });
      connections.add(connection);
      return connection;
    },
    release: (connection: Connection) => {
      connections.delete(connection);
      connection.destroy();
    },
    /** Runs `send` while no other worker's request is in flight (at most REQUEST_TIMEOUT_MS is waited for them, a back-off budget for another's spell), holding theirs back; `quiet` false when another's spell outlasted that. */
    quietly: <T>(send: (quiet: boolean) => Promise<T>): Promise<T> =>
      spell ? spell.hold(settings.requestTimeoutMs, settings.backoffBudgetMs, signal, send) : send(true),
    /** Where the run's sessions and charges are written (a test's client has one). */
    ledger: options.ledger,
    /** The stop of `jobId`'s session as `as`: DELETE /v2/scrape/{jobId}/interact. */
    stop(jobId: string, as: Identity, options: Omit<SendOptions, 'method' | 'path' | 'as'> = {}): Promise<Answer> {
      return this.send({ method: 'DELETE', path: interactPath(jobId), as, ...options });
    },
    async send(request: SendOptions): Promise<Answer> {
      const on429 = request.on429 ?? (request.as.withoutValidKey ? 'once' : 'retry');
      const team = request.as.team ?? request.as.name;
      const queue = on429 !== 'once' ? coordination?.backoffQueue(team) : undefined;
      const limiter = request.as.withoutValidKey ? undefined : limiterOf(request.method, request.path);
      const schedule = limiter ? coordination?.schedule(team, limiter) : undefined;
      // An owner's stop (of its own sessions, or a probe of an unknown job) goes first, and still tries after other requests gave up: they never take a live session's stop with them.
      const first = request.method === 'DELETE' && request.as.owner === true;
      // The burst and one-off probes go at once, and, once the target stopped answering, the stops that end the run: they take their places all the same.
      const paced = on429 !== 'once' && !request.pooled && !(first && coordination?.hanging());
      const started = performance.now();
      const since = Date.now();
      let deadline = started + settings.backoffBudgetMs;
      // Waits that are the plan (a place in the window, a slot under a cap) push the deadline, never past a test's length.
      const latest = started + Math.max(settings.backoffBudgetMs, settings.testTimeoutMs ?? 0);
      const cancelled = (while_: string) => (error: unknown) => {
        if (!signal.aborted) throw error;
        throw new RunError(`${request.method} ${request.path} as ${request.as.name}: cancelled while ${while_}, its test had ended`, lastStatus);
      };
      // A burst's spell lasts its sends, at most a few requests' timeouts, and, on a limit it shares, its recovery.
      const spellDeadline = deadline + 4 * settings.requestTimeoutMs;
      let told = false;
      let waitedForLimit = 0;
      // Whether a 429 before the answer was a limit's, not only a cap's on live sessions (a reproduction sends such a request into the limit again).
      let limitRefused = false;
      // The last answer's status: a request cancelled while it waits has none in flight.
      let lastStatus: number | undefined;
      // Places under the learnt rate that met a limit's 429 in a row.
      let refusedWhenPlaced = 0;
      // An owner's stop once its limiter's budget ran out in vain for another request: until when it still tries.
      let graceUntil: number | undefined;
      const exhaustedKey = limiter ?? 'other';
      const isCap = (answer: Answer) =>
        request.opens === true && (answer.refusal?.kind === 'cap' || (answer.refusal?.kind === undefined && answer.refusal?.roomInWindow === true));
      // Every 429 so far, this answer's included, was a cap's: what a reproduction must not send into the rate limit.
      const onlyCapped = (answer: Answer) => {
        if (!limitRefused && (answer.attempts > 1 || answer.status === 429) && (answer.status !== 429 || isCap(answer))) answer.onlyCapped = true;
      };
      try {
        for (let attempts = 1; ; attempts++) {
          const planned = schedule?.rate() !== undefined;
          // Once the rate is known, the schedule keeps the order; before, the back-off queue does.
          const turnFrom = performance.now();
          // A spell's own requests never queue behind another worker's, which waits for the spell.
          const hadTurn =
            queue && !planned && !spell?.holding() ? await queue.turn(deadline, signal, exhaustedKey).catch(cancelled('waiting its turn after 429')) : true;
          waitedForLimit += performance.now() - turnFrom;
          // Another request of the run waited its whole budget for this team's limit in vain: one try, no waiting; an owner's stop, a few seconds.
          const exhausted = queue?.exhausted(exhaustedKey) ?? false;
          const giveUp = !first && exhausted;
          let at: number | undefined;
          for (;;) {
            if (schedule && paced) {
              const place = await schedule.admit(first, since, signal, latest).catch(cancelled('waiting for a place under the rate limit'));
              // Waiting for a place is the plan, not a limiter that does not recover, until places in a row met 429: then the plan no longer holds.
              if (refusedWhenPlaced < PLACES_REFUSED) deadline = Math.min(deadline + place.waitedMs, latest, graceUntil ?? Infinity);
              waitedForLimit += place.waitedMs;
              at = place.at;
            }
            // While another worker's spell is up, a place taken is given back: the holder's own requests need the room.
            if (schedule && paced && at !== undefined && schedule.rate() && performance.now() < spellDeadline && spell?.othersHolding()) {
              schedule.giveBack(at);
              await spell.cleared(spellDeadline, signal).catch(cancelled("waiting for another worker's spell"));
              continue;
            }
            const spellWait = performance.now();
            await spell?.enter(spellDeadline, signal).catch(cancelled("waiting for another worker's spell"));
            // Held by another worker's spell past its place: under a known rate it takes a new one, so that the requests held with it do not all go at once.
            if (!schedule || !paced || performance.now() - spellWait <= marginMs(schedule.rate()?.windowMs ?? 0)) break;
            if (at !== undefined) schedule.giveBack(at);
            if (!schedule.rate()) {
              at = schedule.sent();
              break;
            }
            spell?.leave();
          }
          let answer: Answer;
          try {
            request.onAttempt?.();
            if (schedule && !paced) at = schedule.sent();
            answer = await sendOnce(options, signal, request, attempts, request.connection ?? (request.pooled ? poolOf() : undefined));
            if (waitedForLimit >= WAITED_FOR_LIMIT_MS) answer.waitedForLimitMs = Math.round(waitedForLimit);
          } finally {
            spell?.leave();
          }
          lastStatus = answer.status;
          if (exhausted && answer.status !== 429) queue?.recovered(exhaustedKey);
          countRequest(request.as.team ?? 'keyless', JOB_OF_PATH.test(request.path), answer.status);
          if (request.method === 'DELETE' && !request.pooled && (answer.status === 200 || answer.status === 404))
            recentStops.set(target.baseURL, [...(recentStops.get(target.baseURL) ?? []), answer.receivedAt - answer.sentAt].slice(-RECENT_STOPS));
          if (schedule && at !== undefined) {
            schedule.left(at, epochOf(answer.sentAt));
            if (answer.status === 429) answer.refusal = judge(schedule, at, answer, request);
            // A cap's refusal went through the rate's limiter, and counts against its window.
            schedule.answered(
              at,
              answer.status === 429 &&
                !(request.opens && (answer.refusal?.kind === 'cap' || (answer.refusal?.kind === undefined && answer.refusal?.roomInWindow === true))),
            );
          }
          if (answer.status === 429 && on429 !== 'once' && giveUp && on429 === 'retry') {
            await record(options, answer, request);
            throw new RunError(
              `${request.method} ${request.path} as ${request.as.name} answered 429, and is not tried again: another request of this run waited the whole back-off budget ` +
                `(BACKOFF_BUDGET_MS=${settings.backoffBudgetMs}) and this team's rate limit never recovered.`,
              429,
            );
          }
          if (answer.status === 429 && on429 !== 'once' && !giveUp) {
            if (await request.giveUpOn429?.(attempts, answer)) {
              onlyCapped(answer);
              await record(options, answer, request);
              return answer;
            }
            // Under a known rate the schedule gives the next place; a pause still keeps a refusing target from a tight loop.
            const wait = schedule?.rate()
              ? Math.min(100 * 2 ** (attempts - 1), 2_000)
              : retryDelayMs(attempts, answer.headers['retry-after'], Math.random, performance.now() - started);
            // A cap's refusal of an interact that would open a session waits for a slot, not for a limiter to recover: not a back-off.
            const capped = isCap(answer);
            if (!capped) limitRefused = true;
            // Refused while this team's own window had room by a rate that still stands: not its schedule's doing, and said in the summary.
            if (!capped && answer.refusal?.unearned) countUnearned(team);
            refusedWhenPlaced = !capped && planned ? refusedWhenPlaced + 1 : 0;
            if (capped) deadline = Math.min(deadline + wait, latest);
            else if (!schedule?.rate()) queue?.join();
            // Once per request that waits long: which team, why, and for how long so far.
            if (!told && performance.now() - started + wait > TELL_AFTER_MS) {
              told = true;
              console.log(
                `Waiting for the ${team} team's rate limit: ${request.method} ${request.path} got 429 ${attempts} time(s) ` +
                  `(${answer.headers['retry-after'] ? `Retry-After: ${answer.headers['retry-after']}` : 'no Retry-After'}); ${Math.round((performance.now() - started) / 1000)} s so far, at most ${Math.round(settings.backoffBudgetMs / 1000)} s (BACKOFF_BUDGET_MS).`,
              );
            }
            // Another request's budget ran out in vain: an owner's stop tries 5 s, or one wait the target asks for, more.
            if (first && exhausted) deadline = Math.min(deadline, (graceUntil ??= performance.now() + Math.max(AFTER_EXHAUSTION_MS, wait + 1_000)));
            if (performance.now() + wait <= deadline) {
              await sleep(wait, undefined, { signal }).catch(cancelled('backing off after 429'));
              continue;
            }
            if (hadTurn && (!first || on429 === 'retry')) queue?.exhaust(exhaustedKey);
            if (on429 === 'retry') {
              await record(options, answer, request);
              const why =
                graceUntil !== undefined && deadline >= graceUntil
                  ? `another request of this run waited the whole back-off budget (BACKOFF_BUDGET_MS=${settings.backoffBudgetMs}) for this limit in vain, and this stop tried a few seconds more`
                  : `the back-off budget (BACKOFF_BUDGET_MS=${settings.backoffBudgetMs}) is used up. Raise it, or run fewer workers against this target.`;
              throw new RunError(`${request.method} ${request.path} as ${request.as.name} still answered 429 after ${attempts} attempts: ${why}`, 429);
            }
          }
          onlyCapped(answer);
          await record(options, answer, request);
          return answer;
        }
      } finally {
        queue?.leave();
      }
    },
  };
}

/**
 * What a 429 was, as far as the run can tell (limits.ts): its words read, and whether the rate's
 * window had room. A rate's refusal teaches the schedule; an interact that may open a session
 * teaches it only where its words say rate, since its 429 may be a cap's.
 */
function judge(schedule: Schedule, at: number, answer: Answer, request: SendOptions): Answer['refusal'] {
  const refusal = readRefusal(answer.text, answer.headers);
  const room = schedule.hadRoom(at);
  const before = schedule.rate();
  const rate = refusal.kind === 'rate' || (refusal.kind === undefined && !request.opens && request.on429 !== 'once');
  if (rate) schedule.learn(at, refusal, Date.now());
  // Room by a rate this refusal did not correct, and no cap's words: another's use of the limit, not the schedule's error.
  const unearned = room === true && refusal.kind !== 'cap' && JSON.stringify(schedule.rate()) === JSON.stringify(before);
  return { ...refusal, ...(room === undefined ? {} : { roomInWindow: room }), ...(unearned ? { unearned } : {}) };
}

const TIMED_OUT = /no complete answer within \d+ ms/;

/** One attempt: the exchange, its failure as an error of the run, the answer redacted and parsed. */
async function sendOnce(
  { target, settings, endsRunOnHang, coordination }: ClientOptions,
  signal: AbortSignal,
  { method, path, as, data, pooled }: SendOptions,
  attempts: number,
  agent?: http.Agent,
): Promise<Answer> {
  const headers: Record<string, string> = as.authorization === undefined ? {} : { [as.header ?? 'Authorization']: as.authorization };
  let raw: RawAnswer;
  const send = (on?: http.Agent) =>
    exchange(target.baseURL + path, { method, headers, data, timeoutMs: settings.requestTimeoutMs, maxBodyBytes: settings.maxBodyBytes, signal, agent: on });
  try {
    // Sent again once, on a connection of its own, when the kept-alive one it reused was reset before any answer (Node's documented race:
    // after a stall the target may have closed every idle connection of the pool); never a POST, which may have been received.
    const resend = (error: unknown) =>
      method !== 'POST' && (error as { reusedSocket?: boolean }).reusedSocket && (error as NodeJS.ErrnoException).code === 'ECONNRESET';
    raw = await send(agent).catch((error) => (resend(error) ? send() : Promise.reject(error)));
  } catch (error) {
    const reason = error instanceof RunError ? error.message : ((error as NodeJS.ErrnoException).code ?? (error as Error).message);
    const failure = new RunError(`${method} ${path} as ${as.name} failed: ${redact(String(reason).split('\n')[0])}`);
    // The burst's pooled requests are left out: hundreds at once may time out on a busy runner, a target that answers the others is not hanging.
    if (endsRunOnHang && !pooled && !signal.aborted && (TIMED_OUT.test(failure.message) || /ECONNREFUSED/.test(failure.message)))
      coordination?.markHang(failure.message);
    throw failure;
  }
  return answerOf(raw, method, path, attempts, agent !== undefined);
}

/** The owner's stop that ended a session, and every settlement a stop reported, go in the ledger; the exchange goes in the report. */
async function record({ target, ledger, attach, onAnswer, coordination }: ClientOptions, answer: Answer, request: SendOptions): Promise<void> {
  onAnswer?.(answer, request);
  const jobId = JOB_OF_PATH.exec(answer.path)?.[1];
  if (answer.method === 'POST' && answer.path === '/v2/scrape' && answer.status === 200) countScrape();
  const settled = jobId && answer.method === 'DELETE' ? settlementOf(answer) : undefined;
  if (ledger && jobId && settled) ledger.settled({ target: target.baseURL, jobId, identity: request.as.name, ...settled });
  else if (ledger && jobId && answer.method === 'DELETE' && answer.status === 200)
    ledger.reported({ target: target.baseURL, jobId, identity: request.as.name, ...(typeof answer.body?.creditsBilled === 'number' ? { stated: true } : {}) });
  // Whether stops state their prices, as the first stop of a session shows: where they do not, the account tells them (account.ts stopPriced).
  if (jobId && answer.method === 'DELETE' && answer.status === 200 && request.as.owner && !ledger?.endedHere(target.baseURL, jobId, request.as.name))
    coordination?.showPricing(typeof answer.body?.creditsBilled === 'number' ? 'stated' : 'silent');
  // A repeat stop that replays the first one's result is no new charge.
  if (jobId && answer.method === 'DELETE' && answer.status === 200 && !(request.as.owner && ledger?.endedHere(target.baseURL, jobId, request.as.name)))
    countCredits(answer.body?.creditsBilled);
  // The owner's, or another team's stop of a session it opened itself (simultaneous-opens' caps-apart).
  const creator = request.as.owner || (ledger && jobId && answer.method === 'DELETE' && ledger.creatorIdentity(target.baseURL, jobId) === request.as.name);
  if (ledger && jobId && creator && answer.method === 'DELETE' && (answer.status === 200 || answer.status === 404)) {
    ledger.ended({ target: target.baseURL, jobId, identity: request.as.name, status: answer.status, sent: new Date(epochOf(answer.sentAt)).toISOString() });
  } else if (ledger && jobId && settled && request.as.team && request.as.team !== 'foreign') {
    // Settled under another scheme word with the owner's key: the session ended all the same, so nobody stops it again.
    // Another team's settlement is a fault its test reports; the teardown still stops the session.
    const creator = ledger.creatorIdentity(target.baseURL, jobId);
    if (creator && !ledger.endedHere(target.baseURL, jobId, creator)) ledger.ended({ target: target.baseURL, jobId, identity: creator, status: answer.status });
  }
  if (attach && request.attach !== false) await attach(`${answer.method} ${answer.path} as ${request.as.name} → ${answer.status}`, describe(answer, request));
}

/** The attachment of one exchange: request (credential redacted), answer, timing; cut past the limit. */
function describe(answer: Answer, { as, data }: SendOptions): string {
  const record = {
    request: {
      method: answer.method,
      path: answer.path,
      identity: as.name,
      headers: as.authorization === undefined ? {} : { [as.header ?? 'Authorization']: redactAuthorization(as.authorization) },
      body: data,
    },
    response: { status: answer.status, headers: answer.headers, body: answer.body ?? answer.text },
    timing: { durationMs: +(answer.receivedAt - answer.sentAt).toFixed(2), attempts: answer.attempts },
    connection: answer.reusedConnection === undefined ? 'its own' : answer.reusedConnection ? 'kept alive, after an earlier request' : 'kept alive, new',
  };
  const text = redact(JSON.stringify(record, null, 2));
  return text.length <= ATTACHMENT_LIMIT_BYTES
    ? text
    : `${text.slice(0, ATTACHMENT_LIMIT_BYTES)}\n… cut: ${text.length - ATTACHMENT_LIMIT_BYTES} more characters (attachments stop at ${ATTACHMENT_LIMIT_BYTES})`;
}
