import { test, expect, stopPath, type Exchange } from '../support/fixtures';
import { rule } from '../support/rules';
import { summary } from '../support/exchange';

/** A stop that charged: 200 with a positive creditsBilled. */
const charged = (exchange: Exchange) => exchange.status === 200 && typeof exchange.body?.creditsBilled === 'number' && exchange.body.creditsBilled > 0;

test('a second stop of a stopped session answers 404, or 200 without a new charge', rule('stop-is-final', 'inferred'), async ({ api, session, identities }) => {
  const first = await test.step('the owner stops the session', () =>
    api.send({ method: 'DELETE', path: stopPath(session.jobId), as: identities.owner }),
  );
  expect(first.status, summary(first)).toBe(200);
  const second = await test.step('the owner stops it again', () =>
    api.send({ method: 'DELETE', path: stopPath(session.jobId), as: identities.owner }),
  );
  expect([200, 404], `a stopped session answers 404 or 200: ${summary(second)}`).toContain(second.status);
  expect(charged(second), `the second stop must not charge again: ${summary(second)}`).toBe(false);
});

test('two simultaneous stops of one session charge it once', rule('stop-is-final', 'inferred'), async ({ api, session, identities }) => {
  const stops = await test.step('the owner sends two stops at once', () =>
    Promise.all([1, 2].map(() => api.send({ method: 'DELETE', path: stopPath(session.jobId), as: identities.owner }))),
  );
  const answers = stops.map(summary).join('\n');
  expect(stops.filter((stop) => stop.status === 200).length, `one stop must succeed:\n${answers}`).toBeGreaterThanOrEqual(1);
  expect(stops.every((stop) => stop.status === 200 || stop.status === 404), `each answer is 200 or 404:\n${answers}`).toBe(true);
  expect(stops.filter(charged).length, `at most one stop may charge:\n${answers}`).toBeLessThanOrEqual(1);
});
