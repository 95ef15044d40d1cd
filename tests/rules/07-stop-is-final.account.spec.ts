/**
 * Rule 7 as the account sees it: after every other test of the run (a project teardown), the owner
 * team's credit counter must have been charged exactly the settlements and scrapes the run saw.
 */
import { test, expect } from '../support/fixtures';
import { judgeAccount, readOpening, settleAccount } from '../support/account';
import { notVerifiable } from '../support/checks';
import { spec } from '../support/rules';

test(
  "the owner team's account is charged each session's settlement once, and nothing the run did not see",
  spec('stop-is-final/account'),
  async ({ api, identities, settings, ledger, check }, testInfo) => {
    const started = performance.now();
    // Each shard of a run against the embedded reference starts a reference of its own; the shards of a run against a remote target share its account.
    if (testInfo.config.shard && !api.target.embedded) notVerifiable('this run is one shard of several, which spend from the same account: the account can only be held to the whole run');
    const opening = readOpening(settings, api.target.baseURL);
    if (!opening) notVerifiable("the run scraped nothing as the owner team, so the account was never opened");
    if ('unavailable' in opening) notVerifiable(`the owner team's account could not be used: ${opening.unavailable}`);
    const spending = ledger.spending(api.target.baseURL, identities.owner.name);
    const expected = spending.settlements.reduce((sum, session) => sum + session.settled.reduce((total, one) => total + one.credits, 0), 0) + spending.scrapes.credits;
    const tolerance = settings.creditTolerance * (spending.settlements.length + spending.scrapes.count) + 1e-6;
    // As long as ACCOUNT_SETTLE_MS allows, and the test's own timeout: a reading is an exchange, and the test must end with a verdict.
    const room = testInfo.timeout ? testInfo.timeout - (performance.now() - started) - 3 * settings.requestTimeoutMs : Infinity;
    const settleMs = Math.max(0, Math.min(settings.accountSettleMs, room));
    const closing = await test.step(`read the account until the run's charges have landed (at most ${Math.round(settleMs)} ms)`, () =>
      settleAccount(api, identities.owner, opening.remaining - expected, tolerance, { ...settings, accountSettleMs: settleMs }),
    );
    await testInfo.attach('account', { body: JSON.stringify({ opening: opening.remaining, readings: closing.readings, ...spending }, null, 2), contentType: 'application/json' });
    const verdict = judgeAccount(opening.remaining, { remaining: closing.readings.at(-1)!.remaining, still: closing.still }, spending, settings.creditTolerance, settings.accountSettleMs);
    if (verdict.outcome === 'not verifiable') notVerifiable(verdict.message);
    testInfo.annotations.push({ type: 'note', description: verdict.message });
    await check('charged-as-settled', () => expect(verdict.outcome, verdict.message).toBe('pass'));
  },
);
