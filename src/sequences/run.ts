/**
 * The sequences rule's search, whole: its share of the session budget and of the requests, the
 * systematic phase, then a random phase per seed, and the line that says what it searched.
 */
import { notVerifiable } from '../checks/checks';
import { attach, extendTimeout, note, step } from '../checks/recorder';
import type { Settings } from '../config/settings';
import { capFill, predict, SEARCH_LEAST_SESSIONS, SEQUENCE_REQUESTS_PER_SESSION } from '../domain/budget';
import type { Client } from '../domain/client';
import type { Ledger } from '../domain/ledger';
import { Sessions } from '../domain/sessions';
import type { Identities } from '../domain/target';
import { type Pacer, pacerFor, planCeiling } from './pace';
import { exploreHistories } from './random';
import { type Exploration, PLAN_STOP } from './search';
import { REQUESTS_FOR_EVERY_THREE_STEP_PATTERN, SESSIONS_FOR_EVERY_THREE_STEP_PATTERN, searchSystematically } from './systematic';

/** The systematic phase's share of the rule's time and requests; the random histories have the rest. */
const SYSTEMATIC_SHARE = 0.6;

/** What the search knows of the team's rate limit: how many of its requests waited behind it, never more. */
const waitsOf = ({ waitedForLimit, metLimit }: Pacer) =>
  waitedForLimit
    ? `${waitedForLimit} request(s) waited behind the team's rate limit${metLimit ? `, ${metLimit} of them after a 429 of their own` : ''}`
    : "none waited behind the team's rate limit";

export interface SearchContext {
  api: Client;
  identities: Identities;
  settings: Settings;
  ledger: Ledger;
  testId: string;
  seeds: number[];
  runs: number;
  /** How many requests the test's trace holds: where a history's begin and end. */
  tracePosition: () => number;
}

/** Every phase's exploration, the first one that broke the model, and notes on what the search could not reach. */
export interface Searched {
  explored: Exploration[];
  failed?: Exploration;
  /** What the systematic phase covered, e.g. "all 1-step patterns, 61% of 2-step patterns". */
  covered?: string;
  /** Short order faults hide in 3-step patterns: where the search did not reach every one, what would. */
  shortOfThreeSteps?: string;
}

export async function searchHistories({ api, identities, settings, ledger, testId, seeds, runs, tracePosition }: SearchContext): Promise<Searched> {
  // SEQUENCE_SECONDS is this rule's own: its test's timeout grows by it.
  extendTimeout(settings.sequenceSeconds * 1000);
  const started = performance.now();
  const until = started + settings.sequenceSeconds * 1000;
  const pacer = pacerFor(api.coordination, identities.owner.team ?? identities.owner.name);
  const paced = pacer.client(api);
  // Its share of the session budget, what the rules' own tests leave: the search ends when it is spent.
  const { sequences: share, budget, needed } = predict(settings);
  // Four sessions are kept to run two failing patterns again alone (an interact after its stop may open a second).
  const allowance = { left: Math.max(0, share - 4) };
  const requests = Math.min(settings.sequenceBudget, share * SEQUENCE_REQUESTS_PER_SESSION);
  const openSessions = (own = allowance) =>
    new Sessions({ api: paced, identities, settings, ledger, testId, signal: api.signal, allowance: own, budget: { sessions: budget, needed } });
  // A cap the target's words stated since the prediction takes more to fill: simultaneous-opens keeps those sessions.
  if (!settings.selectedRules || settings.selectedRules.includes('stop-is-final'))
    allowance.left = Math.max(0, allowance.left - Math.max(0, capFill(settings, openSessions().statedCap()) - capFill(settings)));
  const granted = allowance.left;
  // On a limited plan, one minute of the team's limit for the whole search (pace.ts planCeiling).
  const spent = () => explored.reduce((sum, exploration) => sum + exploration.requests, 0);
  const ceiling = () => planCeiling(api.coordination, identities.owner.team ?? identities.owner.name) - spent();
  const options = { api: paced, openSessions, identities, settings, pacer, tracePosition, ceiling };
  const explored: Exploration[] = [];
  if (share < SEARCH_LEAST_SESSIONS)
    notVerifiable(
      `the session budget (${budget}) leaves the sequences rule ${share} session(s) after the rules' own tests (${needed}): SESSION_BUDGET=${needed + 12} lets it search`,
    );
  const systematic = await step(
    `run every short pattern of steps over one session (at most ${Math.round(SYSTEMATIC_SHARE * settings.sequenceSeconds)} s)`,
    () => searchSystematically({ ...options, requests: requests * SYSTEMATIC_SHARE, until: started + SYSTEMATIC_SHARE * (until - started) }),
  );
  explored.push(systematic);
  for (const [index, seed] of seeds.entries()) {
    if (explored.some((exploration) => exploration.failure)) break;
    const left = (requests - explored.reduce((sum, exploration) => sum + exploration.requests, 0)) / (seeds.length - index);
    const seedUntil = performance.now() + (until - performance.now()) / (seeds.length - index);
    console.log(`sequences: seed ${seed} (replay with SEQUENCE_SEED=${seed})`);
    const exploration = await step(`run random histories (seed ${seed}${Number.isFinite(runs) ? `, at most ${runs}` : ''}, until the rule's time is up)`, () =>
      exploreHistories({ ...options, seed, runs, requests: left, until: seedUntil }),
    );
    explored.push(exploration);
  }
  const figures = explored.map(({ counterexample, failure, unproratedCharge, declaredCharge, reproduction, chargeReproduction, ...figure }) => ({
    ...figure,
    ...(typeof figure.phase === 'number' ? { replay: `SEQUENCE_SEED=${figure.phase}` } : {}),
  }));
  await attach('sequence phases', JSON.stringify(figures, null, 2));
  const histories = explored.reduce((sum, exploration) => sum + exploration.histories, 0);
  const steps = explored.reduce((sum, exploration) => sum + exploration.steps, 0);
  const searched =
    `${histories} histories, ${steps} steps, ${explored.reduce((sum, exploration) => sum + exploration.requests, 0)} requests to stop and interact in ${((performance.now() - started) / 1000).toFixed(1)} s` +
    ` (${waitsOf(pacer)}), ${granted - allowance.left} of its ${granted} session(s); systematic phase: ${systematic.covered}` +
    (explored.some((exploration) => exploration.stoppedAt === PLAN_STOP)
      ? `; it stopped at ${PLAN_STOP} (${planCeiling(api.coordination, identities.owner.team ?? identities.owner.name)} requests)`
      : '');
  note(`searched ${searched}`);
  // Nothing searched (its time or its sessions ran out before a first history, at a slow plan's pace): no verdict.
  if (!histories) notVerifiable(`no history fit in the rule's time and sessions at this target's pace: searched ${searched}; raise SEQUENCE_SECONDS`);
  const failed = explored.find((exploration) => exploration.failure);
  if (failed) await attach('shrunk history', failed.counterexample!, 'text/plain');
  if (systematic.everyThreeStep) return { explored, failed };
  const seconds = Math.ceil(pacer.expectedMs(REQUESTS_FOR_EVERY_THREE_STEP_PATTERN) / SYSTEMATIC_SHARE / 1000);
  const shortOfThreeSteps =
    `the systematic phase did not reach every 3-step pattern: they take ${SESSIONS_FOR_EVERY_THREE_STEP_PATTERN} sessions and about ${REQUESTS_FOR_EVERY_THREE_STEP_PATTERN} requests to stop and interact, ` +
    `SESSION_BUDGET=${needed + Math.ceil(SESSIONS_FOR_EVERY_THREE_STEP_PATTERN / SYSTEMATIC_SHARE)}, SEQUENCE_SECONDS=${seconds} and SEQUENCE_BUDGET=${Math.ceil(REQUESTS_FOR_EVERY_THREE_STEP_PATTERN / SYSTEMATIC_SHARE)} at this target's pace`;
  return { explored, failed, covered: systematic.covered, shortOfThreeSteps };
}
