/**
 * Random histories of operations over up to three sessions of one team, checked step by step
 * against a small model of the specification (fast-check's model-based testing). The model knows
 * which sessions exist and are live, and the interval within which each live session began:
 * - a stop of a live session by its owner answers 200, with a duration inside the interval the
 *   suite measured since the session began and a prorated charge, and ends it;
 * - a stopped session answers the owner's stop 404, or 200 without a charge;
 * - a stop by anyone else, and a 429, change nothing and reveal no billing;
 * - an interact on a live session keeps its clock; on a stopped one it is either refused or
 *   begins a new session with its own clock: what follows must agree with the answer given.
 * A failing history is shrunk by fast-check to a short one, printed step by step with each answer.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Fixtures } from '@playwright/test';
import type * as FastCheck from 'fast-check';
import { charges, expectCreditsFor, expectDurationWithin, type Interval } from './billing';
import { interactPath, summary, type Answer, type Client } from './client';
import { expectRefusal, expectRevealsNothing } from './refusals';
import { DeclaredBehaviour, plain, RunError } from './errors';
import { expect } from './schemas';
import { CapReached, type Sessions } from './sessions';
import type { Settings } from './settings';
import type { Identities, IdentityName } from './target';

interface SessionModel {
  label: string;
  jobId: string;
  live: boolean;
  /** performance.now() interval within which the live session began (its creating interact). */
  began: { lo: number; hi: number };
  /** The owner's stop that ended it, once stopped: a later answer repeating it is a replay. */
  ended?: Answer;
}

interface Model {
  sessions: SessionModel[];
  /** How many sessions may be live at once: three, or fewer under the target's cap. */
  capacity: number;
}

/** Requests to the rate-limited endpoints (stop and interact) a search may send, shrinking included. */
class Budget {
  spent = 0;
  /** An error of the run ends the search: no further history sends anything. */
  halted?: RunError;
  /** Set once the time was up: on a slow machine or target the search does less, rather than outlive its test. */
  outOfTime = false;

  constructor(public left: number, private readonly until: number) {}

  /** Whether `requests` more are allowed; never once the search was halted or its time is up. */
  affords(requests: number): boolean {
    if (performance.now() > this.until) this.outOfTime = true;
    return !this.halted && !this.outOfTime && this.left >= requests;
  }

  spend(requests: number): void {
    this.left -= requests;
    this.spent += requests;
  }
}

interface Real {
  api: Client;
  sessions: Sessions;
  identities: Identities;
  settings: Settings;
  history: History;
  /** Charges that were not prorated: kept apart from the model, so that a declared billing deviation excuses them alone. */
  charges: { history: History; message: string; declared?: string }[];
  /** How many durations and charges of live sessions' stops were examined. */
  examined: { durations: number; charges: number };
}

type Step = FastCheck.AsyncCommand<Model, Real>;

const REFUSERS = ['foreign', 'noKey', 'unknownKey', 'keyCaseChanged', 'keyExtended', 'keyTruncated'] as const satisfies readonly IdentityName[];
type Refuser = (typeof REFUSERS)[number];
const LABELS = ['A', 'B', 'C'];

/** One history, written as the user reads it: each step, its answers, and where the model disagreed. */
class History {
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

/** The first line of an assertion's message, with its Expected and Received lines. */
function disagreement(error: unknown): string {
  const lines = plain(String((error as Error).message)).split('\n').map((line) => line.trim()).filter(Boolean);
  return [lines[0]?.replace(/^Error: /, ''), ...lines.filter((line) => /^(Expected|Received)/.test(line))].join('; ');
}

/** Runs the model's expectations of one step; a disagreement goes into the history, then fails the history. */
async function expecting(history: History, rule: string, expectations: () => void): Promise<void> {
  try {
    expectations();
  } catch (error) {
    const message = `${rule}: ${disagreement(error)}`;
    history.note(`✗ ${message}`);
    throw new Error(message);
  }
}

/** Steps name a session by a number, taken modulo the sessions that exist, so that no step is wasted. */
const pick = (model: Model, index: number) => model.sessions[index % model.sessions.length];

const stop = (real: Real, session: SessionModel, who: IdentityName = 'owner') =>
  real.api.send({ method: 'DELETE', path: interactPath(session.jobId), as: real.identities[who], attach: false });

/** Provisions a session and adds it to the model as live, begun within its interact call. */
async function provisionInto(model: Model, real: Real): Promise<void> {
  const label = LABELS[model.sessions.length];
  const session = await real.sessions.provision({ quiet: true, reserved: true });
  model.sessions.push({ label, jobId: session.jobId, live: true, began: { lo: session.created.sentAt, hi: session.created.receivedAt } });
  real.history.step(`provision session ${label} → scrape ${session.scrape.status}, interact ${brief(session.created)}`);
}

/** What the model expects of the owner's stop of a session, live or stopped; a live one then is stopped. */
async function expectOwnerStop(real: Real, session: SessionModel, answer: Answer): Promise<void> {
  if (!session.live) {
    await expecting(real.history, `a stop of stopped session ${session.label} (rule 7, @inferred)`, () => {
      expect([200, 404], `status ${answer.status}`).toContain(answer.status);
      expect(charges(answer, session.ended), 'a stopped session is never charged again').toBe(false);
    });
    return;
  }
  const interval: Interval = { lo: answer.sentAt - session.began.hi, hi: answer.receivedAt - session.began.lo };
  await expecting(real.history, `a stop of live session ${session.label} by its owner (rules 1-2, @must)`, () => {
    expect(answer.status, 'status').toBe(200);
    expect(answer.body).toMatchSchema('stop-result');
    expectDurationWithin(answer.body, interval, real.settings);
  });
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
    real.charges.push({ history: real.history, message, declared });
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
      await act(pick(model, index), model, real);
    },
    toString: () => `${name}(${index})`,
  };
}

function interactStep(budget: Budget, index: number): Step {
  return sessionStep(budget, 'interact', index, async (session, _model, real) => {
    const answer = await real.sessions.interact({ jobId: session.jobId }, { quiet: true });
    real.history.step(`interact on ${describeSession(session)} → ${brief(answer)}`);
    // Interact is how sessions are used, not the operation under test: an answer the history
    // cannot go on from is an error of the run.
    const refused = answer.status >= 400 && answer.status < 500;
    if ((session.live && answer.status !== 200) || (!session.live && answer.status !== 200 && !refused)) {
      real.history.note('✗ the interact answered what no history can go on from');
      throw new RunError(`an interact on ${describeSession(session)} answered ${answer.status}: ${summary(answer)}`);
    }
    if (!session.live && answer.status === 200) {
      // Allowed: a new session with its own clock. What follows must agree.
      session.live = true;
      session.began = { lo: answer.sentAt, hi: answer.receivedAt };
      session.ended = undefined;
      real.history.note(`(a new session ${session.label} begins with this interact)`);
    }
  });
}

function holdStep(budget: Budget, ms: number): Step {
  return {
    check: () => !budget.halted,
    async run(_model, real) {
      await sleep(ms, undefined, { signal: real.api.signal });
      real.history.step(`hold ${ms} ms`);
    },
    toString: () => `hold(${ms})`,
  };
}

function ownerStopStep(budget: Budget, index: number): Step {
  return sessionStep(budget, 'ownerStop', index, async (session, _model, real) => {
    const answer = await stop(real, session);
    real.history.step(`owner stops ${describeSession(session)} → ${brief(answer)}`);
    await expectOwnerStop(real, session, answer);
  });
}

function refusedStopStep(budget: Budget, index: number, who: Refuser): Step {
  return sessionStep(budget, `refusedStop:${who}`, index, async (session, _model, real) => {
    // An owner's key without a letter has no case-changed form: nothing to send.
    if (!real.identities[who].authorization && who === 'keyCaseChanged') return;
    const answer = await stop(real, session, who);
    real.history.step(`${real.identities[who].name} stops ${describeSession(session)} → ${brief(answer)}`);
    await expecting(real.history, `a stop by ${real.identities[who].name} is refused and reveals nothing (rules 3, 5, 7)`, () => {
      expectRefusal(answer, who === 'foreign' && session.live ? 403 : undefined);
      expectRevealsNothing(answer, real.identities.ownerTeam);
    });
  });
}

function unknownStopStep(budget: Budget): Step {
  return {
    check: () => budget.affords(1),
    async run(_model, real) {
      budget.spend(1);
      const answer = await real.api.send({ method: 'DELETE', path: interactPath(randomUUID()), as: real.identities.owner, attach: false });
      real.history.step(`owner stops a job that never existed → ${brief(answer)}`);
      await expecting(real.history, 'a stop of a job with no session (rule 4, @must)', () => {
        expect(answer.status, 'status').toBe(404);
        expect(answer.body).toMatchSchema('error');
      });
    },
    toString: () => 'unknownStop',
  };
}

function simultaneousStopsStep(budget: Budget, first: number, second: number): Step {
  return sessionStep(budget, `simultaneousStops:${second}`, first, async (a, model, real) => {
    // Two different sessions whenever there are two: the same one twice is a rule of its own (rule 7).
    const others = model.sessions.filter((session) => session !== a);
    const b = others.length ? others[second % others.length] : a;
    const answers = await Promise.all([stop(real, a), stop(real, b)]);
    real.history.step(`owner stops ${describeSession(a)} and ${describeSession(b)} at once → ${brief(answers[0])} | ${brief(answers[1])}`);
    if (a !== b) {
      await expectOwnerStop(real, a, answers[0]);
      await expectOwnerStop(real, b, answers[1]);
      return;
    }
    await expecting(real.history, `two simultaneous stops of session ${a.label} (rule 7, @inferred)`, () => {
      for (const answer of answers) expect([200, 404], `status ${answer.status}`).toContain(answer.status);
      const charged = answers.filter((answer) => charges(answer, a.ended));
      expect(charged.length, 'charges').toBeLessThanOrEqual(a.live ? 1 : 0);
      if (a.live) expect(answers.some((answer) => answer.status === 200), 'one of them succeeds').toBe(true);
    });
    if (a.live) await expectOwnerStop(real, a, answers.find((answer) => answer.status === 200 && answer.body?.sessionDurationMs !== undefined) ?? answers.find((answer) => answer.status === 200)!);
  }, 2);
}

/**
 * The steps a history is made of, as fast-check arbitraries, weighted by repetition: the steps
 * that move a session's life along come most often.
 */
function stepsFor(fc: typeof FastCheck, budget: Budget, toleranceMs: number): FastCheck.Arbitrary<Step>[] {
  const index = fc.nat({ max: LABELS.length - 1 });
  const refuser = fc.constantFrom<Refuser>('foreign', 'foreign', 'foreign', 'foreign', ...REFUSERS);
  const times = <T>(n: number, arbitrary: FastCheck.Arbitrary<T>) => Array<FastCheck.Arbitrary<T>>(n).fill(arbitrary);
  return [
    ...times(2, fc.constant(provisionStep(budget))),
    ...times(3, index.map((i) => interactStep(budget, i))),
    // Every hold is longer than DURATION_TOLERANCE_MS, so that a clock started at the wrong step shows.
    ...times(4, fc.integer({ min: toleranceMs + 5, max: toleranceMs + 15 }).map((ms) => holdStep(budget, ms))),
    ...times(2, index.map((i) => ownerStopStep(budget, i))),
    ...times(3, fc.tuple(index, refuser).map(([i, who]) => refusedStopStep(budget, i, who))),
    fc.constant(unknownStopStep(budget)),
    ...times(2, fc.tuple(index, index).map(([a, b]) => simultaneousStopsStep(budget, a, b))),
  ];
}

export interface Exploration {
  seed: number;
  runs: number;
  histories: number;
  requests: number;
  /** The shrunk history that breaks the model, as printed, when one was found. */
  counterexample?: string;
  failure?: string;
  /** The first charge that was not 2 credits a minute prorated by the second, nor what a declared billing rule gives, with its history. */
  unproratedCharge?: string;
  /** The first charge that was not prorated but is what the target's declared billing rule gives, and that rule's reason. */
  declaredCharge?: { message: string; reason: string };
  /** Durations and charges of live sessions' stops examined: none means they were not checked at all. */
  durationsExamined: number;
  chargesExamined: number;
  /** Set when the search stopped at its time limit, before its histories or requests were used up. */
  stoppedAt?: string;
}

export interface ExploreOptions {
  api: Client;
  sessions: Sessions;
  identities: Identities;
  settings: Settings;
  seed: number;
  runs: number;
  /** performance.now() past which no history starts or goes on: the search's share of its test's time. */
  until: number;
}

/** Runs random histories until SEQUENCE_RUNS pass or one breaks the model; shrinks and describes that one. */
export async function exploreHistories({ api, sessions, identities, settings, seed, runs, until }: ExploreOptions): Promise<Exploration> {
  // Loaded here, not with the module: only the worker that runs this rule needs it.
  const fc = await import('fast-check');
  const budget = new Budget(settings.sequenceBudget, until);
  const steps = stepsFor(fc, budget, settings.durationToleranceMs);
  let histories = 0;
  let lastFailure: { history: History; message: string } | undefined;
  const charges: Real['charges'] = [];
  const examined = { durations: 0, charges: 0 };
  const property = fc.asyncProperty(fc.commands(steps, { maxCommands: 14 }), async (commands) => {
    histories += 1;
    const history = new History();
    try {
      // Every history begins with session A, so that no step waits for a session to act on.
      const setup = async () => {
        // Room for every session the history may open, taken before it opens any.
        const model: Model = { sessions: [], capacity: await sessions.reserve(LABELS.length) };
        const real: Real = { api, sessions, identities, settings, history, charges, examined };
        if (budget.affords(1)) {
          budget.spend(1);
          await provisionInto(model, real);
        }
        return { model, real };
      };
      await fc.asyncModelRun(setup, commands);
    } catch (error) {
      if (error instanceof RunError) {
        budget.halted ??= error;
        return;
      }
      // The target's cap on live sessions showed: not a disagreement; the next history keeps under it.
      if (error instanceof CapReached) return;
      lastFailure = { history, message: String((error as Error).message) };
      throw error;
    } finally {
      // Every session this history created is stopped before the next one, shrinking included.
      const problems = await sessions.cleanup(api);
      if (problems.length) budget.halted ??= new RunError(`Could not stop ${problems.length} session(s) a history created: ${problems.join(', ')}`);
    }
  });
  const details = await fc.check(property, { seed, numRuns: runs });
  if (budget.halted && !lastFailure) throw budget.halted;
  const exploration: Exploration = { seed, runs, histories, requests: budget.spent, durationsExamined: examined.durations, chargesExamined: examined.charges, ...(budget.outOfTime ? { stoppedAt: 'half of TEST_TIMEOUT_MS' } : {}) };
  const unprorated = charges.find((charge) => !charge.declared);
  const declared = charges.find((charge) => charge.declared);
  const told = (charge: (typeof charges)[number]) => [`${charge.message}`, `in a history of ${charge.history.length} steps (seed ${seed}):`, ...charge.history.lines].join('\n');
  if (unprorated) exploration.unproratedCharge = told(unprorated);
  if (declared) exploration.declaredCharge = { message: told(declared), reason: declared.declared! };
  if (details.failed && lastFailure) {
    const { history, message } = lastFailure;
    exploration.failure = message;
    exploration.counterexample = [
      `A history of ${history.length} steps breaks the model (seed ${seed}; replay with SEQUENCE_SEED=${seed}):`,
      ...history.lines,
      `Found after ${details.numRuns} histories, shrunk ${details.numShrinks} times; ${budget.spent} requests to stop and interact in all${budget.left <= 0 ? ' (SEQUENCE_BUDGET used up: shrinking stopped there)' : ''}.`,
    ].join('\n');
  }
  return exploration;
}

/**
 * The seeds of the histories (SEQUENCE_SEED, or one random seed) and how many histories each
 * runs (SEQUENCE_RUNS): options, so that the variant matrix can set them project by project.
 */
export const sequenceFixtures: Fixtures<object, { sequenceSeeds: number[]; sequenceRuns: number }, object, { settings: Settings }> = {
  sequenceSeeds: [async ({ settings }, use) => use(settings.sequenceSeeds ?? [Math.floor(Math.random() * 2 ** 31)]), { scope: 'worker', option: true }],
  sequenceRuns: [async ({ settings }, use) => use(settings.sequenceRuns), { scope: 'worker', option: true }],
};
