import { notVerifiable } from '../../src/checks/checks';
import { note } from '../../src/checks/recorder';
import { DeclaredBehaviour } from '../../src/config/errors';
import { spec } from '../../src/config/rules';
import { test } from '../../src/playwright/fixtures';
import { composeHistory } from '../../src/reproduction/compose';
import { searchHistories } from '../../src/sequences/run';

test(
  'histories of provisions, interacts, holds, owner stops, refused stops and simultaneous stops, every short one and then random ones, agree with a model of the specification',
  spec('sequences/random-histories'),
  async ({ api, identities, settings, ledger, testId, sequenceSeeds, sequenceRuns, requestTrace, check }) => {
    const context = { api, identities, settings, ledger, testId, seeds: sequenceSeeds, runs: sequenceRuns, tracePosition: () => requestTrace.steps.length };
    const { explored, failed, covered, shortOfThreeSteps } = await searchHistories(context);
    // Its reproduction: the shrunk history again, judged by the named check its step failed.
    await check(
      'model',
      () => {
        if (failed) throw new Error(`${failed.failure}\n${failed.counterexample}`);
      },
      () => (failed?.reproduction ? composeHistory(requestTrace, failed.reproduction) : undefined),
    );
    if (!explored.some((exploration) => exploration.durationsExamined > 0))
      note('no stop of a live session reported a sessionDurationMs: the model checked answers, not clocks');
    // Nothing to judge: the check neither passes nor fails (and a declared deviation of it stays untested).
    if (!explored.some((exploration) => exploration.chargesExamined > 0))
      note('no history stopped a live session that reported a charge: the credits were not checked');
    else {
      const unprorated = explored.find((exploration) => exploration.unproratedCharge);
      const declared = explored.find((exploration) => exploration.declaredCharge)?.declaredCharge;
      await check(
        'credits',
        () => {
          if (unprorated) throw new Error(unprorated.unproratedCharge);
          if (declared) throw new DeclaredBehaviour(declared.message, declared.reason);
        },
        () => (unprorated?.chargeReproduction ? composeHistory(requestTrace, unprorated.chargeReproduction) : undefined),
      );
    }
    if (shortOfThreeSteps) note(shortOfThreeSteps);
    // A search that did not reach every 3-step pattern proves nothing under STRICT.
    if (shortOfThreeSteps && settings.strict) notVerifiable(`${shortOfThreeSteps} (${covered})`);
  },
);
