/**
 * The burst and the recovery run alone, once no other test is running (Playwright's built-in
 * "-exclusive-" lock), so that the burst neither starves other tests of their rate limit nor
 * disturbs the durations they measure.
 */
import { randomUUID } from 'node:crypto';
import { test, expect, stopPath, backoffMs, type Exchange } from '../support/fixtures';
import { rule } from '../support/rules';
import { sleep, summary } from '../support/exchange';

test.describe.configure({ mode: 'serial' });

// The variant matrix runs each target's tests one at a time and turns the lock off.
const alone = { ...rule('rate-limit', 'must'), lock: process.env.CONFORMANCE_BURST_ALONE === 'false' ? [] : '-exclusive-' };

test('a burst of concurrent stops from one team gets at least one 429 and otherwise the expected 404', alone, async ({ api, identities, settings }, testInfo) => {
  const path = stopPath(randomUUID());
  const answers: Exchange[] = [];
  const started = performance.now();
  await test.step(`send ${settings.burstRequests} stops of an unknown job, ${settings.burstConcurrency} at a time`, async () => {
    let next = 0;
    const lane = async () => {
      while (next < settings.burstRequests) {
        next += 1;
        answers.push(await api.send({ method: 'DELETE', path, as: identities.owner, retryOn429: false, attach: false }));
      }
    };
    await Promise.all(Array.from({ length: Math.min(settings.burstConcurrency, settings.burstRequests) }, lane));
  });
  const counts: Record<number, number> = {};
  for (const answer of answers) counts[answer.status] = (counts[answer.status] ?? 0) + 1;
  await testInfo.attach('burst answers by status', {
    body: JSON.stringify({ requests: answers.length, durationMs: Math.round(performance.now() - started), counts }, null, 2),
    contentType: 'application/json',
  });
  const unexpected = answers.filter((answer) => answer.status !== 404 && answer.status !== 429);
  expect(unexpected.map(summary).slice(0, 5), `every answer is 404 (no such job) or 429; statuses: ${JSON.stringify(counts)}`).toEqual([]);
  expect(counts[429] ?? 0, `at least one of ${answers.length} concurrent requests is rate limited; statuses: ${JSON.stringify(counts)}`).toBeGreaterThan(0);
});

test('after a burst the rate limiter recovers and answers the expected 404', alone, async ({ api, identities, settings }) => {
  const path = stopPath(randomUUID());
  const deadline = performance.now() + settings.backoffBudgetMs;
  let answer = await api.send({ method: 'DELETE', path, as: identities.owner, retryOn429: false });
  for (let attempt = 1; answer.status === 429 && performance.now() + backoffMs(attempt, answer.headers['retry-after']) <= deadline; attempt++) {
    await sleep(backoffMs(attempt, answer.headers['retry-after']));
    answer = await api.send({ method: 'DELETE', path, as: identities.owner, retryOn429: false });
  }
  expect(answer.status, `the limiter must recover within ${settings.backoffBudgetMs} ms: ${summary(answer)}`).toBe(404);
});
