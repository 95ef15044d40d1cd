import { notVerifiable } from '../../src/checks/checks';
import { DeclaredBehaviour } from '../../src/config/errors';
import { spec } from '../../src/config/rules';
import { capFill, predict, SEQUENCE_REQUESTS_PER_SESSION } from '../../src/domain/budget';
import { Sessions } from '../../src/domain/sessions';
import { test } from '../../src/playwright/fixtures';
import { composeHistory } from '../../src/reproduction/compose';
import { type Pacer, pacerFor } from '../../src/sequences/pace';
import { exploreHistories } from '../../src/sequences/random';
import type { Exploration } from '../../src/sequences/search';
import { REQUESTS_FOR_EVERY_THREE_STEP_PATTERN, SESSIONS_FOR_EVERY_THREE_STEP_PATTERN, searchSystematically } from '../../src/sequences/systematic';

/** What the search knows of the team's rate limit: how many of its requests waited behind it, never more. */
const waitsOf = ({ waitedForLimit, metLimit }: Pacer) =>
  waitedForLimit
    ? `${waitedForLimit} request(s) waited behind the team's rate limit${metLimit ? `, ${metLimit} of them after a 429 of their own` : ''}`
    : "none waited behind the team's rate limit";

/** The systematic phase's share of the rule's time and requests; the random histories have the rest. */
const SYSTEMATIC_SHARE = 0.6;

test(
  'histories of provisions, interacts, holds, owner stops, refused stops and simultaneous stops, every short one and then random ones, agree with a model of the specification',
  spec('sequences/random-histories'),
  async ({ api, identities, settings, ledger, testId, sequenceSeeds, sequenceRuns: runs, requestTrace, check }, testInfo) => {
    // SEQUENCE_SECONDS is this rule's own: its test's timeout grows by it.
    testInfo.setTimeout(testInfo.timeout + settings.sequenceSeconds * 1000);
    const started = performance.now();
    const until = started + settings.sequenceSeconds * 1000;
    const pacer = pacerFor(api.coordination, identities.owner.team ?? identities.owner.name);
    const paced = pacer.client(api);
    // Its share of the session budget, what the rules' own tests leave: the search ends when it is spent.
    const { sequences: share, budget, needed } = predict(settings);
    // Two sessions are kept to run a failing pattern again alone (an interact after its stop may open a second).
    const allowance = { left: Math.max(0, share - 2) };
    const requests = Math.min(settings.sequenceBudget, share * SEQUENCE_REQUESTS_PER_SESSION);
    const openSessions = (own = allowance) =>
      new Sessions({ api: paced, identities, settings, ledger, testId, signal: api.signal, allowance: own, budget: { sessions: budget, needed } });
    // A cap the target's words stated since the prediction takes more to fill: simultaneous-opens keeps those sessions.
    if (!settings.selectedRules || settings.selectedRules.includes('stop-is-final'))
      allowance.left = Math.max(0, allowance.left - Math.max(0, capFill(settings, openSessions().statedCap()) - capFill(settings)));
    const granted = allowance.left;
    const options = { api: paced, openSessions, identities, settings, pacer, tracePosition: () => requestTrace.steps.length };
    const explored: Exploration[] = [];
    if (share < 3)
      notVerifiable(
        `the session budget (${budget}) leaves the sequences rule ${share} session(s) after the rules' own tests (${needed}): SESSION_BUDGET=${needed + 12} lets it search`,
      );
    const systematic =
      await test.step(`run every short pattern of steps over one session (at most ${Math.round(SYSTEMATIC_SHARE * settings.sequenceSeconds)} s)`, () =>
        searchSystematically({ ...options, requests: requests * SYSTEMATIC_SHARE, until: started + SYSTEMATIC_SHARE * (until - started) }));
    explored.push(systematic);
    for (const [index, seed] of sequenceSeeds.entries()) {
      if (explored.some((exploration) => exploration.failure)) break;
      const left = (requests - explored.reduce((sum, exploration) => sum + exploration.requests, 0)) / (sequenceSeeds.length - index);
      const seedUntil = performance.now() + (until - performance.now()) / (sequenceSeeds.length - index);
      console.log(`sequences: seed ${seed} (replay with SEQUENCE_SEED=${seed})`);
      const exploration =
        await test.step(`run random histories (seed ${seed}${Number.isFinite(runs) ? `, at most ${runs}` : ''}, until the rule's time is up)`, () =>
          exploreHistories({ ...options, seed, runs, requests: left, until: seedUntil }));
      explored.push(exploration);
    }
    const figures = explored.map(({ counterexample, failure, unproratedCharge, declaredCharge, reproduction, chargeReproduction, ...figure }) => ({
      ...figure,
      ...(typeof figure.phase === 'number' ? { replay: `SEQUENCE_SEED=${figure.phase}` } : {}),
    }));
    await testInfo.attach('sequence phases', { body: JSON.stringify(figures, null, 2), contentType: 'application/json' });
    const histories = explored.reduce((sum, exploration) => sum + exploration.histories, 0);
    const steps = explored.reduce((sum, exploration) => sum + exploration.steps, 0);
    const searched =
      `${histories} histories, ${steps} steps, ${explored.reduce((sum, exploration) => sum + exploration.requests, 0)} requests to stop and interact in ${((performance.now() - started) / 1000).toFixed(1)} s` +
      ` (${waitsOf(pacer)}), ${granted - allowance.left} of its ${granted} session(s); systematic phase: ${systematic.covered}`;
    testInfo.annotations.push({ type: 'note', description: `searched ${searched}` });
    // Nothing searched (its time or its sessions ran out before a first history, at a slow plan's pace): no verdict.
    if (!histories) notVerifiable(`no history fit in the rule's time and sessions at this target's pace: searched ${searched}; raise SEQUENCE_SECONDS`);
    const failed = explored.find((exploration) => exploration.failure);
    // The shrunk history is in the failure's message too, shown whole under the test's line.
    if (failed) await testInfo.attach('shrunk history', { body: failed.counterexample!, contentType: 'text/plain' });
    // Its reproduction: the shrunk history again, judged by the named check its step failed.
    await check(
      'model',
      () => {
        if (failed) throw new Error(`${failed.failure}\n${failed.counterexample}`);
      },
      () => (failed?.reproduction ? composeHistory(requestTrace, failed.reproduction) : undefined),
    );
    if (!explored.some((exploration) => exploration.durationsExamined > 0)) {
      testInfo.annotations.push({ type: 'note', description: 'no stop of a live session reported a sessionDurationMs: the model checked answers, not clocks' });
    }
    const unprorated = explored.find((exploration) => exploration.unproratedCharge);
    if (!explored.some((exploration) => exploration.chargesExamined > 0)) {
      // Nothing to judge: the check neither passes nor fails (and a declared deviation of it stays untested).
      testInfo.annotations.push({ type: 'note', description: 'no history stopped a live session that reported a charge: the credits were not checked' });
    } else {
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
    // Short order faults hide in 3-step patterns: a search that did not reach every one says so, and under STRICT proves nothing.
    if (!systematic.everyThreeStep) {
      const seconds = Math.ceil(pacer.expectedMs(REQUESTS_FOR_EVERY_THREE_STEP_PATTERN) / SYSTEMATIC_SHARE / 1000);
      const note =
        `the systematic phase did not reach every 3-step pattern: they take ${SESSIONS_FOR_EVERY_THREE_STEP_PATTERN} sessions and about ${REQUESTS_FOR_EVERY_THREE_STEP_PATTERN} requests to stop and interact, ` +
        `SESSION_BUDGET=${needed + Math.ceil(SESSIONS_FOR_EVERY_THREE_STEP_PATTERN / SYSTEMATIC_SHARE)}, SEQUENCE_SECONDS=${seconds} and SEQUENCE_BUDGET=${Math.ceil(REQUESTS_FOR_EVERY_THREE_STEP_PATTERN / SYSTEMATIC_SHARE)} at this target's pace`;
      testInfo.annotations.push({ type: 'note', description: note });
      if (settings.strict) notVerifiable(`${note} (${systematic.covered})`);
    }
  },
);
