/**
 * Rule 4's stops of jobs with no session, as a test alone sends them where the chain of refusals
 * does not decide (chain-members.ts): a random UUID's (random-uuid, and rule 9's not-found), a scrape
 * job's that never had a session (job-without-session), and both while the owner holds a session on
 * another job, which must run on through them (others-survive).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { step } from '../checks/recorder';
import type { TestId } from '../config/rules';
import { stopPriced } from './account';
import { boundsOf } from './billing';
import { judge } from './named-checks';
import { holdAroundMs, holdBeforeMs, longerIfTooSlow } from './refusals';
import type { Parts, TestContext } from './shared-run';

/** Test `id` alone. */
export async function unknownJobAlone(context: TestContext, id: TestId): Promise<void> {
  for (const [name, call] of (await run(context, [id]))[id] ?? []) await context.check(name, call);
}

async function run({ api, sessions, identities, settings }: TestContext, tests: TestId[]): Promise<Parts> {
  const { owner } = identities;
  const surviving = tests.includes('unknown-job/others-survive');
  // The whole run once more, held longer, where the exchanges took as long as the hold (refusals.ts).
  for (let longerMs = 0; ; ) {
    // The job first: a scrape while the session is held could wait for a job slot where the target caps a team's jobs.
    const job =
      surviving || tests.includes('unknown-job/job-without-session')
        ? await step('the owner creates a scrape job without a session', () => sessions.jobWithoutSession())
        : undefined;
    const session = surviving ? await step('the owner opens a session on another job', () => sessions.provision()) : undefined;
    if (session) {
      const beforeMs = holdBeforeMs(api, settings, session.created) + longerMs;
      await step(`hold the session ${beforeMs} ms`, () => sessions.holdUntil(session, beforeMs));
    }
    const random = await step('the owner stops a fresh random UUID', () => api.stop(randomUUID(), owner));
    const withoutSession = job && (await step("the owner stops the other job's (absent) session", () => api.stop(job.jobId, owner)));
    const parts: Parts = {
      'unknown-job/random-uuid': [
        ['status', judge.status(random, 404)],
        ['schema', judge.schema(random, 'error')],
      ],
      'json-answers/not-found': [
        ['status', judge.status(random, 404)],
        ['json-error', judge.jsonError(random)],
      ],
      ...(withoutSession && {
        'unknown-job/job-without-session': [
          ['status', judge.status(withoutSession, 404)],
          ['schema', judge.schema(withoutSession, 'error')],
        ],
      }),
    };
    if (!session || !withoutSession) return parts;
    const holdMs = holdAroundMs(api, settings, session.created);
    await step(`hold ${holdMs} ms more`, () => sleep(holdMs, undefined, { signal: api.signal }));
    const stop = await step('the owner stops its session', () => stopPriced(api, session.jobId, owner, settings));
    const survived = judge.survived(stop, session.created, withoutSession, boundsOf(settings));
    const longer = longerMs ? undefined : longerIfTooSlow({ api, sessions, settings }, survived, stop);
    if (longer !== undefined) {
      longerMs = longer;
      continue;
    }
    return {
      ...parts,
      'unknown-job/others-survive': [
        ['status', judge.all([judge.status(random, 404), judge.status(withoutSession, 404)])],
        ['survives', survived],
      ],
    };
  }
}
