import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { spec } from '../../src/config/rules';
import { stopPriced } from '../../src/domain/account';
import { boundsOf } from '../../src/domain/billing';
import { judge } from '../../src/domain/named-checks';
import { holdAroundMs, holdBeforeMs, longerIfTooSlow } from '../../src/domain/refusals';
import { test } from '../../src/playwright/fixtures';

test(
  'a stop of a random job id that was never provisioned answers 404 with an error body',
  spec('unknown-job/random-uuid'),
  async ({ api, identities, check }) => {
    const stop = await test.step('the owner stops a fresh random UUID', () => api.stop(randomUUID(), identities.owner));
    await check('status', judge.status(stop, 404));
    await check('schema', judge.schema(stop, 'error'));
  },
);

test(
  'a stop of a scrape job that never had a browser session answers 404 with an error body',
  spec('unknown-job/job-without-session'),
  async ({ api, sessions, identities, check }) => {
    const { jobId } = await test.step('the owner creates a scrape job without a session', () => sessions.jobWithoutSession());
    const stop = await test.step("the owner stops that job's (absent) session", () => api.stop(jobId, identities.owner));
    await check('status', judge.status(stop, 404));
    await check('schema', judge.schema(stop, 'error'));
  },
);

test(
  "a stop of a job with no session, sent while the owner's session on another job runs, changes nothing: that session runs on, and its stop answers 200 for its whole life",
  spec('unknown-job/others-survive'),
  async ({ api, sessions, identities, settings, check }) => {
    // The whole test once more, held longer, where the exchanges took as long as the hold (refusals.ts).
    for (let longerMs = 0; ; ) {
      // The job first: a scrape while the session is held could wait for a job slot where the target caps a team's jobs.
      const { jobId } = await test.step('the owner creates a scrape job without a session', () => sessions.jobWithoutSession());
      const session = await test.step('the owner opens a session on another job', () => sessions.provision());
      const [beforeMs, holdMs] = [holdBeforeMs(api, settings, session.created) + longerMs, holdAroundMs(api, settings, session.created)];
      await test.step(`hold the session ${beforeMs} ms`, () => sessions.holdUntil(session, beforeMs));
      const random = await test.step('the owner stops a fresh random UUID', () => api.stop(randomUUID(), identities.owner));
      const withoutSession = await test.step("the owner stops the other job's (absent) session", () => api.stop(jobId, identities.owner));
      await check('status', judge.all([judge.status(random, 404), judge.status(withoutSession, 404)]));
      await test.step(`hold ${holdMs} ms more`, () => sleep(holdMs, undefined, { signal: api.signal }));
      const stop = await test.step('the owner stops its session', () => stopPriced(api, session.jobId, identities.owner, settings));
      const survived = judge.survived(stop, session.created, withoutSession, boundsOf(settings));
      const longer = longerMs ? undefined : longerIfTooSlow({ api, sessions, settings }, survived, stop);
      if (longer === undefined) return check('survives', survived);
      longerMs = longer;
    }
  },
);
