import { test, expect } from '../../src/playwright/fixtures';
import { readOpening } from '../../src/domain/account';
import { notVerifiable } from '../../src/checks/checks';
import { summary, type Answer } from '../../src/domain/client';
import { expectRefusal, expectRevealsNothing, ownerValuesOf } from '../../src/domain/refusals';
import { describeSettlement, distinctSettlements, isNewCharge, settlementOf } from '../../src/domain/settlements';
import { spec } from '../../src/config/rules';

test('a second stop of a stopped session answers 404, or 200 without a new charge', spec('stop-is-final/second-stop'), async ({ api, session, identities, check }) => {
  const first = await test.step('the owner stops the session', () => api.stop(session.jobId, identities.owner));
  await check('first-stop', () => expect(first.status, summary(first)).toBe(200));
  const second = await test.step('the owner stops it again', () => api.stop(session.jobId, identities.owner));
  await check('second-stop', () => expect([200, 404], `a stopped session answers 404 or 200: ${summary(second)}`).toContain(second.status));
  // Repeating the first stop's settlement (the same credits, the duration absent or the same) reports it; another settlement is a second charge.
  await check('no-second-charge', () =>
    expect(isNewCharge(second, first), `the second stop must not settle the session again (the first settled ${describeSettlement(settlementOf(first) ?? { credits: 0 })}): ${summary(second)}`).toBe(false),
  );
});

test('two simultaneous stops of one session settle it once', spec('stop-is-final/simultaneous-stops'), async ({ api, session, identities, settings, check }) => {
  const stops = await test.step('the owner sends two stops at once', () =>
    Promise.all([1, 2].map(() => api.stop(session.jobId, identities.owner))),
  );
  const answers = stops.map(summary).join('\n');
  await check('one-succeeds', () => expect(stops.filter((stop) => stop.status === 200).length, `one stop must succeed:\n${answers}`).toBeGreaterThanOrEqual(1));
  await check('answers', () => expect(stops.every((stop) => stop.status === 200 || stop.status === 404), `each answer is 200 or 404:\n${answers}`).toBe(true));
  const settled = distinctSettlements(stops);
  await check('charged-once', () => expect(settled.length, `the two answers may report one settlement, never two different ones:\n${answers}`).toBeLessThanOrEqual(1));
  if (stops.filter((stop) => settlementOf(stop)).length < 2) return;
  // Both report the same settlement: one settlement reported twice, or two equal charges. Only the account can tell.
  const opening = readOpening(settings, api.target.baseURL);
  const tellsApart = 'both answers report the same settlement, so one settlement reported twice cannot be told from two equal charges by the answers';
  if (!opening || 'unavailable' in opening) notVerifiable(`${tellsApart}, and the account cannot be read (${opening && 'unavailable' in opening ? opening.unavailable : 'no opening'})`);
  test.info().annotations.push({ type: 'note', description: `${tellsApart}: the account check (stop-is-final/account) decides` });
});

test(
  "after the owner's stop, a stop by another team, without a key or with an invalid key is still refused, learns nothing, and changes nothing",
  spec('stop-is-final/final-for-everyone'),
  async ({ api, session, identities, check }) => {
    const stop = await test.step('the owner stops the session', () => api.stop(session.jobId, identities.owner));
    await check('first-stop', () => expect(stop.status, summary(stop)).toBe(200));
    const ownerValues = ownerValuesOf([session.created, stop], identities.ownerTeam, session.jobId);
    const refusals: Answer[] = [];
    for (const who of ['foreign', 'noKey', 'unknownKey'] as const) {
      refusals.push(await test.step(`${identities[who].name} asks to stop the stopped session`, () => api.stop(session.jobId, identities[who])));
    }
    await check('refused', () => refusals.forEach((answer) => expectRefusal(answer)));
    await check('reveals-nothing', () => refusals.forEach((answer) => expectRevealsNothing(answer, ownerValues)));
    const again = await test.step('the owner stops it once more', () => api.stop(session.jobId, identities.owner));
    await check('still-stopped', () => {
      expect([200, 404], `the refusals must not have brought the session back: ${summary(again)}`).toContain(again.status);
      expect(isNewCharge(again, stop), `a stopped session is never settled again: ${summary(again)}`).toBe(false);
    });
  },
);

test(
  'an interact on a stopped session opens a new session it answers 200 for, or is refused and opens nothing',
  spec('stop-is-final/interact-after-stop'),
  async ({ api, session, sessions, identities, check }) => {
    const stop = await test.step('the owner stops the session', () => api.stop(session.jobId, identities.owner));
    await check('first-stop', () => expect(stop.status, summary(stop)).toBe(200));
    const again = await test.step('the owner interacts with the stopped session', () => sessions.interact(session));
    await check('interact', () => expect(again.status === 200 || (again.status >= 400 && again.status < 500), `a new session (200) or a refusal (4xx; the hosted service answers 410): ${summary(again)}`).toBe(true));
    const last = await test.step('the owner stops it again', () => api.stop(session.jobId, identities.owner));
    await check('nothing-unannounced', () => {
      if (again.status === 200) return expect(last.status, `the interact answered 200, so a new session runs and this stop ends it: ${summary(last)}`).toBe(200);
      expect([200, 404], `the refused interact must have opened nothing: ${summary(last)}`).toContain(last.status);
      expect(isNewCharge(last, stop), `the refused interact (${again.status}) opened a session nobody asked for, and this stop settled it: ${summary(last)}`).toBe(false);
    });
  },
);
