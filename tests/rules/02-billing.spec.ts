import { setTimeout as sleep } from 'node:timers/promises';
import { test, expect } from '../support/fixtures';
import { expectCreditsFor, expectDurationWithin, measuredInterval } from '../support/billing';
import { notVerifiable } from '../support/checks';
import { RunError } from '../support/errors';
import { interactPath, summary } from '../support/client';
import { spec } from '../support/rules';

/**
 * Three sessions held for different times. Real clients interact seconds after the scrape and
 * several times before they stop, so the shorter holds leave a gap between scrape and interact
 * (a clock started at the scrape is off by that much) and the longest one interacts again twice
 * during its hold (a clock restarted by each interact is off by two thirds of it).
 */
const holds = [
  { name: 'long', index: 2, gap: false, interacts: 3 },
  { name: 'medium', index: 1, gap: false, interacts: 1 },
  { name: 'short', index: 0, gap: true, interacts: 1 },
] as const;

// Longest first: it starts at once and the run waits for nothing else.
for (const { name, index, gap, interacts } of holds) {
  test(
    `credits billed for a session held for the ${name} hold are 2 per minute prorated by the second of its measured life`,
    spec(`billing/${name}-hold`),
    async ({ api, sessions, identities, settings, check }) => {
      const holdMs = settings.billingHoldsMs[index];
      const gapMs = gap ? settings.scrapeGapMs : 0;
      const session = await test.step(gapMs ? `provision a session, ${gapMs} ms after its scrape` : 'provision a session', () => sessions.provision({ gapMs }));
      for (let call = 1; call <= interacts; call++) {
        const at = (holdMs * call) / interacts;
        await test.step(`hold until ${Math.round(at)} ms${call < interacts ? ', then interact again' : ''}`, async () => {
          await sleep(at - (performance.now() - session.created.receivedAt), undefined, { signal: api.signal });
          if (call < interacts) {
            const again = await sessions.interact(session);
            // Part of using the session, not the operation under test: a refusal here is an error of the run.
            if (again.status !== 200) throw new RunError(`a live session's interact must answer 200 to go on: ${summary(again)}`);
          }
        });
      }
      const stop = await test.step('the owner stops the session', () => api.send({ method: 'DELETE', path: interactPath(session.jobId), as: identities.owner }));
      await check('status', () => {
        expect(stop.status, summary(stop)).toBe(200);
        expect(stop.body).toMatchSchema('stop-result');
      });
      const interval = measuredInterval(session, stop);
      await test.info().attach('measured interval', { body: JSON.stringify({ loMs: interval.lo, hiMs: interval.hi, holdMs }), contentType: 'application/json' });
      await check('duration', () => expectDurationWithin(stop.body, interval, settings));
      if (stop.body?.creditsBilled === undefined) notVerifiable('the stop result has no creditsBilled: billing cannot be checked against the measured duration');
      await check('credits', () => expectCreditsFor(stop.body, interval, settings));
    },
  );
}
