import { test, expect, stopPath } from '../support/fixtures';
import { rule } from '../support/rules';
import { readSettings } from '../support/config';
import { expectCreditsFor, expectDurationWithin, measuredInterval } from '../support/billing';
import { sleep, summary } from '../support/exchange';

const holds = readSettings().billingHoldsMs;

// Longest first: it starts at once and the run waits for nothing else.
for (const [index, name] of [[2, 'long'], [1, 'medium'], [0, 'short']] as const) {
  test(`credits billed for a session held for the ${name} hold are 2 per minute prorated by the second of the measured duration`, rule('billing', 'must'), async ({ api, session, identities, settings }, testInfo) => {
    const holdMs = holds[index];
    await test.step(`hold the session for ${holdMs} ms`, () => sleep(holdMs - (performance.now() - session.created.receivedAt)));
    const stop = await test.step('the owner stops the session', () =>
      api.send({ method: 'DELETE', path: stopPath(session.jobId), as: identities.owner, timed: true }),
    );
    expect(stop.status, summary(stop)).toBe(200);
    expect(stop.body).toMatchSchema('stop-result');
    const interval = measuredInterval(session, stop);
    const measured = `${interval.lo.toFixed(1)}..${interval.hi.toFixed(1)} ms`;
    await test.step(`sessionDurationMs lies in the measured ${measured}`, () => expectDurationWithin(stop.body, interval, settings));
    const { notVerifiable } = await test.step(`creditsBilled is prorated for the duration`, () =>
      expectCreditsFor(stop.body, interval, settings),
    );
    if (notVerifiable) {
      testInfo.annotations.push({ type: 'not-verifiable', description: notVerifiable });
      test.skip(true, `Not verifiable: ${notVerifiable}`);
    }
  });
}
