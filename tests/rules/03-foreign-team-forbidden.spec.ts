import { test, expect, stopPath } from '../support/fixtures';
import { rule } from '../support/rules';
import { expectDurationWithin, measuredInterval, REFUSAL_GAP_MS } from '../support/billing';
import { sleep, summary } from '../support/exchange';

test("a foreign team's stop answers 403 with an error body", rule('foreign-team', 'must'), async ({ api, session, identities }) => {
  const refused = await test.step('the foreign team asks to stop the session', () =>
    api.send({ method: 'DELETE', path: stopPath(session.jobId), as: identities.foreign }),
  );
  expect(refused.status, summary(refused)).toBe(403);
  expect(refused.body).toMatchSchema('error');
});

test("a foreign team's refused stop leaves the session running: the owner's stop answers 200 and reports the whole duration", rule('foreign-team', 'must'), async ({ api, session, identities, settings }) => {
  await test.step('the foreign team asks to stop the session', () =>
    api.send({ method: 'DELETE', path: stopPath(session.jobId), as: identities.foreign }),
  );
  await test.step(`wait ${REFUSAL_GAP_MS} ms`, () => sleep(REFUSAL_GAP_MS));
  const stop = await test.step('the owner stops the session', () =>
    api.send({ method: 'DELETE', path: stopPath(session.jobId), as: identities.owner, timed: true }),
  );
  expect(stop.status, `the session must still be running: ${summary(stop)}`).toBe(200);
  expect(stop.body).toMatchSchema('stop-result');
  await test.step('sessionDurationMs covers the session from its start to the owner\'s stop', () =>
    expectDurationWithin(stop.body, measuredInterval(session, stop), settings),
  );
});
