import { test, expect } from '../support/fixtures';
import { interactPath, summary, type Answer } from '../support/client';
import { expectRefusal, expectRevealsNothing, ownerValuesOf } from '../support/refusals';
import { charges } from '../support/billing';
import { spec } from '../support/rules';


test('a second stop of a stopped session answers 404, or 200 without a new charge', spec('stop-is-final/second-stop'), async ({ api, session, identities, check }) => {
  const first = await test.step('the owner stops the session', () => api.send({ method: 'DELETE', path: interactPath(session.jobId), as: identities.owner }));
  await check('first-stop', () => expect(first.status, summary(first)).toBe(200));
  const second = await test.step('the owner stops it again', () => api.send({ method: 'DELETE', path: interactPath(session.jobId), as: identities.owner }));
  await check('second-stop', () => expect([200, 404], `a stopped session answers 404 or 200: ${summary(second)}`).toContain(second.status));
  await check('no-second-charge', () => expect(charges(second, first), `the second stop must not charge again: ${summary(second)}`).toBe(false));
});

test('two simultaneous stops of one session charge it once', spec('stop-is-final/simultaneous-stops'), async ({ api, session, identities, check }) => {
  const stops = await test.step('the owner sends two stops at once', () =>
    Promise.all([1, 2].map(() => api.send({ method: 'DELETE', path: interactPath(session.jobId), as: identities.owner }))),
  );
  const answers = stops.map(summary).join('\n');
  await check('one-succeeds', () => expect(stops.filter((stop) => stop.status === 200).length, `one stop must succeed:\n${answers}`).toBeGreaterThanOrEqual(1));
  await check('answers', () => expect(stops.every((stop) => stop.status === 200 || stop.status === 404), `each answer is 200 or 404:\n${answers}`).toBe(true));
  // Two answers that both report a charge count twice, even alike: a replay cannot be told apart from a second charge.
  await check('charged-once', () => expect(stops.filter((stop) => charges(stop)).length, `at most one stop may charge:\n${answers}`).toBeLessThanOrEqual(1));
});

test(
  "after the owner's stop, a stop by another team, without a key or with an invalid key is still refused, learns nothing, and changes nothing",
  spec('stop-is-final/final-for-everyone'),
  async ({ api, session, identities, check }) => {
    const stop = await test.step('the owner stops the session', () => api.send({ method: 'DELETE', path: interactPath(session.jobId), as: identities.owner }));
    await check('first-stop', () => expect(stop.status, summary(stop)).toBe(200));
    const ownerValues = ownerValuesOf([session.created, stop], identities.ownerTeam, session.jobId);
    const refusals: Answer[] = [];
    for (const who of ['foreign', 'noKey', 'unknownKey'] as const) {
      refusals.push(await test.step(`${identities[who].name} asks to stop the stopped session`, () => api.send({ method: 'DELETE', path: interactPath(session.jobId), as: identities[who] })));
    }
    await check('refused', () => refusals.forEach((answer) => expectRefusal(answer)));
    await check('reveals-nothing', () => refusals.forEach((answer) => expectRevealsNothing(answer, ownerValues)));
    const again = await test.step('the owner stops it once more', () => api.send({ method: 'DELETE', path: interactPath(session.jobId), as: identities.owner }));
    await check('still-stopped', () => {
      expect([200, 404], `the refusals must not have brought the session back: ${summary(again)}`).toContain(again.status);
      expect(charges(again, stop), `a stopped session is never charged again: ${summary(again)}`).toBe(false);
    });
  },
);
