/**
 * The random phase: histories over up to three sessions (fast-check's model-based testing), which
 * favour repeated steps and the same session; a failing one is shrunk by fast-check.
 */

import { History, LABELS, type Model, provisionInto, stepsFor } from './model';
import { Budget } from './pace';
import { type Exploration, type ExploreOptions, finish, type HistoryFailure, phaseState, runHistory } from './search';

/** Random histories per round of fast-check: the search checks its budget between rounds. */
const ROUND = 10;

/** Runs random histories until SEQUENCE_RUNS pass, the budget is spent, or one breaks the model; shrinks and describes that one. */
export async function exploreHistories(options: ExploreOptions & { seed: number; runs: number }): Promise<Exploration> {
  const { seed, runs } = options;
  // Loaded here, not with the module: only the worker that runs this rule needs it.
  const fc = await import('fast-check');
  const budget = new Budget(options.requests, options.until, options.pacer, options.ceiling);
  const state = phaseState();
  const steps = stepsFor(fc, budget, options.settings.durationToleranceMs);
  let lastFailure: { history: History; failure: HistoryFailure } | undefined;
  const property = fc.asyncProperty(fc.commands(steps, { maxCommands: 14 }), async (commands) => {
    if (!budget.affords(2)) return;
    const history = new History();
    const failure = await runHistory(options, budget, state, history, async (real) => {
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
    if (failure) {
      lastFailure = { history, failure };
      throw new Error(failure.message);
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
    const { history, failure } = lastFailure;
    exploration.failure = failure.message;
    // The shrunk history is the last that failed: its reproduction replays it.
    if (failure.reproduction) exploration.reproduction = failure.reproduction;
    exploration.counterexample = [
      `A history of ${history.length} steps breaks the model (seed ${seed}; replay with SEQUENCE_SEED=${seed}):`,
      ...history.lines,
      `Found and shrunk ${details.numShrinks} times in ${state.histories} histories; ${budget.spent} requests to stop and interact in all${budget.left <= 0 ? ' (SEQUENCE_BUDGET used up: shrinking stopped there)' : ''}.`,
    ].join('\n');
  }
  return exploration;
}
