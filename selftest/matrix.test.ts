/**
 * The suite against every variant of the reference: every faulty variant must be caught by the
 * rule named for it, every correct variant must pass, and no run may leave a session running.
 * MATRIX=full runs every rule against the faulty variants too (slower; shows every rule a fault trips).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { correctVariants, faultyVariants, variants } from './variants';
import { renderMatrix, runMatrix } from './matrix';
import { filesContaining } from './secrets';

test('the variant catalogue has at least 30 faulty and 10 correct variants with unique names', () => {
  assert.ok(faultyVariants.length >= 30, `${faultyVariants.length} faulty`);
  assert.ok(correctVariants.length >= 10, `${correctVariants.length} correct`);
  assert.equal(new Set(variants.map((v) => v.name)).size, variants.length);
});

test('the suite catches every faulty variant by its rule, passes every correct one, and leaks no session', async () => {
  const run = await runMatrix(variants, { full: process.env.MATRIX === 'full' });
  console.log(`${renderMatrix(run)}\n${run.results.length} variants in ${(run.durationMs / 1000).toFixed(1)} s`);
  const wrong = run.results
    .filter((r) => r.verdict !== 'ok')
    .map((r) => `${r.variant.name}: ${r.verdict}\n    ${r.tests.filter((t) => t.outcome !== 'pass').slice(0, 3).map((t) => `${t.id} ${t.outcome}: ${t.note}`).join('\n    ')}`);
  assert.deepEqual(wrong, [], 'variants with the wrong outcome');
  const leaks = run.results.filter((r) => !r.variant.leaksSessions && r.activeSessions > 0).map((r) => `${r.variant.name}: ${r.activeSessions}`);
  assert.deepEqual(leaks, [], 'variants left with running sessions');
  const leakedKeys = filesContaining(run.output).concat(filesContaining(run.log));
  assert.deepEqual(leakedKeys, [], 'keys in what the run wrote');
});
