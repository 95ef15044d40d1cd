/**
 * The suite against every variant of the reference: every faulty variant must be caught by the
 * rule named for it (a fault only an order of operations shows, by the sequences rule alone),
 * every correct variant must pass, no run may leave a session running or a key in a report, and
 * each failed test's reproduction must show its variant's fault again and pass on the reference.
 * MATRIX=full runs every rule against the faulty variants too (slower; shows every rule a fault trips).
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type MatrixRun, renderMatrix, runMatrix } from './matrix';
import { productionVariants } from './production';
import { filesContaining } from './secrets';
import { correctVariants, faultyVariants, orderFaults, variants } from './variants';

function expectNoLeaks(run: MatrixRun) {
  const leaks = run.results.filter((r) => !r.variant.leaksSessions && r.activeSessions > 0).map((r) => `${r.variant.name}: ${r.activeSessions}`);
  assert.deepEqual(leaks, [], 'variants left with running sessions');
  assert.deepEqual([...run.outputs.flatMap((output) => filesContaining(output)), ...filesContaining(run.log)], [], 'keys in what the run wrote');
}

test('the variant catalogue has at least 50 faulty, 20 correct and 3 order-only variants with unique names', () => {
  assert.ok(faultyVariants.length >= 50, `${faultyVariants.length} faulty`);
  assert.ok(correctVariants.length >= 20, `${correctVariants.length} correct`);
  assert.ok(orderFaults.length >= 3, `${orderFaults.length} order-only`);
  const all = [...productionVariants, ...variants];
  assert.equal(new Set(all.map((v) => v.name)).size, all.length);
});

test('the suite catches every faulty variant by its rule, passes every correct one (its sequences rule with one of three seeds, MATRIX=full with each), and leaks no session', async () => {
  // The longest first: the hosted service's (its clock counts whole seconds: refusals hold for seconds), a session held past a minute or a slow run, then those run with every rule.
  // Playwright runs every group of one set of worker options (a known-deviations file) before the next set's, in the order the sets first appear.
  const all = [...productionVariants, ...variants];
  const rank = (v: (typeof all)[number]) => (v.knownDeviations ? 0 : v.holdsPastAMinute || v.slow ? 1 : !v.breaks || v.runsEveryRule ? 2 : 3);
  const run = await runMatrix(
    [...all].sort((a, b) => rank(a) - rank(b)),
    { full: process.env.MATRIX === 'full', severalSeeds: process.env.MATRIX === 'full', reproductions: process.env.MATRIX === 'full' ? 'all' : 'quickest' },
  );
  const rerun = run.results.filter((r) => r.rerun).map((r) => r.variant.name);
  console.log(
    `${renderMatrix(run)}\n${run.results.length} variants in ${(run.durationMs / 1000).toFixed(1)} s${rerun.length ? `; run again alone, a burst too slow or a test of their rule not verifiable the first time: ${rerun.join(', ')}` : ''}`,
  );
  const wrong = run.results
    .filter((r) => r.verdict !== 'ok')
    .map(
      (r) =>
        `${r.variant.name}: ${r.verdict}\n    ${[
          r.problem,
          ...r.tests
            .filter((t) => t.outcome !== 'pass')
            .slice(0, 3)
            .map((t) => `${t.id} ${t.outcome}: ${t.note}`),
        ]
          .filter(Boolean)
          .join('\n    ')}`,
    );
  assert.deepEqual(wrong, [], 'variants with the wrong outcome');
  // A minimal success body with an account: its billing and survival proofs priced through the account, the run-wide account check by its sessions' lives.
  const minimal = run.results.find((r) => r.variant.name === 'minimal-success-body')!.tests.filter((t) => t.outcome === 'not verifiable');
  assert.ok(minimal.length <= 2, `minimal-success-body: ${minimal.length} tests not verifiable: ${minimal.map((t) => `${t.id}: ${t.note}`).join('; ')}`);
  expectNoLeaks(run);
  // Every failed test's reproduction shows its variant's fault again and is quiet on the reference (the key scan above covers them).
  const reproduced = run.results.flatMap((r) => (r.reproduced ?? []).map((x) => ({ ...x, variant: r.variant.name })));
  // A race the replay could not send as close as the run did says so (exit 2), on either side: no verdict, never a wrong one.
  const RACE_UNTRIED = /COULD NOT TELL: the requests did not come as close together as in the run/;
  const faithful = (x: (typeof reproduced)[number]) => {
    const [onVariant, onReference] = x.output.split('\nagainst the reference:\n');
    return (
      (x.onVariant === 1 || (x.onVariant === 2 && RACE_UNTRIED.test(onVariant))) &&
      (x.onReference === 0 || (x.onReference === 2 && RACE_UNTRIED.test(onReference ?? '')))
    );
  };
  const unfaithful = reproduced
    .filter((x) => !faithful(x))
    .map((x) => `${x.variant} ${x.test}: ${x.onVariant} on the variant, ${x.onReference} on the reference\n${x.output.slice(-1500)}`);
  const decided = reproduced.filter((x) => x.onVariant === 1 && x.onReference === 0);
  if (decided.length < reproduced.length)
    console.log(`${reproduced.length - decided.length} reproductions could not send their requests as close together as the run did`);
  console.log(
    `${reproduced.length} reproductions replayed, of ${new Set(reproduced.map((x) => x.variant)).size} variants, in ${((run.replayMs ?? 0) / 1000).toFixed(1)} s`,
  );
  assert.deepEqual(unfaithful, [], 'reproductions that do not show their fault again, or show one on the reference');
  assert.deepEqual(filesContaining(reproduced.map((x) => x.output).join('\n')), [], 'keys in what the reproductions printed');
  // By default each variant's quickest, at most two per test, not those of timing (MATRIX=full: every one).
  const tests = new Set(decided.map((x) => x.test)).size;
  assert.ok(tests >= 12, `reproductions of only ${tests} tests were replayed to a verdict on both sides`);
  // One caught order fault, shrunk: its counterexample is short enough to read.
  const shrunk = run.results.find((r) => r.variant.name === 'revive-with-old-clock')!.tests.find((t) => t.id === 'sequences/random-histories')!;
  const steps = Number(/A history of (\d+) steps breaks the model/.exec(shrunk.message ?? '')?.[1]);
  console.log(`revive-with-old-clock, as the sequences rule reports it:\n${shrunk.message}`);
  assert.ok(steps >= 1 && steps <= 6, `the shrunk history has ${steps} steps`);
});
