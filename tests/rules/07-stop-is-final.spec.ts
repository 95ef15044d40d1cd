import { notVerifiable } from '../../src/checks/checks';
import { spec } from '../../src/config/rules';
import { readOpening } from '../../src/domain/account';
import { afterStop, BILLED_HOLD_MS } from '../../src/domain/after-stop';
import { judge } from '../../src/domain/named-checks';
import { settlementOf } from '../../src/domain/settlements';
import { test } from '../../src/playwright/fixtures';

// Three tests' requests after a stop, on one session they share (after-stop.ts).
const afterStops = [
  { id: 'stop-is-final/second-stop', title: 'a second stop of a stopped session answers 404, or 200 without a new charge' },
  {
    id: 'stop-is-final/final-for-everyone',
    title: "after the owner's stop, a stop by another team, without a key or with an invalid key is still refused, learns nothing, and changes nothing",
  },
  {
    id: 'stop-is-final/interact-after-stop',
    title: 'an interact on a stopped session opens a new session it answers 200 for, or is refused and opens nothing',
  },
] as const;
for (const { id, title } of afterStops)
  test(title, spec(id), async ({ api, sessions, identities, settings, check }) => afterStop({ api, sessions, identities, settings, check }, id));

test(
  'two simultaneous stops of one session settle it once',
  spec('stop-is-final/simultaneous-stops'),
  async ({ api, session, sessions, identities, coordination, check }) => {
    await test.step(`hold the session ${BILLED_HOLD_MS} ms`, () => sessions.holdUntil(session, BILLED_HOLD_MS));
    const stops = await test.step('the owner sends two stops at once', () => Promise.all([1, 2].map(() => api.stop(session.jobId, identities.owner))));
    await check('one-succeeds', judge.oneSucceeds(stops));
    await check('answers', judge.stopAnswers(stops));
    await check('charged-once', judge.settledOnce(stops));
    if (stops.filter((stop) => settlementOf(stop)).length < 2) return;
    // Both report the same settlement: one settlement reported twice, or two equal charges. Only the account can tell.
    const opening = readOpening(coordination);
    const tellsApart = 'both answers report the same settlement, so one settlement reported twice cannot be told from two equal charges by the answers';
    if (!opening || 'unavailable' in opening)
      notVerifiable(`${tellsApart}, and the account cannot be read (${opening && 'unavailable' in opening ? opening.unavailable : 'no opening'})`);
    test.info().annotations.push({ type: 'note', description: `${tellsApart}: the account check (stop-is-final/account) decides` });
  },
);
