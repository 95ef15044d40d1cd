import { spec } from '../../src/config/rules';
import { judge } from '../../src/domain/named-checks';
import { refuseThenOwnerStops } from '../../src/domain/refusals';
import { test } from '../../src/playwright/fixtures';

test("a foreign team's stop answers 403 with an error body", spec('foreign-team/forbidden'), async ({ api, session, identities, check }) => {
  const refused = await test.step('the foreign team asks to stop the session', () => api.stop(session.jobId, identities.foreign));
  await check('status', judge.status(refused, 403));
  await check('schema', judge.schema(refused, 'error'));
});

test(
  "a foreign team's refused stop, at any moment of the session's life, changes nothing: the owner uses the session on, and its stop answers 200 for the whole session",
  spec('foreign-team/survives'),
  async ({ api, sessions, session, identities, settings, check }) => {
    await refuseThenOwnerStops(
      { api, sessions, session, check, settings, owner: identities.owner },
      identities.foreign,
      (answers) => judge.refused(answers, 403),
      { interactAfter: true },
    );
  },
);

test(
  "a foreign team's 403 carries no billing and nothing of the owner's: no duration, no credits, no team, no other job",
  spec('foreign-team/reveals-nothing'),
  async ({ api, session, sessions, identities, check }) => {
    const otherJob = await test.step('the owner creates another scrape job', () => sessions.jobWithoutSession());
    const refused = await test.step('the foreign team asks to stop the session', () => api.stop(session.jobId, identities.foreign));
    await check('refused', judge.refused([refused], 403));
    await check('reveals-nothing', judge.revealsNothing([refused], [session.created, otherJob.scrape], identities.ownerTeam, session.jobId));
  },
);
