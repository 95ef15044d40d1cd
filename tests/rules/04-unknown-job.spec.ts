import { randomUUID } from 'node:crypto';
import { test } from '../../src/playwright/fixtures';
import { judge } from '../../src/domain/named-checks';
import { spec } from '../../src/config/rules';

test('a stop of a random job id that was never provisioned answers 404 with an error body', spec('unknown-job/random-uuid'), async ({ api, identities, check }) => {
  const stop = await test.step('the owner stops a fresh random UUID', () => api.stop(randomUUID(), identities.owner));
  await check('status', judge.status(stop, 404));
  await check('schema', judge.schema(stop, 'error'));
});

test('a stop of a scrape job that never had a browser session answers 404 with an error body', spec('unknown-job/job-without-session'), async ({ api, sessions, identities, check }) => {
  const { jobId } = await test.step('the owner creates a scrape job without a session', () => sessions.jobWithoutSession());
  const stop = await test.step("the owner stops that job's (absent) session", () => api.stop(jobId, identities.owner));
  await check('status', judge.status(stop, 404));
  await check('schema', judge.schema(stop, 'error'));
});
