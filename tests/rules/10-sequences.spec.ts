import { test } from '../support/fixtures';
import { DeclaredBehaviour } from '../support/errors';
import { spec } from '../support/rules';
import { exploreHistories, type Exploration } from '../support/sequences';

test(
  'random histories of provisions, interacts, holds, owner stops, refused stops and simultaneous stops agree with a model of the specification',
  spec('sequences/random-histories'),
  async ({ api, sessions, identities, settings, sequenceSeeds, sequenceRuns: runs, check }, testInfo) => {
    const explored: Exploration[] = [];
    // Half the test's time for the search, the rest for shrinking a failure and stopping its sessions.
    const until = performance.now() + settings.testTimeoutMs / 2;
    for (const seed of sequenceSeeds) {
      console.log(`sequences: seed ${seed} (replay with SEQUENCE_SEED=${seed})`);
      const exploration = await test.step(`run up to ${runs} random histories (seed ${seed}, at most ${settings.sequenceBudget} requests to stop and interact)`, () =>
        exploreHistories({ api, sessions, identities, settings, seed, runs, until }),
      );
      explored.push(exploration);
      if (exploration.failure) break;
    }
    const figures = explored.map(({ counterexample, failure, unproratedCharge, declaredCharge, ...figure }) => ({ ...figure, replay: `SEQUENCE_SEED=${figure.seed}` }));
    await testInfo.attach('sequence seeds', { body: JSON.stringify(figures, null, 2), contentType: 'application/json' });
    const failed = explored.find((exploration) => exploration.failure);
    if (failed) {
      await testInfo.attach('shrunk history', { body: failed.counterexample!, contentType: 'text/plain' });
      console.log(failed.counterexample);
    }
    await check('model', () => {
      if (failed) throw new Error(`${failed.failure}\n${failed.counterexample}`);
    });
    if (!explored.some((exploration) => exploration.durationsExamined > 0)) {
      testInfo.annotations.push({ type: 'note', description: 'no stop of a live session reported a sessionDurationMs: the model checked answers, not clocks' });
    }
    const unprorated = explored.find((exploration) => exploration.unproratedCharge);
    if (!explored.some((exploration) => exploration.chargesExamined > 0)) {
      // Nothing to judge: the check neither passes nor fails (and a declared deviation of it stays untested).
      testInfo.annotations.push({ type: 'note', description: "no history stopped a live session that reported a charge: the credits were not checked" });
      return;
    }
    const declared = explored.find((exploration) => exploration.declaredCharge)?.declaredCharge;
    await check('credits', () => {
      if (unprorated) throw new Error(unprorated.unproratedCharge);
      if (declared) throw new DeclaredBehaviour(declared.message, declared.reason);
    });
  },
);
