import { test, expect, stopPath } from '../support/fixtures';
import { rule } from '../support/rules';
import { JSON_CONTENT_TYPE, summary } from '../support/exchange';

test("the owner's stop answers 200 with a JSON stop result and success true", rule('owner-stop', 'must'), async ({ api, session, identities }) => {
  const stop = await test.step("the owner stops the session", () =>
    api.send({ method: 'DELETE', path: stopPath(session.jobId), as: identities.owner }),
  );
  expect(stop.status, summary(stop)).toBe(200);
  expect(stop.headers['content-type'], 'Content-Type of the 200 answer').toMatch(JSON_CONTENT_TYPE);
  expect(stop.body).toMatchSchema('stop-result');
  expect(stop.body?.success, 'success').toBe(true);
});
