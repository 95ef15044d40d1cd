import { test, expect } from '../../src/playwright/fixtures';
import { JSON_CONTENT_TYPE, summary } from '../../src/domain/client';
import { spec } from '../../src/config/rules';

test("the owner's stop answers 200 with a JSON stop result and success true", spec('owner-stop/answers-200'), async ({ api, session, identities, check }) => {
  const stop = await test.step('the owner stops the session', () => api.stop(session.jobId, identities.owner));
  await check('status', () => expect(stop.status, summary(stop)).toBe(200));
  await check('content-type', () => expect(stop.headers['content-type'], 'Content-Type of the 200 answer').toMatch(JSON_CONTENT_TYPE));
  await check('schema', () => {
    expect(stop.body).toMatchSchema('stop-result');
    expect(stop.body?.success, 'success').toBe(true);
  });
});
