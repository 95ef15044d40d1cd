/**
 * One burst per run (each costs a whole rate-limit window on a real target), under Playwright's
 * built-in "-exclusive-" lock: it runs once no other test is running, so it neither starves the
 * other tests of their limit nor disturbs the durations they measure.
 */
import { randomUUID } from 'node:crypto';
import { test, expect } from '../support/fixtures';
import { expectSurvived } from '../support/billing';
import { notVerifiable } from '../support/checks';
import { interactPath, summary, type Answer } from '../support/client';
import { expectRevealsNothing, ownerValuesOf } from '../support/refusals';
import { spec } from '../support/rules';

test(
  'a burst of concurrent stops gets at least one 429 and otherwise 404, a stop it throttled does nothing, and the limiter recovers',
  spec('rate-limit/burst'),
  async ({ api, session, identities, settings, check }, testInfo) => {
    const unknown = interactPath(randomUUID());
    const answers: Answer[] = [];
    let throttled: Promise<Answer> | undefined;
    const started = performance.now();
    await test.step(`send ${settings.burstRequests} stops of an unknown job, ${settings.burstConcurrency} at a time; once one gets 429, the owner also stops a live session`, async () => {
      let next = 0;
      const lane = async () => {
        while (next < settings.burstRequests) {
          next += 1;
          const answer = await api.send({ method: 'DELETE', path: unknown, as: identities.owner, on429: 'once', attach: false });
          answers.push(answer);
          if (answer.status === 429 && !throttled) throttled = api.send({ method: 'DELETE', path: interactPath(session.jobId), as: identities.owner, on429: 'once' });
        }
      };
      await Promise.all(Array.from({ length: Math.min(settings.burstConcurrency, settings.burstRequests) }, lane));
    });
    const throttledStop = await throttled;
    const counts: Record<number, number> = {};
    for (const answer of answers) counts[answer.status] = (counts[answer.status] ?? 0) + 1;
    await testInfo.attach('burst answers by status', {
      body: JSON.stringify({ requests: answers.length, durationMs: Math.round(performance.now() - started), counts, throttledStop: throttledStop?.status }, null, 2),
      contentType: 'application/json',
    });
    await check('limited', () => expect(counts[429] ?? 0, `at least one of ${answers.length} concurrent requests is rate limited; statuses: ${JSON.stringify(counts)}`).toBeGreaterThan(0));
    await check('other-answers', () => {
      const unexpected = answers.filter((answer) => answer.status !== 404 && answer.status !== 429);
      expect(unexpected.map(summary).slice(0, 5), `every answer is 404 (no such job) or 429; statuses: ${JSON.stringify(counts)}`).toEqual([]);
    });
    await check('throttled-reveals-nothing', () => {
      expect([200, 429], `the owner's stop during the burst answers 429, or 200 if it got through: ${summary(throttledStop!)}`).toContain(throttledStop!.status);
      if (throttledStop!.status === 429) expectRevealsNothing(throttledStop!, ownerValuesOf([session.created], identities.ownerTeam, session.jobId));
    });

    const recovered = await test.step('wait for the limiter to recover (back-off, Retry-After when given)', () =>
      api.send({ method: 'DELETE', path: interactPath(randomUUID()), as: identities.owner, on429: 'return-last' }),
    );
    await check('recovers', () => expect(recovered.status, `the limiter must recover within BACKOFF_BUDGET_MS=${settings.backoffBudgetMs}: ${summary(recovered)}`).toBe(404));

    if (throttledStop!.status !== 429) {
      testInfo.annotations.push({ type: 'note', description: "the owner's stop during the burst was not throttled, so a throttled stop could not be checked this time" });
      return;
    }
    const stop = await test.step('the owner stops the session the burst throttled', () => api.send({ method: 'DELETE', path: interactPath(session.jobId), as: identities.owner }));
    let proof: { notVerifiable?: string } = {};
    await check('throttled-stop-did-nothing', () => {
      expect(stop.status, `a stop answered 429 must not have stopped the session: ${summary(stop)}`).toBe(200);
      expect(stop.body).toMatchSchema('stop-result');
      proof = expectSurvived(stop, session, throttledStop!, settings);
    });
    if (proof.notVerifiable) notVerifiable(proof.notVerifiable);
  },
);
