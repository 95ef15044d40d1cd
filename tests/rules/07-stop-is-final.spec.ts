import { setTimeout as sleep } from 'node:timers/promises';
import { notVerifiable } from '../../src/checks/checks';
import { spec } from '../../src/config/rules';
import { readOpening } from '../../src/domain/account';
import type { Answer } from '../../src/domain/client';
import { judge } from '../../src/domain/named-checks';
import { holdAroundMs } from '../../src/domain/refusals';
import { settlementOf } from '../../src/domain/settlements';
import { test } from '../../src/playwright/fixtures';

/** Long enough to be charged by the second: a stop that charges again then shows in the account (stop-is-final/account). */
const BILLED_HOLD_MS = 1_500;

test(
  'a second stop of a stopped session answers 404, or 200 without a new charge',
  spec('stop-is-final/second-stop'),
  async ({ api, session, sessions, identities, check }) => {
    await test.step(`hold the session ${BILLED_HOLD_MS} ms`, () => sessions.holdUntil(session, BILLED_HOLD_MS));
    const first = await test.step('the owner stops the session', () => api.stop(session.jobId, identities.owner));
    await check('first-stop', judge.status(first, 200));
    const second = await test.step('the owner stops it again', () => api.stop(session.jobId, identities.owner));
    await check('second-stop', judge.status(second, [200, 404], 'a stopped session answers 404 or 200'));
    // Repeating the first stop's settlement (the same credits, the duration absent or the same) reports it; another settlement is a second charge.
    await check('no-second-charge', judge.noSecondCharge(second, first));
  },
);

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

test(
  "after the owner's stop, a stop by another team, without a key or with an invalid key is still refused, learns nothing, and changes nothing",
  spec('stop-is-final/final-for-everyone'),
  async ({ api, session, identities, check }) => {
    const stop = await test.step('the owner stops the session', () => api.stop(session.jobId, identities.owner));
    await check('first-stop', judge.status(stop, 200));
    const refusals: Answer[] = [];
    for (const who of ['foreign', 'noKey', 'unknownKey'] as const) {
      refusals.push(await test.step(`${identities[who].name} asks to stop the stopped session`, () => api.stop(session.jobId, identities[who])));
    }
    await check('refused', judge.refused(refusals));
    await check('reveals-nothing', judge.revealsNothing(refusals, [session.created, stop], identities.ownerTeam, session.jobId));
    const again = await test.step('the owner stops it once more', () => api.stop(session.jobId, identities.owner));
    await check('still-stopped', judge.stillStopped(again, stop));
  },
);

test(
  'an interact on a stopped session opens a new session it answers 200 for, or is refused and opens nothing',
  spec('stop-is-final/interact-after-stop'),
  async ({ api, session, sessions, identities, settings, check }) => {
    const stop = await test.step('the owner stops the session', () => api.stop(session.jobId, identities.owner));
    await check('first-stop', judge.status(stop, 200));
    const again = await test.step('the owner interacts with the stopped session', () => sessions.interact(session));
    await check('interact', judge.interactAfterStop(again));
    // A refusal: what it may have opened is held longer than the first session lasted (a second longer where the stop gave no duration and credits count by the second), so that its settlement differs from a report of the first.
    const holdMs =
      stop.receivedAt - session.created.sentAt + holdAroundMs(api, settings, session.created) + (stop.body?.sessionDurationMs === undefined ? 1_000 : 0);
    if (again.status !== 200)
      await test.step(`hold what the interact may have opened ${holdMs} ms`, () =>
        sleep(Math.max(0, holdMs - (performance.now() - again.receivedAt)), undefined, { signal: api.signal }));
    const last = await test.step('the owner stops it again', () => api.stop(session.jobId, identities.owner));
    await check('nothing-unannounced', judge.nothingUnannounced(again, last, stop));
  },
);
