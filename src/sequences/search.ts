/**
 * What the two phases of the sequences search share: what a phase did and found, and how one
 * history runs against the target. The search first runs every short pattern of step kinds over
 * one session (systematic.ts), then random histories over up to three sessions (random.ts). It
 * lasts SEQUENCE_SECONDS, at the pace the target allows (pace.ts).
 */

import type { NamedCall } from '../checks/checks';
import { RunError } from '../config/errors';
import type { Settings } from '../config/settings';
import { CapHeldEmptyHanded } from '../domain/cap-discovery';
import type { Client } from '../domain/client';
import { BudgetSpent, CapReached, type Sessions } from '../domain/sessions';
import type { Identities } from '../domain/target';
import type { History, Real } from './model';
import type { Budget, Pacer } from './pace';

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
  /** That charge's history in the test's trace, and the named check it failed. */
  chargeReproduction?: HistoryFailure['reproduction'];
  /** The first charge that was not prorated but is what the target's declared billing rule gives, and that rule's reason. */
  declaredCharge?: { message: string; reason: string };
  /** Durations and charges of live sessions' stops examined: none means they were not checked at all. */
  durationsExamined: number;
  chargesExamined: number;
  /** Set when the phase stopped at its time limit, before its histories or requests were used up. */
  stoppedAt?: string;
  /** The failing history's part of the test's trace and the named check it failed, for its reproduction. */
  reproduction?: HistoryFailure['reproduction'];
}

/** A history that broke the model: the disagreement, and (where a named check failed) what its reproduction replays. */
export interface HistoryFailure {
  message: string;
  reproduction?: { call: NamedCall; from: number; to: number };
}

export interface ExploreOptions {
  /** The search's client: paced (Pacer.client). */
  api: Client;
  /** A new set of sessions for one history, stopped after it. */
  /** With `allowance`, sessions from that share of the budget instead of the search's own. */
  openSessions: (allowance?: { left: number }) => Sessions;
  identities: Identities;
  settings: Settings;
  pacer: Pacer;
  /** Requests to stop and interact this phase may send. */
  requests: number;
  /** The most it may send in all as the plan stands now (pace.ts planCeiling, less what earlier phases sent). */
  ceiling: () => number;
  /** performance.now() past which no history starts or goes on. */
  until: number;
  /** How many requests the test's trace holds: where a history's begin and end. */
  tracePosition?: () => number;
}

/** What the histories of one phase share: where their charges and counts go. */
export function phaseState() {
  return { charges: [] as Real['charges'], examined: { durations: 0, charges: 0 }, histories: 0, steps: 0 };
}

/** Why a phase stopped on a limited plan (pace.ts planCeiling). */
export const PLAN_STOP = "one minute of the team's limited plan";

/** The figures of a phase, with its charges judged: shared by both phases. */
export function finish(phase: Exploration['phase'], state: ReturnType<typeof phaseState>, budget: Budget, replay: string): Exploration {
  const exploration: Exploration = {
    phase,
    histories: state.histories,
    steps: state.steps,
    requests: budget.spent,
    durationsExamined: state.examined.durations,
    chargesExamined: state.examined.charges,
    ...(budget.outOfTime ? { stoppedAt: 'SEQUENCE_SECONDS' } : budget.outOfPlan ? { stoppedAt: PLAN_STOP } : {}),
  };
  const unprorated = state.charges.find((charge) => !charge.declared);
  const declared = state.charges.find((charge) => charge.declared);
  const told = (charge: Real['charges'][number]) =>
    [charge.message, `in a history of ${charge.history.length} steps (${replay}):`, ...charge.history.lines].join('\n');
  if (unprorated) exploration.unproratedCharge = told(unprorated);
  if (unprorated?.reproduction) exploration.chargeReproduction = unprorated.reproduction;
  if (declared) exploration.declaredCharge = { message: told(declared), reason: declared.declared! };
  return exploration;
}

/**
 * Runs one history: its sessions come from `openSessions` and are stopped after it. Returns the
 * failure that broke the model, if any; an error of the run halts the budget; a cap met ends the
 * history quietly.
 */
export async function runHistory(
  options: ExploreOptions,
  budget: Budget,
  state: ReturnType<typeof phaseState>,
  history: History,
  body: (real: Real) => Promise<void>,
): Promise<HistoryFailure | undefined> {
  const sessions = options.openSessions();
  const connection = options.api.connection();
  const from = options.tracePosition?.();
  state.histories += 1;
  try {
    const trace = from === undefined ? undefined : { from, position: options.tracePosition! };
    await body({
      api: options.api,
      sessions,
      identities: options.identities,
      settings: options.settings,
      history,
      charges: state.charges,
      examined: state.examined,
      connection,
      trace,
    });
    return undefined;
  } catch (error) {
    if (error instanceof RunError) {
      budget.halted ??= error;
      return undefined;
    }
    // The target's cap on live sessions showed: not a disagreement; the next history keeps under it.
    if (error instanceof CapReached) return undefined;
    // The search's share of the session budget is spent, or no session of the team can open: it ends here.
    if (error instanceof BudgetSpent || error instanceof CapHeldEmptyHanded) {
      budget.outOfSessions = true;
      return undefined;
    }
    const call = (error as { call?: NamedCall }).call;
    const to = options.tracePosition?.();
    return { message: String((error as Error).message), ...(call && from !== undefined && to !== undefined ? { reproduction: { call, from, to } } : {}) };
  } finally {
    options.api.release(connection);
    state.steps += history.length;
    const problems = await sessions.cleanup(options.api);
    if (problems.length) budget.halted ??= new RunError(`Could not stop ${problems.length} session(s) a history created: ${problems.join(', ')}`);
  }
}
