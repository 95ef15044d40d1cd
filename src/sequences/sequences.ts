/**
 * Histories of operations over sessions of one team, checked step by step against a small model of
 * the specification. The model knows which sessions exist and are live, and the interval within
 * which each live session began:
 * - a stop of a live session by its owner answers 200, with a duration inside the interval the
 *   suite measured since the session began and a prorated charge, and ends it;
 * - a stopped session answers the owner's stop 404, or 200 without a charge;
 * - a stop by anyone else, and a 429, change nothing and reveal no billing;
 * - an interact on a live session keeps its clock; on a stopped one it is either refused or
 *   begins a new session with its own clock: what follows must agree with the answer given.
 * The search first runs every short pattern of step kinds over one session (the systematic phase),
 * then random histories over up to three sessions (fast-check's model-based testing), which favour
 * repeated steps and the same session. A failing random history is shrunk by fast-check. The search
 * lasts SEQUENCE_SECONDS, at the pace the target allows (Pacer).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type * as FastCheck from 'fast-check';
import { durationVerdict, expectCreditsFor, type Interval } from '../domain/billing';
import { distinctSettlements, isNewCharge } from '../domain/settlements';
import { interactPath, summary, type Answer, type Client, type Connection } from '../domain/client';
import { expectRefusal, expectRevealsNothing } from '../domain/refusals';
import { DeclaredBehaviour, plain, RunError } from '../config/errors';
import { checkQuickly, expect } from '../checks/expect';
import { CapReached, type Sessions } from '../domain/sessions';
import { recentRatePerMinute } from '../coordination/cost';
import type { Settings } from '../config/settings';
import type { Identities, IdentityName } from '../domain/target';

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

/**
 * The pace of the search's requests. Several histories at once until the team's limit shows (a 429
 * to a request with a valid key, or a limit the run met in the last minute); each 429 then halves
 * them, down to one, and every CLEAN_TO_GROW requests without one add one back. A request that
 * meets the limit waits its turn in the team's back-off queue behind the other tests' (client.ts),
 * so the search takes its share and no more. It learns how long a request takes on average,
 * back-off included, and starts a history only when that (twice that once a limit showed: the other
 * tests' turns) fits in the time left.
 */
export class Pacer {
  lanes = LANES;
  limited = false;
  private requests = 0;
  private totalMs = 0;
  /** Requests answered without a 429 since the last one: every CLEAN_TO_GROW of them, one more history at once. */
  private clean = 0;

  /** `perMinute`: the rate the run has met lately, if any; counted as one request's worth of experience. */
  constructor(perMinute: number | undefined) {
    if (perMinute) {
      this.limit();
      this.requests = 1;
      this.totalMs = 60_000 / perMinute;
    }
  }

  private limit(): void {
    this.limited = true;
    this.lanes = Math.max(1, Math.floor(this.lanes / 2));
    this.clean = 0;
  }

  /** `api`, with its requests paced and timed. */
  client(api: Client): Client {
    return {
      ...api,
      send: async (request) => {
        const started = performance.now();
        const answer = await api.send(request);
        const took = performance.now() - started;
        this.requests += 1;
        this.totalMs += took;
        // A 429 to a request without a valid key is its refusal, not the team's limit.
        if (!request.as.withoutValidKey && (answer.attempts > 1 || answer.status === 429)) this.limit();
        else if (++this.clean % CLEAN_TO_GROW === 0) this.lanes = Math.min(LANES, this.lanes + 1);
        return answer;
      },
    };
  }

  /** How long `requests` more are expected to take, rests included. */
  expectedMs(requests: number): number {
    return this.requests ? (requests * this.totalMs * (this.limited ? 2 : 1)) / this.requests : 0;
  }
}

/** Most histories at once: each has its own session. */
const LANES = 4;
const CLEAN_TO_GROW = 50;
/** How often a lane the pacer has paused asks again. */
const LANE_PAUSE_MS = 100;

/** Requests to the rate-limited endpoints (stop and interact) a phase of the search may send, and until when. */
class Budget {
  spent = 0;
  /** An error of the run ends the search: no further history sends anything. */
  halted?: RunError;
  /** Set once the time was up: on a slow machine or target the search does less, rather than outlive its budget. */
  outOfTime = false;

  constructor(public left: number, readonly until: number, private readonly pacer: Pacer) {}

  /** Whether `requests` more are allowed and fit in the time left; never once the search was halted or its time is up. */
  affords(requests: number): boolean {
    if (performance.now() + this.pacer.expectedMs(requests) > this.until) this.outOfTime = true;
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
  /** The last step that sent a request: what `again` repeats. */
  last?: Step;
  /** The kept-alive connection the history's stops share, whoever sends them: identities belong to requests. */
  connection: Connection;
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
    checkQuickly(expectations);
  } catch (error) {
    const message = `${rule}: ${disagreement(error)}`;
    history.note(`✗ ${message}`);
    throw new Error(message);
  }
}

/** Steps name a session by a number, taken modulo the sessions that exist, so that no step is wasted. */
const pick = (model: Model, index: number) => model.sessions[index % model.sessions.length];

/** A stop on the history's shared connection, or (`ownConnection`, for stops sent at once) on one of its own. */
const stop = (real: Real, session: SessionModel, who: IdentityName = 'owner', ownConnection = false) =>
  real.api.send({ method: 'DELETE', path: interactPath(session.jobId), as: real.identities[who], attach: false, ...(ownConnection ? {} : { connection: real.connection }) });

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
      expect(isNewCharge(answer, session.ended), 'a stopped session is never charged again: an answer may repeat its settlement, never make another').toBe(false);
    });
    return;
  }
  const interval: Interval = { lo: answer.sentAt - session.began.hi, hi: answer.receivedAt - session.began.lo };
  let declaredClock: string | undefined;
  await expecting(real.history, `a stop of live session ${session.label} by its owner (rules 1-2, @must)`, () => {
    expect(answer.status, 'status').toBe(200);
    expect(answer.body).toMatchSchema('stop-result');
    declaredClock = durationVerdict(answer.body, interval, real.settings)?.message;
  });
  if (declaredClock) real.history.note(`≈ (duration, rule 2, as the target's clock is declared) ${declaredClock}`);
  session.live = false;
  session.ended = answer;
  if (answer.body?.sessionDurationMs !== undefined) real.examined.durations += 1;
  if (answer.body?.creditsBilled === undefined) return;
  real.examined.charges += 1;
  try {
    checkQuickly(() => expectCreditsFor(answer.body, interval, real.settings));
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
      real.last = this;
      const answer = await real.api.send({ method: 'DELETE', path: interactPath(randomUUID()), as: real.identities.owner, attach: false, connection: real.connection });
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
    const answers = await Promise.all([stop(real, a, 'owner', true), stop(real, b, 'owner', true)]);
    real.history.step(`owner stops ${describeSession(a)} and ${describeSession(b)} at once → ${brief(answers[0])} | ${brief(answers[1])}`);
    if (a !== b) {
      await expectOwnerStop(real, a, answers[0]);
      await expectOwnerStop(real, b, answers[1]);
      return;
    }
    await expecting(real.history, `two simultaneous stops of session ${a.label} (rule 7, @inferred)`, () => {
      for (const answer of answers) expect([200, 404], `status ${answer.status}`).toContain(answer.status);
      // Equal settlements reported by both are one settlement as far as answers show: the account check has the last word.
      const settled = distinctSettlements(answers.filter((answer) => isNewCharge(answer, a.ended)));
      expect(settled.length, 'distinct new settlements').toBeLessThanOrEqual(a.live ? 1 : 0);
      if (a.live) expect(answers.some((answer) => answer.status === 200), 'one of them succeeds').toBe(true);
    });
    if (a.live) await expectOwnerStop(real, a, answers.find((answer) => answer.status === 200 && answer.body?.sessionDurationMs !== undefined) ?? answers.find((answer) => answer.status === 200)!);
  }, 2);
}

/**
 * The steps a random history is made of, as fast-check arbitraries, weighted by repetition: the
 * steps that move a session's life along come most often, the first session is picked most often,
 * and `again` repeats the step before it.
 */
function stepsFor(fc: typeof FastCheck, budget: Budget, toleranceMs: number): FastCheck.Arbitrary<Step>[] {
  const index = fc.constantFrom(0, 0, 0, 1, 2);
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
    ...times(3, fc.integer({ min: 1, max: 2 }).map(againStep)),
  ];
}

/** The kinds of step of the systematic phase, over one session, and the requests each sends. */
const KINDS = {
  interact: 1,
  hold: 0,
  ownerStop: 1,
  foreignStop: 1,
  keylessStop: 1,
  unknownJobStop: 1,
  twoStopsAtOnce: 2,
} as const;
type Kind = keyof typeof KINDS;
const KIND_NAMES = Object.keys(KINDS) as Kind[];
/** A stop without a valid key is each of these in turn, across the phase: no key, an unknown key, the owner's key with a letter's case changed, one more or one fewer character. */
const KEYLESS = REFUSERS.filter((who) => who !== 'foreign');
/** Longest patterns the systematic phase reaches when its budget allows. */
const MAX_DEPTH = 4;

function stepOfKind(kind: Kind, budget: Budget, keylessTurn: number, holdMs: number): Step {
  switch (kind) {
    case 'interact': return interactStep(budget, 0);
    case 'hold': return holdStep(budget, holdMs);
    case 'ownerStop': return ownerStopStep(budget, 0);
    case 'foreignStop': return refusedStopStep(budget, 0, 'foreign');
    case 'keylessStop': return refusedStopStep(budget, 0, KEYLESS[keylessTurn % KEYLESS.length]);
    case 'unknownJobStop': return unknownStopStep(budget);
    case 'twoStopsAtOnce': return simultaneousStopsStep(budget, 0, 0);
  }
}

/**
 * How much a pattern is likely to tell, from where state machines break: a request repeated
 * (counters, caches, flags set the first time), above all right after itself; a step after the
 * session's end; time passing, which a clock started or kept at the wrong step needs to show (one
 * hold is enough; a hold is no request, so repeating it tells nothing).
 */
function telling(pattern: Kind[]): number {
  let score = 0;
  pattern.forEach((kind, i) => {
    if (kind === 'hold') return;
    pattern.slice(i + 1).forEach((other, j) => (score += other === kind ? (j === 0 ? 2 : 1) : 0));
  });
  if (pattern.some((kind, i) => i > 0 && (pattern[i - 1] === 'ownerStop' || pattern[i - 1] === 'twoStopsAtOnce'))) score += 2;
  if (pattern.includes('hold')) score += 1;
  return score;
}

const requestsOf = (pattern: Kind[]) => pattern.reduce((sum, kind) => sum + KINDS[kind], 0);

/**
 * Every pattern of `depth` kinds, in the order the systematic phase runs them: most telling first,
 * then cheapest. Each step is checked as it runs, so a history covers every prefix of its pattern
 * (and a pattern that ends in an owner's stop, its prefix followed by a stop): 3-step patterns
 * cover every shorter one. Beyond depth 3, those ending in an owner's stop are skipped: each
 * history ends with one anyway.
 */
export function patternsOfDepth(depth: number): Kind[][] {
  let patterns: Kind[][] = [[]];
  for (let i = 0; i < depth; i++) patterns = patterns.flatMap((pattern) => KIND_NAMES.map((kind) => [...pattern, kind]));
  const holds = (pattern: Kind[]) => pattern.filter((kind) => kind === 'hold').length;
  const order = (a: Kind[], b: Kind[]) => telling(b) - telling(a) || requestsOf(a) - requestsOf(b) || holds(a) - holds(b);
  if (depth > 3) return patterns.filter((pattern) => pattern.at(-1) !== 'ownerStop').sort(order);
  return patterns.sort(order);
}

/** Requests to stop and interact the systematic phase needs for every 3-step pattern (each from a fresh session, with its final stop). */
export const REQUESTS_FOR_EVERY_THREE_STEP_PATTERN = patternsOfDepth(3).reduce((sum, pattern) => sum + requestsOf(pattern) + 2, 0);

/** What the systematic phase covered: for each length, the share of its patterns some history ran whole, from a fresh session. */
function coverageLine(covered: Map<number, Set<string>>): string {
  const parts: string[] = [];
  const whole: number[] = [];
  for (let length = 1; length <= MAX_DEPTH; length++) {
    const share = (covered.get(length)?.size ?? 0) / KIND_NAMES.length ** length;
    if (share === 1) whole.push(length);
    else if (share > 0) parts.push(`${Math.floor(share * 100)}% of ${length}-step patterns`);
  }
  const all = whole.length ? [`all ${whole.length > 1 ? `${whole.slice(0, -1).join('-, ')}- and ` : ''}${whole.at(-1)}-step patterns`] : [];
  return [...all, ...parts].join(', ') || 'no pattern';
}

/** What one phase of the search did and found. */
export interface Exploration {
  /** `systematic`, or the seed of a random phase. */
  phase: 'systematic' | number;
  histories: number;
  steps: number;
  requests: number;
  /** The systematic phase's coverage line, e.g. "all 1- and 2-step patterns, 61% of 3-step patterns". */
  covered?: string;
  /** The systematic phase ran every 3-step pattern whole. */
  everyThreeStep?: boolean;
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
  /** Set when the phase stopped at its time limit, before its histories or requests were used up. */
  stoppedAt?: string;
}

export interface ExploreOptions {
  /** The search's client: paced (Pacer.client). */
  api: Client;
  /** A new set of sessions for one history, stopped after it. */
  openSessions: () => Sessions;
  identities: Identities;
  settings: Settings;
  pacer: Pacer;
  /** Requests to stop and interact this phase may send. */
  requests: number;
  /** performance.now() past which no history starts or goes on. */
  until: number;
}

/** What the histories of one phase share: where their charges and counts go. */
function phaseState() {
  return { charges: [] as Real['charges'], examined: { durations: 0, charges: 0 }, histories: 0, steps: 0 };
}

/** The figures of a phase, with its charges judged: shared by both phases. */
function finish(phase: Exploration['phase'], state: ReturnType<typeof phaseState>, budget: Budget, replay: string): Exploration {
  const exploration: Exploration = {
    phase,
    histories: state.histories,
    steps: state.steps,
    requests: budget.spent,
    durationsExamined: state.examined.durations,
    chargesExamined: state.examined.charges,
    ...(budget.outOfTime ? { stoppedAt: 'SEQUENCE_SECONDS' } : {}),
  };
  const unprorated = state.charges.find((charge) => !charge.declared);
  const declared = state.charges.find((charge) => charge.declared);
  const told = (charge: Real['charges'][number]) => [charge.message, `in a history of ${charge.history.length} steps (${replay}):`, ...charge.history.lines].join('\n');
  if (unprorated) exploration.unproratedCharge = told(unprorated);
  if (declared) exploration.declaredCharge = { message: told(declared), reason: declared.declared! };
  return exploration;
}

/**
 * Runs one history: its sessions come from `openSessions` and are stopped after it. Returns the
 * failure that broke the model, if any; an error of the run halts the budget; a cap met ends the
 * history quietly.
 */
async function runHistory(options: ExploreOptions, budget: Budget, state: ReturnType<typeof phaseState>, history: History, body: (real: Real) => Promise<void>): Promise<string | undefined> {
  const sessions = options.openSessions();
  const connection = options.api.connection();
  state.histories += 1;
  try {
    await body({ api: options.api, sessions, identities: options.identities, settings: options.settings, history, charges: state.charges, examined: state.examined, connection });
    return undefined;
  } catch (error) {
    if (error instanceof RunError) {
      budget.halted ??= error;
      return undefined;
    }
    // The target's cap on live sessions showed: not a disagreement; the next history keeps under it.
    if (error instanceof CapReached) return undefined;
    return String((error as Error).message);
  } finally {
    options.api.release(connection);
    state.steps += history.length;
    const problems = await sessions.cleanup(options.api);
    if (problems.length) budget.halted ??= new RunError(`Could not stop ${problems.length} session(s) a history created: ${problems.join(', ')}`);
  }
}

/**
 * The systematic phase: every pattern of step kinds over one session, up to 3 steps and beyond as
 * its budget allows (patternsOfDepth), each from a fresh session and followed by the owner's stop,
 * several at once while the target shows no limit. Deterministic: it needs no seed.
 */
export async function searchSystematically(options: ExploreOptions): Promise<Exploration> {
  const budget = new Budget(options.requests, options.until, options.pacer);
  const state = phaseState();
  const covered = new Map<number, Set<string>>();
  const holdMs = options.settings.durationToleranceMs + 10;
  let failure: { history: History; message: string; pattern: Kind[]; index: number } | undefined;
  /** One pattern from a fresh session, then the owner's stop. A stop without a valid key takes its key by the pattern's place: the same every run. */
  const runPattern = async (pattern: Kind[], index: number, within: Budget) => {
    const history = new History();
    let ran = 0;
    const message = await runHistory(options, within, state, history, async (real) => {
      await real.sessions.reserve(1);
      const model: Model = { sessions: [], capacity: 1 };
      within.spend(1);
      await provisionInto(model, real);
      let keyless = index;
      for (const kind of pattern) {
        const step = stepOfKind(kind, within, kind === 'keylessStop' ? keyless++ : 0, holdMs);
        if (!step.check(model)) return;
        await step.run(model, real);
        ran += 1;
      }
      const stop = ownerStopStep(within, 0);
      if (model.sessions[0].live && stop.check(model)) await stop.run(model, real);
    });
    return { history, message, ran };
  };
  for (let depth = 3; depth <= MAX_DEPTH && !failure && !budget.halted && !budget.outOfTime; depth++) {
    const patterns = patternsOfDepth(depth);
    let next = 0;
    const lane = async (number: number) => {
      while (!failure && next < patterns.length && budget.affords(0)) {
        if (number >= options.pacer.lanes) {
          await sleep(LANE_PAUSE_MS, undefined, { signal: options.api.signal });
          continue;
        }
        const index = next++;
        const pattern = patterns[index];
        // Provisioning, the pattern and the final stop.
        if (!budget.affords(requestsOf(pattern) + 2)) return;
        const { history, message, ran } = await runPattern(pattern, index, budget);
        for (let length = 1; length <= ran; length++) {
          if (!covered.has(length)) covered.set(length, new Set());
          covered.get(length)!.add(pattern.slice(0, length).join());
        }
        if (message && !failure) failure = { history, message, pattern, index };
      }
    };
    await Promise.all(Array.from({ length: LANES }, (_, number) => lane(number)));
    if (next < patterns.length) break;
  }
  if (budget.halted && !failure) throw budget.halted;
  const exploration = { ...finish('systematic', state, budget, 'the systematic phase runs the same patterns every time'), covered: coverageLine(covered), everyThreeStep: (covered.get(3)?.size ?? 0) === KIND_NAMES.length ** 3 };
  if (failure) {
    // Other histories ran beside it: run the pattern once more alone, so that the report says whether it breaks on its own.
    const requests = requestsOf(failure.pattern) + 2;
    const alone = await runPattern(failure.pattern, failure.index, new Budget(requests, performance.now() + 10_000 + 2 * options.pacer.expectedMs(requests), options.pacer));
    const shown = alone.message ? alone : failure;
    exploration.failure = shown.message;
    exploration.counterexample = [
      alone.message
        ? `A history of ${alone.history.length} steps breaks the model (systematic phase, pattern ${failure.pattern.join(', ')}, run alone; every run tries it):`
        : `A history of ${failure.history.length} steps breaks the model while other histories of the team run beside it (systematic phase, pattern ${failure.pattern.join(', ')}); run alone, it passed:`,
      ...shown.history.lines,
      `Found after ${state.histories} histories; ${budget.spent} requests to stop and interact in all.`,
    ].join('\n');
  }
  return exploration;
}

/** Random histories per round of fast-check: the search checks its budget between rounds. */
const ROUND = 10;

/** Runs random histories until SEQUENCE_RUNS pass, the budget is spent, or one breaks the model; shrinks and describes that one. */
export async function exploreHistories(options: ExploreOptions & { seed: number; runs: number }): Promise<Exploration> {
  const { seed, runs } = options;
  // Loaded here, not with the module: only the worker that runs this rule needs it.
  const fc = await import('fast-check');
  const budget = new Budget(options.requests, options.until, options.pacer);
  const state = phaseState();
  const steps = stepsFor(fc, budget, options.settings.durationToleranceMs);
  let lastFailure: { history: History; message: string } | undefined;
  const property = fc.asyncProperty(fc.commands(steps, { maxCommands: 14 }), async (commands) => {
    if (!budget.affords(2)) return;
    const history = new History();
    const message = await runHistory(options, budget, state, history, async (real) => {
      // Every history begins with session A, so that no step waits for a session to act on.
      const setup = async () => {
        // Room for every session the history may open, taken before it opens any.
        const model: Model = { sessions: [], capacity: await real.sessions.reserve(LABELS.length) };
        if (budget.affords(1)) {
          budget.spend(1);
          await provisionInto(model, real);
        }
        return { model, real };
      };
      await fc.asyncModelRun(setup, commands);
    });
    if (message) {
      lastFailure = { history, message };
      throw new Error(message);
    }
  });
  // Rounds of a few histories, each with the next seed, until SEQUENCE_RUNS, the budget or the time runs out.
  let details: { failed: boolean; numShrinks: number } | undefined;
  for (let round = 0, ran = 0; ran < runs && budget.affords(2) && !details?.failed; round++, ran += ROUND) {
    details = await fc.check(property, { seed: (seed + round) | 0, numRuns: Math.min(ROUND, runs - ran) });
  }
  if (budget.halted && !lastFailure) throw budget.halted;
  const exploration = finish(seed, state, budget, `seed ${seed}`);
  if (details?.failed && lastFailure) {
    const { history, message } = lastFailure;
    exploration.failure = message;
    exploration.counterexample = [
      `A history of ${history.length} steps breaks the model (seed ${seed}; replay with SEQUENCE_SEED=${seed}):`,
      ...history.lines,
      `Found and shrunk ${details.numShrinks} times in ${state.histories} histories; ${budget.spent} requests to stop and interact in all${budget.left <= 0 ? ' (SEQUENCE_BUDGET used up: shrinking stopped there)' : ''}.`,
    ].join('\n');
  }
  return exploration;
}

/** The pacer of a search: it starts from what the run has learnt of the team's limit in the last minute. */
export function pacerFor(settings: Settings, team: string): Pacer {
  return new Pacer(settings.reportsDir ? recentRatePerMinute(settings.reportsDir, team) : undefined);
}
