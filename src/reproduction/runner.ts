/**
 * What a reproduction does (bundled into each `<reports>/reproductions/<test-id>.mjs`): the
 * failed test's requests again, against BASE_URL with the keys of API_KEY, FOREIGN_API_KEY and
 * BURST_API_KEY, by the same callers, on the same connections, with the same pauses between an
 * answer and the next request; then the same named checks with the same bounds on the new
 * answers; then a stop of every session it opened. Exit 1: the fault shows; 0: it does not; 2:
 * the reproduction could not tell (a rate limit it could not wait out, a session it could not open).
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { plain } from '../config/errors';
import { type Answer, answerOf, interactPath, JOB_OF_PATH, PROVISIONING_RACE_MS } from '../domain/answer';
import { callersFor, type Identity, nearMissesOf } from '../domain/callers';
import { type CheckCall, runCheck } from '../domain/named-checks';
import { exchange } from '../http/exchange';
import { retryDelayMs } from '../http/limits';
import { redact, registerSecret } from '../http/redact';
import type { Plan } from './plan';
import { answerRefs, type Serialized, type TraceStep } from './trace';

class CouldNotTell extends Error {}

/**
 * How many times a short plan, or one that sends requests at once (not a burst), is tried before
 * the fault is said not to show: a race, or a clock that counts whole seconds, does not show it
 * every time.
 */
const ATTEMPTS = 3;
const SHORT_PLAN_MS = 20_000;
/** A request the run sent this soon after an earlier one raced it; a replay that sends it later than the run could have by more than RACE_SLACK_MS has not tried that race. */
const RACE_MS = 200;
const RACE_SLACK_MS = 50;
/**
 * A request the run sent into the team's rate limit (answered 429, or retried after one) is sent
 * into it again: the same caller first sends requests like it on jobs nobody has, a few at once,
 * until one is refused with 429; at most this many, for at most this long.
 */
export const DRAIN = { requests: 1_000, ms: 60_000, atOnce: 4 };

/** Where a replay within a run tells the run's ledger of the jobs it creates and the sessions it ends (caller roles, not keys). */
export interface SessionTracking {
  created(jobId: string, as: string): void;
  ended(jobId: string, as: string, status: number): void;
}

export async function reproduce(plan: Plan, env = process.env, print: (line: string) => void = console.log, tracking?: SessionTracking): Promise<0 | 1 | 2> {
  const baseURL = env.BASE_URL?.replace(/\/+$/, '');
  const keys = { apiKey: env.API_KEY ?? '', foreignApiKey: env.FOREIGN_API_KEY ?? '', burstApiKey: env.BURST_API_KEY };
  const needed = [
    ['BASE_URL', baseURL],
    ['API_KEY', keys.apiKey],
    ...(plan.steps.some((step) => step.as === 'foreign') ? [['FOREIGN_API_KEY', keys.foreignApiKey]] : []),
    ...(plan.steps.some((step) => step.as === 'burst') ? [['BURST_API_KEY', keys.burstApiKey]] : []),
  ];
  const missing = needed.filter(([, value]) => !value).map(([name]) => name);
  if (missing.length) {
    print(`COULD NOT TELL: set ${missing.join(', ')} (the target and its keys are read from the environment, never written here)`);
    return 2;
  }
  const nearMisses = nearMissesOf(keys.apiKey);
  for (const [name, key] of [
    ['API_KEY', keys.apiKey],
    ['FOREIGN_API_KEY', keys.foreignApiKey],
    ['BURST_API_KEY', keys.burstApiKey],
  ])
    if (key) registerSecret(key, name!);
  for (const form of Object.values(nearMisses)) if (form) registerSecret(form, 'NEAR_API_KEY');
  const callers: Record<string, Identity | undefined> = callersFor(keys as typeof keys & { foreignApiKey: string }, nearMisses, plan.schemeWordIgnored);
  const jobs = new Map<string, string>();
  // The run's job ids, wherever they appear (whatever their form, in any case), become this replay's.
  const replace = (text: string) => {
    for (const [old, now] of jobs)
      text = text.replace(new RegExp(old.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'gi'), (id) =>
        id !== id.toLowerCase() && id === id.toUpperCase() ? now.toUpperCase() : now,
      );
    return text;
  };
  const newAgent = (maxSockets: number) => new (baseURL!.startsWith('https:') ? https : http).Agent({ keepAlive: true, maxSockets });
  const connections = new Map<number, http.Agent>();
  const agentOf = (step: TraceStep) => {
    const key = step.pooled ? 0 : step.connection;
    if (key === undefined) return undefined;
    if (!connections.has(key)) connections.set(key, newAgent(step.pooled ? 256 : 1));
    return connections.get(key);
  };
  const send = async (step: Pick<TraceStep, 'method' | 'path' | 'data' | 'as' | 'on429'> & { status?: number }, agent?: http.Agent): Promise<Answer> => {
    const as = callers[step.as];
    if (!as) throw new CouldNotTell(`no key for the ${step.as} caller`);
    const path = replace(step.path);
    const started = performance.now();
    for (let attempt = 1; ; attempt++) {
      const raw = await exchange(baseURL + path, {
        method: step.method,
        headers: as.authorization === undefined ? {} : { [as.header ?? 'Authorization']: as.authorization },
        data: step.data,
        timeoutMs: plan.limits.requestTimeoutMs,
        maxBodyBytes: plan.limits.maxBodyBytes,
        agent,
      }).catch((error) => {
        throw new CouldNotTell(`${step.method} ${path} failed: ${redact(String((error as Error).message))}`);
      });
      const answer = answerOf(raw, step.method, path, attempt, agent !== undefined);
      if (answer.status !== 429 || step.on429 === 'once') return answer;
      const wait = retryDelayMs(attempt, answer.headers['retry-after'], Math.random, performance.now() - started);
      if (performance.now() - started + wait > plan.limits.backoffBudgetMs) {
        // The run took a 429 as this request's answer too, once its back-off gave up.
        if (step.on429 === 'return-last' || step.status === 429) return answer;
        throw new CouldNotTell(`${step.method} ${path} was still rate limited (429) after ${Math.round((performance.now() - started) / 1000)} s`);
      }
      await sleep(wait);
    }
  };

  // Stops of jobs nobody has (they open nothing), until the team's limit refuses one (429) or the bound: whether it did.
  const drain = async (step: TraceStep): Promise<boolean> => {
    const agent = newAgent(DRAIN.atOnce);
    const until = performance.now() + DRAIN.ms;
    let sent = 0;
    let refused = false;
    const sender = async () => {
      while (!refused && sent < DRAIN.requests && performance.now() < until) {
        sent++;
        const answer = await send({ method: 'DELETE', path: interactPath(randomUUID()), as: step.as, on429: 'once' }, agent).catch(() => undefined);
        if (answer?.status === 429) refused = true;
      }
    };
    await Promise.all(Array.from({ length: DRAIN.atOnce }, sender));
    agent.destroy();
    print(
      refused
        ? `(the ${step.as}'s stops of jobs nobody has met the team's rate limit after ${sent}: #${step.seq} is sent into it, as in the run)`
        : `(the ${step.as}'s ${sent} stops of jobs nobody has met no rate limit: #${step.seq} is sent without one)`,
    );
    return refused;
  };

  const answers: Answer[] = [];
  const opened = new Map<string, { jobId: string; as: string }>();
  const firstSent: number[] = [];
  const replay = async (step: TraceStep): Promise<Answer> => {
    firstSent[step.seq] = performance.now();
    let answer = await send(step, agentOf(step));
    // A session opened just after its scrape may not be found yet: tried again, as the run does.
    for (
      let waitMs = 100, since = performance.now();
      step.provisions && step.status === 200 && answer.status === 404 && performance.now() - since < PROVISIONING_RACE_MS;
      waitMs *= 2
    ) {
      await sleep(waitMs);
      answer = await send(step, agentOf(step));
    }
    print(
      `#${step.seq} ${answer.method} ${answer.path} as ${step.as}${step.connection ? ` (connection ${step.connection})` : ''} → ${answer.status} ${answer.text.replace(/\s+/g, ' ').slice(0, 200)}`,
    );
    if (step.createdJob) {
      const created = answer.body?.data?.metadata?.scrapeId;
      if (answer.status !== 200 || typeof created !== 'string')
        throw new CouldNotTell(`the scrape that creates the job answered ${answer.status}, not 200 with a job id`);
      jobs.set(step.createdJob.toLowerCase(), created);
      tracking?.created(created, step.as);
    }
    const job = JOB_OF_PATH.exec(answer.path)?.[1];
    // A session it may have opened (200, or an interact that failed on the server's side) is stopped before it exits; one its owner stopped is not.
    if (job && step.method === 'POST' && (answer.status === 200 || answer.status >= 500)) opened.set(job.toLowerCase(), { jobId: job, as: step.as });
    if (job && step.method === 'DELETE' && ['owner', 'burst'].includes(step.as) && (answer.status === 200 || answer.status === 404)) {
      opened.delete(job.toLowerCase());
      tracking?.ended(job, step.as, answer.status);
    }
    if (step.provisions && step.status === 200 && answer.status !== 200)
      throw new CouldNotTell(`the session could not be opened: ${answer.method} ${answer.path} answered ${answer.status}`);
    return answer;
  };

  let late: string | undefined;
  const attempt = async (): Promise<0 | 1 | 2> => {
    jobs.clear();
    answers.length = 0;
    firstSent.length = 0;
    late = undefined;
    let verdict: 0 | 1 | 2 = 0;
    try {
      await replaySteps(plan.steps, replay, answers, drain);
      late = lateStep(plan.steps, answers, firstSent);
      for (const check of plan.checks) {
        const call = { judge: check.judge, args: check.args.map((arg) => revive(arg, answers, replace)) } as CheckCall;
        try {
          const outcome = runCheck(call);
          if (outcome?.notVerifiable) {
            print(`COULD NOT TELL ${check.check}: ${outcome.notVerifiable}`);
            if (verdict === 0) verdict = 2;
          } else print(`HOLDS ${check.check} (it failed in the run: ${check.message.split('\n')[0]})`);
        } catch (error) {
          const message = plain(redact(String((error as Error).message)));
          if ((error as Error).name === 'DeclaredBehaviour' && !check.deviation)
            print(`HOLDS ${check.check}, as the target's known-deviations file declares: ${message.split('\n')[0]}`);
          else if ((error as Error).name === 'RunError' || error instanceof TypeError || error instanceof RangeError) {
            // What the run would call an error of the run (a burst too slow to tell a limit from none), or a check that could not judge what came back: no verdict on the target.
            print(`COULD NOT TELL ${check.check}: ${message.split('\n')[0]}`);
            if (verdict === 0) verdict = 2;
          } else {
            print(`FAILS ${check.check}: ${message}`);
            verdict = 1;
          }
        }
      }
    } catch (error) {
      if (!(error instanceof CouldNotTell)) throw error;
      print(`COULD NOT TELL: ${error.message}`);
      verdict = 2;
    } finally {
      await stopOpened(opened, (jobId, as) => send({ method: 'DELETE', path: interactPath(jobId), as, on429: 'retry' }), print, tracking);
      opened.clear();
      for (const agent of connections.values()) agent.destroy();
      connections.clear();
    }
    return verdict;
  };

  print(`Reproduction of ${plan.test}: ${plan.title}`);
  const times = plan.steps.flatMap((step) => [step.sentAt, step.receivedAt]);
  const racing = plan.steps.some((one, index) =>
    plan.steps.some((other, later) => later > index && other.sentAt < one.receivedAt && one.sentAt < other.receivedAt),
  );
  const again = !plan.steps.some((step) => step.pooled) && (racing || Math.max(...times) - Math.min(...times) <= SHORT_PLAN_MS);
  let verdict = await attempt();
  let alwaysLate = late;
  for (let tried = 1; again && verdict === 0 && tried < ATTEMPTS; tried++) {
    print(`A fault of order or timing does not show every time: again (${tried + 1} of ${ATTEMPTS}).`);
    verdict = await attempt();
    alwaysLate &&= late;
  }
  // A race the replay never ran as close as the run did is not a race it lost: a busy machine's timing, no verdict.
  if (verdict === 0 && alwaysLate) {
    print(
      `COULD NOT TELL: the requests did not come as close together as in the run (${alwaysLate}); a fault of timing may need that (a busy machine, or a slow target).`,
    );
    verdict = 2;
  }
  // In the run, the team's rate limit refused a stop, or an interact the checks judge, before its answer came; where the replay could not send it into the limit again, a fault that needs the limit cannot show (a scrape or an account reading that met it is not this operation's).
  const judged = new Set(answerRefs(plan.checks.map((check) => check.args)));
  const unmet = plan.steps.filter(
    (step) => step.limited && intoTheLimit(step) && (judged.has(step.seq) || step.method === 'DELETE') && (answers[step.seq]?.attempts ?? 0) <= 1,
  );
  if (verdict === 0 && unmet.length) {
    print(
      `COULD NOT TELL: in the run, ${unmet.length} of these requests met the team's rate limit (429) before their answer (#${unmet.map((step) => step.seq).join(', #')}), and here they did not; the fault may need it.`,
    );
    verdict = 2;
  }
  print(verdict === 1 ? 'The fault shows (exit 1).' : verdict === 0 ? 'The fault does not show (exit 0).' : 'Could not tell (exit 2).');
  return verdict;
}

/** The steps the run had answered before it sent `step`, and of them the one it waited for: the last answered. */
function waitedFor(steps: TraceStep[], step: TraceStep): { before: TraceStep[]; last?: TraceStep } {
  const before = steps.filter((earlier) => earlier.seq < step.seq && earlier.receivedAt <= step.sentAt);
  return {
    before,
    last: before.reduce<TraceStep | undefined>((latest, earlier) => (!latest || earlier.receivedAt > latest.receivedAt ? earlier : latest), undefined),
  };
}

/**
 * The step the replay sent latest against the run, among those the run sent within RACE_MS of the
 * answer before, where by more than RACE_SLACK_MS: which, and by how much. A step that waited for a
 * drain into the limit was meant to go later.
 */
function lateStep(steps: TraceStep[], answers: Answer[], firstSent: number[]): string | undefined {
  let latest: { by: number; text: string } | undefined;
  for (const step of steps) {
    const { before, last } = waitedFor(steps, step);
    const drained = steps.some((other) => other.sentAt <= step.sentAt && step.sentAt < other.receivedAt && intoTheLimit(other));
    if (!last || drained || !answers[step.seq]) continue;
    // At most this long passed on the target between the two in the run, and at least this long in the replay.
    const inRun = step.receivedAt - last.sentAt;
    const here = firstSent[step.seq] - Math.max(...before.map((earlier) => answers[earlier.seq]?.receivedAt ?? 0));
    if (inRun < RACE_MS && here - inRun > RACE_SLACK_MS && here - inRun > (latest?.by ?? 0)) {
      latest = {
        by: here - inRun,
        text: `#${step.seq} went ${here.toFixed(0)} ms after the answer it waited for, where in the run at most ${inRun.toFixed(0)} ms passed from #${last.seq}'s request to #${step.seq}'s answer`,
      };
    }
  }
  return latest?.text;
}

/** A request the run sent into the team's limit (answered 429, or retried after a limit's 429): the replay sends it into the limit again. */
const intoTheLimit = (step: TraceStep) =>
  (step.limited === true || (step.status === 429 && !step.capped)) && !step.pooled && !step.primes && JOB_OF_PATH.test(step.path);

/**
 * The steps in their order, each sent once every step answered before it was sent in the run has
 * answered here too, after the same pause as in the run: holds keep their length on a target of
 * any speed, and requests the run sent at once go at once. A step sent into the limit is preceded
 * by `drain`; the steps the run sent while it was on its way wait for that drain too.
 */
export async function replaySteps(
  steps: TraceStep[],
  replay: (step: TraceStep) => Promise<Answer>,
  answers: Answer[],
  drain: (step: TraceStep) => Promise<unknown>,
): Promise<void> {
  const done: Promise<Answer>[] = [];
  const ready: (() => void)[] = [];
  const drained: Promise<void>[] = [];
  for (const step of steps) drained[step.seq] = new Promise<void>((resolve) => (ready[step.seq] = resolve));
  const start = performance.now();
  const first = Math.min(...steps.map((step) => step.sentAt));
  let failed = false;
  for (const step of steps) {
    const { before, last } = waitedFor(steps, step);
    // Sent while a request that went into the limit was on its way: after that request's drain too.
    const alongside = steps.filter((other) => other.seq !== step.seq && other.sentAt <= step.sentAt && step.sentAt < other.receivedAt && intoTheLimit(other));
    done[step.seq] = (async () => {
      try {
        const previous = await Promise.all(before.map((earlier) => done[earlier.seq]));
        const from = last ? Math.max(...previous.map((answer) => answer.receivedAt)) : start;
        const pause = step.sentAt - (last ? last.receivedAt : first);
        await sleep(Math.max(0, from + pause - performance.now()));
        if (!failed && !step.superseded && intoTheLimit(step)) await drain(step);
      } finally {
        ready[step.seq]();
      }
      await Promise.all(alongside.map((earlier) => drained[earlier.seq]));
      // Once a step could not be replayed, nothing more is sent; a provisioning attempt the run retried is not sent again.
      if (failed || step.superseded) return { receivedAt: performance.now() } as Answer;
      return (answers[step.seq] = await replay(step).catch((error) => {
        failed = true;
        throw error;
      }));
    })();
    // Steps are started in order: a later one never overtakes an earlier one sent at the same moment.
    await Promise.resolve();
  }
  // Every step has ended, sent or not, before the checks or the cleanup.
  const ended = await Promise.allSettled(done);
  const failure = ended.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failure) throw failure.reason;
}

function revive(value: Serialized, answers: Answer[], replace: (text: string) => string): unknown {
  if (typeof value === 'string') return replace(value);
  if (Array.isArray(value)) return value.map((item) => revive(item, answers, replace));
  if (value && typeof value === 'object') {
    if ('$answer' in value && typeof value.$answer === 'number') return answers[value.$answer];
    if ('$undefined' in value) return undefined;
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, revive(item as Serialized, answers, replace)]));
  }
  return value;
}

async function stopOpened(
  opened: Map<string, { jobId: string; as: string }>,
  stop: (jobId: string, as: string) => Promise<Answer>,
  print: (line: string) => void,
  tracking?: SessionTracking,
): Promise<void> {
  for (const { jobId, as } of opened.values()) {
    const answer = await stop(jobId, as).catch((error: Error) => error);
    if (!(answer instanceof Error) && (answer.status === 200 || answer.status === 404)) tracking?.ended(jobId, as, answer.status);
    print(
      answer instanceof Error
        ? `Could not stop the session of ${jobId} it opened: ${answer.message}`
        : `Stopped the session of ${jobId} it opened → ${answer.status}`,
    );
  }
}
