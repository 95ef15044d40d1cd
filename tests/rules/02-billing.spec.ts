import { RunError } from '../../src/config/errors';
import { spec } from '../../src/config/rules';
import { stopPriced } from '../../src/domain/account';
import { boundsOf, measuredInterval } from '../../src/domain/billing';
import { summary } from '../../src/domain/client';
import { judge } from '../../src/domain/named-checks';
import { test } from '../../src/playwright/fixtures';

/**
 * Four sessions held for different times. Real clients interact seconds after the scrape and
 * several times before they stop, so the shorter holds leave a gap between scrape and interact
 * (a clock started at the scrape is off by that much) and the longest ones interact again twice
 * during their hold (a clock restarted by each interact is off by two thirds of it). One is held
 * past a minute (against a remote target), where billing by the started minute shows.
 */
const holds = [
  { id: 'billing/past-a-minute', title: 'held past a minute', index: 'minute', gap: false, interacts: 3 },
  { id: 'billing/long-hold', title: 'held for the long hold', index: 2, gap: false, interacts: 3 },
  { id: 'billing/medium-hold', title: 'held for the medium hold', index: 1, gap: false, interacts: 1 },
  { id: 'billing/short-hold', title: 'held for the short hold', index: 0, gap: true, interacts: 1 },
] as const;

// Longest first: it starts at once and the run waits for nothing else.
for (const { id, title, index, gap, interacts } of holds) {
  test(
    `credits billed for a session ${title} are 2 per minute prorated by the second of its measured life`,
    spec(id),
    async ({ api, sessions, identities, settings, minuteHoldMs, check }, testInfo) => {
      const holdMs = index === 'minute' ? minuteHoldMs : settings.billingHoldsMs[index];
      if (index === 'minute') {
        testInfo.setTimeout(testInfo.timeout + holdMs);
        if (holdMs < 60_000)
          testInfo.annotations.push({
            type: 'note',
            description: `held ${holdMs} ms, not past a minute: BILLING_MINUTE_HOLD_MS=61250 holds it across the minute boundary (the default against a remote target)`,
          });
      }
      const gapMs = gap ? settings.scrapeGapMs : 0;
      const session = await test.step(gapMs ? `provision a session, ${gapMs} ms after its scrape` : 'provision a session', () => sessions.provision({ gapMs }));
      for (let call = 1; call <= interacts; call++) {
        const at = (holdMs * call) / interacts;
        await test.step(`hold until ${Math.round(at)} ms${call < interacts ? ', then interact again' : ''}`, async () => {
          await sessions.holdUntil(session, at);
          if (call < interacts) {
            const again = await sessions.interact(session);
            // Part of using the session, not the operation under test: a refusal here is an error of the run.
            if (again.status !== 200) throw new RunError(`a live session's interact must answer 200 to go on: ${summary(again)}`);
          }
        });
      }
      const stop = await test.step('the owner stops the session', () => stopPriced(api, session.jobId, identities.owner, settings));
      await check('status', judge.stopped(stop));
      const interval = measuredInterval(session, stop);
      await test
        .info()
        .attach('measured interval', { body: JSON.stringify({ loMs: interval.lo, hiMs: interval.hi, holdMs }), contentType: 'application/json' });
      await check('duration', judge.duration(stop, session.created, boundsOf(settings)));
      await check('credits', judge.credits(stop, session.created, boundsOf(settings)));
    },
  );
}
