/**
 * Declared behaviours, checked. Credits at any session length, without holding a session for minutes: the declared
 * billing rule of the hosted service against the specification's proration, for durations from a
 * second to an hour, with charges the rule gives, a credit more, and the prorated charge.
 */

import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { readKnownDeviations } from '../src/config/deviations';
import { DeclaredBehaviour } from '../src/config/errors';
import { chargeUnder, expectCreditsFor } from '../src/domain/billing';
import { ROOT } from './matrix';

const production = readKnownDeviations(path.join(ROOT, 'fixtures', 'known-deviations', 'firecrawl-production.json')).billing!;
const tolerances = { durationToleranceMs: 20, creditTolerance: 0.005 };
const declared = { ...tolerances, declaredBilling: production };
const interval = (ms: number) => ({ lo: ms - 2, hi: ms + 2 });
const outcome = (credits: unknown, ms: number, settings: Parameters<typeof expectCreditsFor>[2]) => {
  try {
    expectCreditsFor({ success: true, sessionDurationMs: ms, creditsBilled: credits }, interval(ms), settings);
    return 'pass';
  } catch (error) {
    return error instanceof DeclaredBehaviour ? 'declared' : `fail: ${(error as Error).message.split('\n')[0]}`;
  }
};

test("the hosted service's rule as declared: max(2, ceil(hours x 120)) whole credits", () => {
  assert.deepEqual(
    [1_250, 30_000, 60_000, 60_300, 61_000, 119_900, 120_500, 3_600_000].map((ms) => chargeUnder(production.rule, ms)),
    [2, 2, 2, 3, 3, 4, 5, 120],
  );
  assert.equal(chargeUnder({ creditsPerMinute: 2, durationUnitMs: 1000, rounding: 'up' }, 61_001), (62 * 2) / 60, 'per started second');
  assert.equal(chargeUnder({ creditsPerMinute: 2, rounding: 'down', creditStep: 0.5 }, 50_000), 1.5, 'down to half credits');
});

test('with the rule declared, a charge it gives is the declared behaviour at any length; a credit more, or the prorated charge, fails and says why', () => {
  for (const ms of [1_250, 3_750, 60_300, 60_600, 121_000, 1_800_500]) {
    const charge = Math.max(2, Math.ceil((ms / 3_600_000) * 120));
    assert.equal(outcome(charge, ms, declared), 'declared', `${ms} ms billed ${charge}`);
    assert.match(
      outcome(charge + 1, ms, declared),
      /^fail: creditsBilled \d+ must be 2 credits\/minute prorated by the second .*; under the declared billing rule \(2 credits\/minute, the charge rounded up to a multiple of 1, at least 2\) it must be between/,
      `${ms} ms billed ${charge + 1}`,
    );
    const prorated = Math.round(((Math.ceil(ms / 1000) * 2) / 60) * 1e6) / 1e6;
    if (prorated !== charge)
      assert.match(outcome(prorated, ms, declared), /the target bills as the specification says, so remove the billing declaration/, `${ms} ms prorated`);
  }
  // Where both agree (a whole number of minutes, at least one), the charge passes.
  assert.equal(outcome(4, 120_000 - 20, { ...declared, durationToleranceMs: 0 }), 'pass');
});

test('without a declaration, a prorated charge passes and a whole-credit one fails at every length', () => {
  for (const ms of [1_250, 60_300, 1_800_500]) {
    assert.equal(outcome((Math.ceil(ms / 1000) * 2) / 60, ms, tolerances), 'pass');
    assert.match(
      outcome(Math.max(2, Math.ceil((ms / 3_600_000) * 120)), ms, tolerances),
      /^fail: creditsBilled \d+ must be 2 credits\/minute prorated by the second/,
    );
  }
});

test('a declared ignored scheme word: accepted as the owner is the declared behaviour; refused, the declaration is stale; undeclared, it must be refused', async () => {
  const { expectSchemeRefusal } = await import('../src/domain/refusal-checks');
  const { authentication } = readKnownDeviations(path.join(ROOT, 'fixtures', 'known-deviations', 'firecrawl-production.json'));
  const answer = (status: number, body: object) => ({
    method: 'DELETE',
    path: '/v2/scrape/x/interact',
    status,
    headers: {},
    text: JSON.stringify(body),
    body,
    sentAt: 0,
    receivedAt: 1,
    attempts: 1,
  });
  const outcomeOf = (run: () => void) => {
    try {
      run();
      return 'pass';
    } catch (error) {
      return error instanceof DeclaredBehaviour ? 'declared' : `fail: ${(error as Error).message.split('\n')[0]}`;
    }
  };
  const accepted = answer(200, { success: true, sessionDurationMs: 300, creditsBilled: 2 });
  const refused = answer(401, { success: false, error: 'Unauthorized: Invalid token' });
  assert.equal(
    outcomeOf(() => expectSchemeRefusal(accepted, { declaredSchemeWord: authentication })),
    'declared',
  );
  assert.match(
    outcomeOf(() => expectSchemeRefusal(refused, { declaredSchemeWord: authentication })),
    /^fail: declared: the key is taken after any scheme word/,
  );
  assert.match(
    outcomeOf(() => expectSchemeRefusal(answer(500, { success: false, error: 'x' }), { declaredSchemeWord: authentication })),
    /^fail/,
  );
  assert.equal(
    outcomeOf(() => expectSchemeRefusal(refused, {})),
    'pass',
  );
  assert.match(
    outcomeOf(() => expectSchemeRefusal(accepted, {})),
    /^fail: a refusal is a 4xx/,
  );
});
