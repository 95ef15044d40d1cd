/**
 * The model of the specification the histories are checked against, and the steps they are made
 * of. The model knows which sessions exist and are live, and the interval within which each live
 * session began:
 * - a stop of a live session by its owner answers 200, with a duration inside the interval the
 *   suite measured since the session began and a prorated charge, and ends it;
 * - a stopped session answers the owner's stop 404, or 200 without a charge;
 * - a stop by anyone else, and a 429, change nothing and reveal no billing;
 * - an interact on a live session keeps its clock; on a stopped one it is either refused or
 *   begins a new session with its own clock: what follows must agree with the answer given.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type * as FastCheck from 'fast-check';
import type { NamedCall } from '../checks/checks';
import { DeclaredBehaviour, plain, RunError } from '../config/errors';
import type { Settings } from '../config/settings';
import { boundsOf, durationVerdict, expectCreditsFor, measuredInterval } from '../domain/billing';
import { type Answer, type Client, type Connection, summary } from '../domain/client';
import { judge, runCheck } from '../domain/named-checks';
import type { Sessions } from '../domain/sessions';
import { settlingStop } from '../domain/settlements';
import type { Identities, IdentityName } from '../domain/target';
import type { Budget } from './pace';

interface SessionModel {
  label: string;
  jobId: string;
  live: boolean;
  /** The interact that began the live session: it began within that call. */
  began: Answer;
  /** The owner's stop that ended it, once stopped: a later answer repeating it is a replay. */
  ended?: Answer;
  /** A stop was refused on it while live: the session must have lived on through it. */
  refusedWhileLive?: true;
}

export interface Model {
  sessions: SessionModel[];
  /** How many sessions may be live at once: three, or fewer under the target's cap. */
  capacity: number;
}

export interface Real {
  api: Client;
  sessions: Sessions;
  identities: Identities;
  settings: Settings;
  history: History;
  /** Charges that were not prorated: kept apart from the model, so that a declared billing deviation excuses them alone. */
  charges: { history: History; message: string; declared?: string; reproduction?: { call: NamedCall; from: number; to: number } }[];
  /** Where the history began in the test's trace, and how far the trace goes now: for reproductions. */
  trace?: { from: number; position: () => number };
  /** How many durations and charges of live sessions' stops were examined. */
  examined: { durations: number; charges: number };
  /** The last step that sent a request: what `again` repeats. */
  last?: Step;
  /** The kept-alive connection the history's stops share, whoever sends them: identities belong to requests. */
  connection: Connection;
}

export type Step = FastCheck.AsyncCommand<Model, Real>;

export const REFUSERS = ['foreign', 'noKey', 'unknownKey', 'keyCaseChanged', 'keyExtended', 'keyTruncated'] as const satisfies readonly IdentityName[];
type Refuser = (typeof REFUSERS)[number];
export const LABELS = ['A', 'B', 'C'];

/** One history, written as the user reads it: each step, its answers, and where the model disagreed. */
export class History {
  private readonly started = performance.now();
  readonly lines: string[] = [];
  private steps = 0;

  step(text: string): void {
    this.steps += 1;
    this.lines.push(`${String(this.steps).padStart(2)}. [+${Math.round(performance.now() - this.started)} ms] ${text}`);
  }

  note(text: string): void {
    this.lines.push(`    ${text}`);
  }

  get length(): number {
    return this.steps;
  }
}

const brief = (answer: Answer) => `${answer.status} ${answer.text.replace(/\s+/g, ' ').slice(0, 140)}`;
const describeSession = (session: SessionModel) => `${session.live ? 'live' : 'stopped'} session ${session.label}`;

/** The first line of an assertion's message, then what it expected and received: "...; expected one of [200, 404], received 502". */
export function disagreement(error: unknown): string {
  const lines = plain(String((error as Error).message))
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const judged = lines
    .filter((line) => /^(Expected|Received)\b/.test(line))
    .map((line) => line.replace(/^(Expected|Received)( \w+)?: /, (_, word: string, kind = '') => `${word.toLowerCase()}${kind} `));
  return [lines[0]?.replace(/^Error: /, ''), ...(judged.length ? [judged.join(', ')] : [])].join('; ');
}

/**
 * Runs the model's expectation of one step, a named check; a disagreement goes into the history,
 * then fails the history, carrying the call (for the reproduction of the history).
 */
export async function expecting(history: History, rule: string, call: NamedCall): Promise<void> {
  try {
    runCheck(call);
  } catch (error) {
    const message = `${rule}: ${disagreement(error)}`;
    history.note(`✗ ${message}`);
    throw Object.assign(new Error(message), { call });
  }
}

/** Steps name a session by a number, taken modulo the sessions that exist, so that no step is wasted. */
export const pick = (model: Model, index: number) => model.sessions[index % model.sessions.length];

/** A stop on the history's shared connection, or (`ownConnection`, for stops sent at once) on one of its own. */
export const stop = (real: Real, session: SessionModel, who: IdentityName = 'owner', ownConnection = false) =>
  real.api.stop(session.jobId, real.identities[who], { attach: false, ...(ownConnection ? {} : { connection: real.connection }) });

/** Provisions a session and adds it to the model as live, begun within its interact call. */
export async function provisionInto(model: Model, real: Real): Promise<void> {
  const label = LABELS[model.sessions.length];
  const session = await real.sessions.provision({ quiet: true, reserved: true });
  model.sessions.push({ label, jobId: session.jobId, live: true, began: session.created });
  real.history.step(`provision session ${label} → scrape ${session.scrape.status}, interact ${brief(session.created)}`);
}

/** What the model expects of the owner's stop of a session, live or stopped; a live one then is stopped. */
async function expectOwnerStop(real: Real, session: SessionModel, answer: Answer, sentTogether?: Answer[]): Promise<void> {
  if (!session.live) {
    await expecting(real.history, `a stop of stopped session ${session.label} (rule 7, @inferred)`, judge.modelStoppedStop(answer, session.ended));
    return;
  }
  const interval = measuredInterval({ created: session.began }, answer);
  // Of stops sent together, the judge picks the settling one as the model did: in a reproduction, it may be the other.
  await expecting(
    real.history,
    `a stop of live session ${session.label} by its owner (rules 1-2, @must)`,
    judge.modelLiveStop(sentTogether ?? answer, session.began, boundsOf(real.settings)),
  );
  const declaredClock = durationVerdict(answer.body, interval, real.settings)?.message;
  if (declaredClock) real.history.note(`≈ (duration, rule 2, as the target's clock is declared) ${declaredClock}`);
  session.live = false;
  session.ended = answer;
  if (answer.body?.sessionDurationMs !== undefined) real.examined.durations += 1;
  if (answer.body?.creditsBilled === undefined) return;
  real.examined.charges += 1;
  try {
    expectCreditsFor(answer.body, interval, real.settings);
  } catch (error) {
    const message = disagreement(error);
    // A charge the target's declared billing rule gives: its known deviation, never a failure.
    const declared = error instanceof DeclaredBehaviour ? error.reason : undefined;
    real.history.note(`${declared ? '≈ (credits, rule 2, as declared)' : '✗ (credits, rule 2, @must)'} ${message}`);
    const reproduction = real.trace && {
      call: judge.credits(sentTogether ?? answer, session.began, boundsOf(real.settings)),
      from: real.trace.from,
      to: real.trace.position(),
    };
    real.charges.push({ history: real.history, message, declared, ...(reproduction ? { reproduction } : {}) });
  }
}

function provisionStep(budget: Budget): Step {
  return {
    check: (model) => model.sessions.length < model.capacity && budget.affords(1),
    run: (model, real) => (budget.spend(1), provisionInto(model, real)),
    toString: () => 'provision',
  };
}

/** A step that acts on one existing session with `requests` requests to the rate-limited endpoints. */
function sessionStep(budget: Budget, name: string, index: number, act: (session: SessionModel, model: Model, real: Real) => Promise<void>, requests = 1): Step {
  return {
    check: (model) => model.sessions.length > 0 && budget.affords(requests),
    async run(model, real) {
      budget.spend(requests);
      real.last = this;
      await act(pick(model, index), model, real);
    },
    toString: () => `${name}(${index})`,
  };
}

/** The last step that sent a request, `times` times more: "the second time" is where state machines break (counters, caches, flags). */
function againStep(times: number): Step {
  return {
    check: (model) => model.sessions.length > 0,
    async run(model, real) {
      const last = real.last;
      for (let i = 0; i < times && last?.check(model); i++) await last.run(model, real);
    },
    toString: () => `again(${times})`,
  };
}

export function interactStep(budget: Budget, index: number): Step {
  return sessionStep(budget, 'interact', index, async (session, _model, real) => {
    const answer = await real.sessions.interact({ jobId: session.jobId }, { quiet: true });
    real.history.step(`interact on ${describeSession(session)} → ${brief(answer)}`);
    // Interact is how sessions are used, not the operation under test: an answer the history
    // cannot go on from is an error of the run.
    const refused = answer.status >= 400 && answer.status < 500;
    // Refused on a session a refused stop should have left running: that refusal ended it.
    if (session.live && refused && answer.status !== 429 && session.refusedWhileLive) {
      await expecting(real.history, 'a refused stop changes nothing: the session it was refused on is still usable (rules 3, 5)', judge.modelUsable(answer));
    }
    if ((session.live && answer.status !== 200) || (!session.live && answer.status !== 200 && !refused)) {
      real.history.note('✗ the interact answered what no history can go on from');
      throw new RunError(`an interact on ${describeSession(session)} answered ${answer.status}: ${summary(answer)}`);
    }
    if (!session.live && answer.status === 200) {
      // Allowed: a new session with its own clock. What follows must agree.
      session.live = true;
      session.began = answer;
      session.ended = undefined;
      session.refusedWhileLive = undefined;
      real.history.note(`(a new session ${session.label} begins with this interact)`);
    }
  });
}

/**
 * Two interacts at once on one session, as a client retrying on a timeout sends them: on a live
 * session both use it; on a stopped one each opens a session or is refused, and together they
 * open one at most, whose life begins within both exchanges.
 */
export function simultaneousInteractsStep(budget: Budget, index: number): Step {
  return sessionStep(
    budget,
    'simultaneousInteracts',
    index,
    async (session, _model, real) => {
      const wasLive = session.live;
      const answers = await Promise.all([1, 2].map(() => real.sessions.interact({ jobId: session.jobId }, { quiet: true })));
      real.history.step(`two interacts at once on ${describeSession(session)} → ${brief(answers[0])} | ${brief(answers[1])}`);
      const refused = answers.find((answer) => answer.status >= 400 && answer.status < 500 && answer.status !== 429);
      if (wasLive && refused && session.refusedWhileLive)
        await expecting(real.history, 'a refused stop changes nothing: the session it was refused on is still usable (rules 3, 5)', judge.modelUsable(refused));
      const unusable = answers.filter((answer) => (wasLive ? answer.status !== 200 : answer.status !== 200 && (answer.status < 400 || answer.status >= 500)));
      if (unusable.length) {
        real.history.note('✗ an interact answered what no history can go on from');
        throw new RunError(
          `two interacts at once on ${describeSession(session)} answered ${answers.map((answer) => answer.status).join(' and ')}: ${summary(unusable[0])}`,
        );
      }
      if (!wasLive && answers.some((answer) => answer.status === 200)) {
        // One new session, begun somewhere within both exchanges: a second stop must then find nothing to settle.
        session.live = true;
        session.began = {
          ...answers[0],
          sentAt: Math.min(...answers.map((answer) => answer.sentAt)),
          receivedAt: Math.max(...answers.map((answer) => answer.receivedAt)),
        };
        session.ended = undefined;
        session.refusedWhileLive = undefined;
        real.history.note(`(a new session ${session.label} begins with these interacts)`);
      }
    },
    2,
  );
}

export function holdStep(budget: Budget, ms: number): Step {
  return {
    check: () => !budget.halted,
    async run(_model, real) {
      await sleep(ms, undefined, { signal: real.api.signal });
      real.history.step(`hold ${ms} ms`);
    },
    toString: () => `hold(${ms})`,
  };
}

export function ownerStopStep(budget: Budget, index: number): Step {
  return sessionStep(budget, 'ownerStop', index, async (session, _model, real) => {
    const answer = await stop(real, session);
    real.history.step(`owner stops ${describeSession(session)} → ${brief(answer)}`);
    await expectOwnerStop(real, session, answer);
  });
}

export function refusedStopStep(budget: Budget, index: number, who: Refuser): Step {
  return sessionStep(budget, `refusedStop:${who}`, index, async (session, _model, real) => {
    // An owner's key without a letter has no case-changed form: nothing to send.
    if (!real.identities[who].authorization && who === 'keyCaseChanged') return;
    const answer = await stop(real, session, who);
    real.history.step(`${real.identities[who].name} stops ${describeSession(session)} → ${brief(answer)}`);
    if (session.live) session.refusedWhileLive = true;
    await expecting(
      real.history,
      `a stop by ${real.identities[who].name} is refused and reveals nothing (rules 3, 5, 7)`,
      judge.modelRefusedStop(answer, who === 'foreign' && session.live ? 403 : undefined, real.identities.ownerTeam),
    );
  });
}

export function unknownStopStep(budget: Budget): Step {
  return {
    check: () => budget.affords(1),
    async run(_model, real) {
      budget.spend(1);
      real.last = this;
      const answer = await real.api.stop(randomUUID(), real.identities.owner, { attach: false, connection: real.connection });
      real.history.step(`owner stops a job that never existed → ${brief(answer)}`);
      await expecting(real.history, 'a stop of a job with no session (rule 4, @must)', judge.modelUnknownStop(answer));
    },
    toString: () => 'unknownStop',
  };
}

export function simultaneousStopsStep(budget: Budget, first: number, second: number): Step {
  return sessionStep(
    budget,
    `simultaneousStops:${second}`,
    first,
    async (a, model, real) => {
      // Two different sessions whenever there are two: the same one twice is a rule of its own (rule 7).
      const others = model.sessions.filter((session) => session !== a);
      const b = others.length ? others[second % others.length] : a;
      const answers = await Promise.all([stop(real, a, 'owner', true), stop(real, b, 'owner', true)]);
      real.history.step(`owner stops ${describeSession(a)} and ${describeSession(b)} at once → ${brief(answers[0])} | ${brief(answers[1])}`);
      if (a !== b) {
        await expectOwnerStop(real, a, answers[0]);
        await expectOwnerStop(real, b, answers[1]);
        return;
      }
      await expecting(real.history, `two simultaneous stops of session ${a.label} (rule 7, @inferred)`, judge.modelSimultaneousStops(answers, a.ended, a.live));
      if (a.live) await expectOwnerStop(real, a, settlingStop(answers), answers);
    },
    2,
  );
}

/**
 * The steps a random history is made of, as fast-check arbitraries, weighted by repetition: the
 * steps that move a session's life along come most often, the first session is picked most often,
 * and `again` repeats the step before it.
 */
export function stepsFor(fc: typeof FastCheck, budget: Budget, toleranceMs: number): FastCheck.Arbitrary<Step>[] {
  const index = fc.constantFrom(0, 0, 0, 1, 2);
  const refuser = fc.constantFrom<Refuser>('foreign', 'foreign', 'foreign', 'foreign', ...REFUSERS);
  const times = <T>(n: number, arbitrary: FastCheck.Arbitrary<T>) => Array<FastCheck.Arbitrary<T>>(n).fill(arbitrary);
  return [
    ...times(2, fc.constant(provisionStep(budget))),
    ...times(
      3,
      index.map((i) => interactStep(budget, i)),
    ),
    index.map((i) => simultaneousInteractsStep(budget, i)),
    // Every hold is longer than DURATION_TOLERANCE_MS, so that a clock started at the wrong step shows.
    ...times(
      4,
      fc.integer({ min: toleranceMs + 5, max: toleranceMs + 15 }).map((ms) => holdStep(budget, ms)),
    ),
    ...times(
      2,
      index.map((i) => ownerStopStep(budget, i)),
    ),
    ...times(
      3,
      fc.tuple(index, refuser).map(([i, who]) => refusedStopStep(budget, i, who)),
    ),
    fc.constant(unknownStopStep(budget)),
    ...times(
      2,
      fc.tuple(index, index).map(([a, b]) => simultaneousStopsStep(budget, a, b)),
    ),
    ...times(3, fc.integer({ min: 1, max: 2 }).map(againStep)),
  ];
}
