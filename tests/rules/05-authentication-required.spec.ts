import { test, expect, stopPath } from '../support/fixtures';
import { rule, type Level } from '../support/rules';
import { expectDurationWithin, measuredInterval, REFUSAL_GAP_MS } from '../support/billing';
import { sleep, summary } from '../support/exchange';

const refusals = [
  { who: 'noKey', title: 'a stop without an Authorization header', level: 'must' },
  { who: 'emptyToken', title: 'a stop with "Bearer" and no token', level: 'must' },
  { who: 'garbage', title: 'a stop with a garbage Authorization value', level: 'must' },
  { who: 'unknownKey', title: 'a stop with an unknown, well-formed key', level: 'must' },
  { who: 'basicScheme', title: "a stop with the owner's key under the Basic scheme", level: 'should' },
  { who: 'tokenScheme', title: "a stop with the owner's key under the Token scheme", level: 'should' },
] as const satisfies readonly { who: string; title: string; level: Level }[];

for (const { who, title, level } of refusals) {
  test(`${title} answers 4xx and the session survives`, rule('authentication', level), async ({ api, session, identities, settings }) => {
    const refused = await test.step(`${identities[who].name} asks to stop the owner's session`, () =>
      api.send({ method: 'DELETE', path: stopPath(session.jobId), as: identities[who] }),
    );
    expect(refused.status, `a refusal is a 4xx: ${summary(refused)}`).toBeGreaterThanOrEqual(400);
    expect(refused.status, `a refusal is a 4xx: ${summary(refused)}`).toBeLessThan(500);
    await test.step(`wait ${REFUSAL_GAP_MS} ms`, () => sleep(REFUSAL_GAP_MS));
    const stop = await test.step('the owner stops the session', () =>
      api.send({ method: 'DELETE', path: stopPath(session.jobId), as: identities.owner, timed: true }),
    );
    expect(stop.status, `the session must still be running: ${summary(stop)}`).toBe(200);
    await test.step('sessionDurationMs covers the whole session', () =>
      expectDurationWithin(stop.body, measuredInterval(session, stop), settings),
    );
  });
}

test("a stop with the owner's key under a lower-case bearer scheme is accepted with 200", rule('authentication', 'should'), async ({ api, session, identities }) => {
  const stop = await test.step('the owner stops the session with "bearer <key>"', () =>
    api.send({ method: 'DELETE', path: stopPath(session.jobId), as: identities.lowerCaseBearer }),
  );
  expect(stop.status, `auth schemes are case-insensitive (RFC 9110 §11.1): ${summary(stop)}`).toBe(200);
  expect(stop.body).toMatchSchema('stop-result');
});
