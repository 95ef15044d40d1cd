/**
 * Rule 2's sessions, held for different times. Real clients interact seconds after the scrape and
 * several times before they stop, so the short hold leaves a gap between scrape and interact (a
 * clock started at the scrape is off by that much) and the two longest interact again twice during
 * their hold (a clock restarted by each interact is off by two thirds of it). One is held past a minute
 * (against a remote target), where billing by the started minute shows. The short hold's stop is
 * also rule 1's (shared-run.ts).
 */
import { attach, extendTimeout, note, step } from '../checks/recorder';
import { RunError } from '../config/errors';
import type { TestId } from '../config/rules';
import { stopPriced } from './account';
import { boundsOf, measuredInterval } from './billing';
import { summary } from './client';
import { judge } from './named-checks';
import { judgedShared, type Parts, type TestContext } from './shared-run';

export const HOLDS = [
  { id: 'billing/past-a-minute', title: 'held past a minute', index: 'minute', gap: false, interacts: 3 },
  { id: 'billing/long-hold', title: 'held for the long hold', index: 2, gap: false, interacts: 3 },
  { id: 'billing/medium-hold', title: 'held for the medium hold', index: 1, gap: false, interacts: 1 },
  { id: 'billing/short-hold', title: 'held for the short hold', index: 0, gap: true, interacts: 1 },
] as const;

type Hold = (typeof HOLDS)[number];

type HoldContext = TestContext & { minuteHoldMs: number };

/** Test `id` (a hold's, or rule 1's on the short hold's stop), judged on its hold's session. */
export function heldAndStopped(context: HoldContext, id: TestId): Promise<void> {
  const hold = HOLDS.find((one) => one.id === (id === 'owner-stop/answers-200' ? 'billing/short-hold' : id))!;
  const tests: TestId[] = hold.id === 'billing/short-hold' ? [hold.id, 'owner-stop/answers-200'] : [hold.id];
  // Rule 1 adds no request to the hold's: a failure there is the hold's own, and stands.
  return judgedShared(context, hold.id.replace('/', '-'), tests, (chosen) => run(context, hold, chosen), id, false);
}

async function run({ api, sessions, identities, settings, minuteHoldMs }: HoldContext, hold: Hold, tests: TestId[]): Promise<Parts> {
  const billed = tests.includes(hold.id);
  const holdMs = !billed ? 0 : hold.index === 'minute' ? minuteHoldMs : settings.billingHoldsMs[hold.index];
  if (hold.index === 'minute' && billed) {
    extendTimeout(holdMs);
    if (holdMs < 60_000)
      note(`held ${holdMs} ms, not past a minute: BILLING_MINUTE_HOLD_MS=61250 holds it across the minute boundary (the default against a remote target)`);
  }
  const gapMs = hold.gap ? settings.scrapeGapMs : 0;
  const session = await step(gapMs ? `provision a session, ${gapMs} ms after its scrape` : 'provision a session', () => sessions.provision({ gapMs }));
  for (let call = 1; call <= hold.interacts; call++) {
    const at = (holdMs * call) / hold.interacts;
    await step(`hold until ${Math.round(at)} ms${call < hold.interacts ? ', then interact again' : ''}`, async () => {
      await sessions.holdUntil(session, at);
      if (call === hold.interacts) return;
      const again = await sessions.interact(session);
      // Part of using the session, not the operation under test: a refusal here is an error of the run.
      if (again.status !== 200) throw new RunError(`a live session's interact must answer 200 to go on: ${summary(again)}`);
    });
  }
  const stop = await step('the owner stops the session', () => stopPriced(api, session.jobId, identities.owner, settings));
  const interval = measuredInterval(session, stop);
  await attach('measured interval', JSON.stringify({ loMs: interval.lo, hiMs: interval.hi, holdMs }));
  return {
    [hold.id]: [
      ['status', judge.stopped(stop)],
      ['duration', judge.duration(stop, session.created, boundsOf(settings))],
      ['credits', judge.credits(stop, session.created, boundsOf(settings))],
    ],
    'owner-stop/answers-200': [
      ['status', judge.status(stop, 200)],
      ['content-type', judge.contentType(stop)],
      ['schema', judge.schema(stop, 'stop-result', true)],
    ],
  };
}
