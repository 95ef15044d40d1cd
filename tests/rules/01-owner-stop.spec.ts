import { spec } from '../../src/config/rules';
import { judge } from '../../src/domain/named-checks';
import { test } from '../../src/playwright/fixtures';

test("the owner's stop answers 200 with a JSON stop result and success true", spec('owner-stop/answers-200'), async ({ api, session, identities, check }) => {
  const stop = await test.step('the owner stops the session', () => api.stop(session.jobId, identities.owner));
  await check('status', judge.status(stop, 200));
  await check('content-type', judge.contentType(stop));
  await check('schema', judge.schema(stop, 'stop-result', true));
});
