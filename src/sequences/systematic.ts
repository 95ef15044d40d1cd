/** The systematic phase: every short pattern of step kinds over one session, most telling first. */
import { setTimeout as sleep } from 'node:timers/promises';
import { extendTimeout } from '../checks/recorder';
import {
  History,
  holdStep,
  interactStep,
  type Model,
  ownerStopStep,
  provisionInto,
  REFUSERS,
  refusedStopStep,
  type Step,
  simultaneousStopsStep,
  unknownStopStep,
} from './model';
import { Budget, LANE_PAUSE_MS, LANES } from './pace';
import { type Exploration, type ExploreOptions, finish, type HistoryFailure, phaseState, runHistory } from './search';

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
export type Kind = keyof typeof KINDS;
const KIND_NAMES = Object.keys(KINDS) as Kind[];
/** A stop without a valid key is each of these in turn, across the phase: no key, an unknown key, the owner's key with a letter's case changed, one more or one fewer character. */
const KEYLESS = REFUSERS.filter((who) => who !== 'foreign');
/** Longest patterns the systematic phase reaches when its budget allows. */
const MAX_DEPTH = 4;

function stepOfKind(kind: Kind, budget: Budget, keylessTurn: number, holdMs: number): Step {
  switch (kind) {
    case 'interact':
      return interactStep(budget, 0);
    case 'hold':
      return holdStep(budget, holdMs);
    case 'ownerStop':
      return ownerStopStep(budget, 0);
    case 'foreignStop':
      return refusedStopStep(budget, 0, 'foreign');
    case 'keylessStop':
      return refusedStopStep(budget, 0, KEYLESS[keylessTurn % KEYLESS.length]);
    case 'unknownJobStop':
      return unknownStopStep(budget);
    case 'twoStopsAtOnce':
      return simultaneousStopsStep(budget, 0, 0);
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
  for (const [i, kind] of pattern.entries()) {
    if (kind === 'hold') continue;
    for (const [j, other] of pattern.slice(i + 1).entries()) if (other === kind) score += j === 0 ? 2 : 1;
  }
  if (pattern.some((_kind, i) => i > 0 && (pattern[i - 1] === 'ownerStop' || pattern[i - 1] === 'twoStopsAtOnce'))) score += 2;
  // An interact on an ended session: it may open a new one, bring the old one back, or be refused, where stopped state machines break.
  if (pattern.some((kind, i) => kind === 'interact' && pattern.slice(0, i).some((before) => before === 'ownerStop' || before === 'twoStopsAtOnce'))) score += 2;
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
function patternsOfDepth(depth: number): Kind[][] {
  let patterns: Kind[][] = [[]];
  for (let i = 0; i < depth; i++) patterns = patterns.flatMap((pattern) => KIND_NAMES.map((kind) => [...pattern, kind]));
  const holds = (pattern: Kind[]) => pattern.filter((kind) => kind === 'hold').length;
  const order = (a: Kind[], b: Kind[]) => telling(b) - telling(a) || requestsOf(a) - requestsOf(b) || holds(a) - holds(b);
  if (depth > 3) return patterns.filter((pattern) => pattern.at(-1) !== 'ownerStop').sort(order);
  // The most telling pattern that begins with each kind goes first: a search of a few sessions still covers every 1-step pattern.
  const sorted = patterns.sort(order);
  const heads = KIND_NAMES.map((kind) => sorted.find((pattern) => pattern[0] === kind)!);
  return [...heads, ...sorted.filter((pattern) => !heads.includes(pattern))];
}

/** Sessions the systematic phase needs for every 3-step pattern, at most: one each (a chain through a session never stopped takes fewer). */
export const SESSIONS_FOR_EVERY_THREE_STEP_PATTERN = KIND_NAMES.length ** 3;

/** Requests to stop and interact every 1-step pattern takes at most (each from a fresh session, with its final stop): budget.ts predicts them. */
export const REQUESTS_FOR_EVERY_ONE_STEP_PATTERN = patternsOfDepth(1).reduce((sum, pattern) => sum + requestsOf(pattern) + 2, 0);

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

/**
 * The systematic phase: every pattern of step kinds over one session, up to 3 steps and beyond as
 * its budget allows (patternsOfDepth), each from a fresh session and followed by the owner's stop,
 * several at once while the target shows no limit. Deterministic: it needs no seed.
 */
export async function searchSystematically(options: ExploreOptions): Promise<Exploration> {
  const budget = new Budget(options.requests, options.until, options.pacer, options.ceiling);
  const state = phaseState();
  const covered = new Map<number, Set<string>>();
  const holdMs = options.settings.durationToleranceMs + 10;
  type Found = { history: History; message: string; pattern: Kind[]; index: number; reproduction?: HistoryFailure['reproduction'] };
  type Alone = Awaited<ReturnType<typeof runPattern>> & { outOfSessions: boolean };
  // A failure that shows alone ends the search; one that showed only after other patterns (a clock that needed time) is kept while it goes on.
  let failure: (Found & { alone: Alone }) | undefined;
  let besides: (Found & { alone: Alone }) | undefined;
  // Patterns run alone: two at most, each with two sessions the search keeps for it (an interact after its stop may open a second).
  const kept = [{ left: 2 }, { left: 2 }];
  const ranAlone = new Set<number>();
  // While one runs, no other history starts: its part of the trace is its own.
  let aloneRunning: Promise<unknown> | undefined;
  /**
   * One pattern from a fresh session, then the owner's stop, its sessions from `allowance` (the search's own without it): run alone, to
   * tell whether a failure found beside others is its own. A stop without a valid key takes its key by the pattern's place.
   */
  const runPattern = async (pattern: Kind[], index: number, within: Budget, allowance?: { left: number }) => {
    const history = new History();
    let ran = 0;
    const failed = await runHistory({ ...options, openSessions: () => options.openSessions(allowance) }, within, state, history, async (real) => {
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
    return { history, message: failed?.message, reproduction: failed?.reproduction, ran };
  };
  const untried = () => patternsOfDepth(1).filter(([kind]) => !covered.get(1)?.has(kind));
  // Every kind once, run once at most before the end: where the team's limit shows, it goes before the patterns that would spend the sessions.
  let everyKindFirst: Promise<void> | undefined;
  /** Runs `patterns` in order, several sessions at once where the pace allows; true when every one ran. */
  const runPatterns = async (patterns: Kind[][], budget: Budget, kindsFirst = false): Promise<boolean> => {
    let next = 0;
    /**
     * Patterns one after the other through one session's life, while it was never stopped: a session a
     * pattern left running is as good a start as a fresh one, and the budget's sessions go further.
     */
    const runChain = async () => {
      const history = new History();
      const ran: { pattern: Kind[]; index: number; steps: number }[] = [];
      const failed = await runHistory(options, budget, state, history, async (real) => {
        await real.sessions.reserve(1);
        const model: Model = { sessions: [], capacity: 1 };
        budget.spend(1);
        await provisionInto(model, real);
        // Only a session never stopped goes on to the next pattern: it is as good a start as a fresh one.
        const began = model.sessions[0].began;
        while (
          !failure &&
          next < patterns.length &&
          model.sessions[0].live &&
          model.sessions[0].began === began &&
          budget.affords(requestsOf(patterns[next]) + 1)
        ) {
          const one = { pattern: patterns[next], index: next++, steps: 0 };
          ran.push(one);
          let keyless = one.index;
          for (const kind of one.pattern) {
            const step = stepOfKind(kind, budget, kind === 'keylessStop' ? keyless++ : 0, holdMs);
            if (!step.check(model)) break;
            await step.run(model, real);
            one.steps += 1;
          }
        }
        const stop = ownerStopStep(budget, 0);
        if (model.sessions[0].live && stop.check(model)) await stop.run(model, real);
      });
      for (const { pattern, steps } of ran) {
        for (let length = 1; length <= steps; length++) {
          if (!covered.has(length)) covered.set(length, new Set());
          covered.get(length)!.add(pattern.slice(0, length).join());
        }
      }
      const last = ran.at(-1);
      // A failure at the first step of a pattern was set up by the one before it in the session's life: that one is run alone.
      const culprit = last && last.steps === 0 && ran.length > 1 ? ran.at(-2)! : last;
      const sessions = failed && culprit && !failure && !ranAlone.has(culprit.index) ? kept.shift() : undefined;
      if (failed && culprit && !failure) {
        const found = { history, message: failed.message, pattern: culprit.pattern, index: culprit.index, reproduction: failed.reproduction };
        if (!sessions) {
          besides ??= { ...found, alone: { history, ran: 0, message: undefined, reproduction: undefined, outOfSessions: true } };
          return;
        }
        ranAlone.add(found.index);
        // Other histories ran beside it: the pattern once more alone, so that the report says whether it breaks on its own.
        const requests = requestsOf(found.pattern) + 2;
        const aloneBudget = new Budget(requests, performance.now() + 10_000 + 2 * options.pacer.expectedMs(requests), options.pacer);
        const running = runPattern(found.pattern, found.index, aloneBudget, sessions);
        aloneRunning = running;
        const alone = { ...(await running), outOfSessions: aloneBudget.outOfSessions };
        budget.spend(aloneBudget.spent);
        budget.halted ??= aloneBudget.halted;
        if (alone.message) failure ??= { ...found, alone };
        else besides ??= { ...found, alone };
      }
    };
    const lane = async (number: number) => {
      while (!failure && next < patterns.length && budget.affords(requestsOf(patterns[next]) + 2)) {
        if (kindsFirst && options.pacer.limited && !everyKindFirst && untried().length) everyKindFirst = everyKind();
        if (kindsFirst && everyKindFirst) await everyKindFirst;
        if (aloneRunning) await aloneRunning;
        if (number >= options.pacer.lanes) {
          await sleep(LANE_PAUSE_MS, undefined, { signal: options.api.signal });
          continue;
        }
        await runChain();
      }
    };
    await Promise.all(Array.from({ length: LANES }, (_, number) => lane(number)));
    return next === patterns.length;
  };
  // Every kind not yet tried, once, whatever the time: a slow plan may not reach them all with the most telling patterns.
  const everyKind = async () => {
    const missing = untried();
    if (!missing.length || failure || budget.halted || budget.outOfSessions) return;
    const requests = missing.reduce((sum, pattern) => sum + requestsOf(pattern) + 2, 0);
    const oneStep = new Budget(Math.max(budget.left, requests), Number.POSITIVE_INFINITY, options.pacer);
    extendTimeout(options.pacer.expectedMs(requests));
    await runPatterns(missing, oneStep);
    budget.spend(oneStep.spent);
    budget.halted ??= oneStep.halted;
    budget.outOfSessions ||= oneStep.outOfSessions;
  };
  if (options.pacer.limited) await (everyKindFirst = everyKind());
  for (let depth = 3; depth <= MAX_DEPTH && !failure && !budget.halted && !budget.outOfTime && !budget.outOfPlan; depth++)
    if (!(await runPatterns(patternsOfDepth(depth), budget, true))) break;
  await everyKind();
  failure ??= besides;
  if (budget.halted && !failure) throw budget.halted;
  const exploration = {
    ...finish('systematic', state, budget, 'the systematic phase runs the same patterns every time'),
    covered: coverageLine(covered),
    everyThreeStep: (covered.get(3)?.size ?? 0) === KIND_NAMES.length ** 3,
  };
  if (failure) {
    const { alone } = failure;
    const apart = alone.outOfSessions ? 'it could not be run alone, the session budget being spent' : 'run alone from a fresh session, it passed';
    const shown = alone.message ? alone : failure;
    exploration.failure = shown.message;
    // The history run alone has a part of the trace of its own; one run beside others shares it with them.
    if (alone.reproduction) exploration.reproduction = alone.reproduction;
    else if (failure.reproduction) exploration.reproduction = failure.reproduction;
    exploration.counterexample = [
      alone.message
        ? `A history of ${alone.history.length} steps breaks the model (systematic phase, pattern ${failure.pattern.join(', ')}, run alone; every run tries it):`
        : `A history of ${failure.history.length} steps breaks the model beside other histories of the team, after the patterns before it in its session's life (systematic phase, pattern ${failure.pattern.join(', ')}); ${apart}:`,
      ...shown.history.lines,
      `Found after ${state.histories} histories; ${budget.spent} requests to stop and interact in all.`,
    ].join('\n');
  }
  return exploration;
}
