/**
 * One burst per run. It drains the limit of a team of its own where there is one (the embedded
 * reference's third team, or BURST_API_KEY) and runs beside the other tests, apart from other
 * bursts; otherwise it drains the owner's under Playwright's "-exclusive-" lock, once no other test
 * runs, so that it neither starves them of their limit nor disturbs the durations they measure.
 */
import { notVerifiable } from '../../src/checks/checks';
import { spec } from '../../src/config/rules';
import { stopPriced } from '../../src/domain/account';
import { boundsOf } from '../../src/domain/billing';
import { countStatuses, judge, peakPerSecond } from '../../src/domain/named-checks';
import { burstExperiment } from '../../src/domain/rate-limit';
import { burstLock, test } from '../../src/playwright/fixtures';

test(
  'a burst of concurrent stops gets at least one 429 and otherwise 404, a stop it throttled does nothing, and the limiter recovers',
  { ...spec('rate-limit/burst'), lock: burstLock() },
  async ({ api, sessions, identities, settings, coordination, check }, testInfo) => {
    const burst = await burstExperiment({ api, sessions, identities, settings, coordination });
    const { answers, stops, team } = burst;
    const tally = {
      requests: answers.length,
      lostOnTheWay: burst.lost,
      durationMs: burst.burstMs,
      peakPerSecond: peakPerSecond(answers),
      counts: countStatuses(answers),
      ownerStops: stops.map((stop) => stop.answer.status),
    };
    await testInfo.attach('burst answers by status', { body: JSON.stringify(tally, null, 2), contentType: 'application/json' });
    await check('other-answers', judge.burstAnswers(answers));
    const apart = burst.before
      .filter(({ as }) => !burst.others.some((other) => other.as === as))
      .map(({ as, answer }) => `${as.name} (${answer.status} before the burst)`);
    if (apart.length)
      testInfo.annotations.push({
        type: 'note',
        description: `teams-isolated: not compared, no pair of theirs met the burst team's refusal or their plans had no room: ${apart.join(', ')}`,
      });
    await check('limited', judge.limited(answers, burst.burstMs, settings.burstProofRate));
    const ownStops = stops.map(({ answer, session }) => ({ answer, created: session.created, jobId: session.jobId }));
    await check('throttled-reveals-nothing', judge.throttledRevealsNothing(ownStops, team.name, burst.teamValues));
    await check('recovers', judge.status(await burst.recover(), 404, `the limiter must recover within BACKOFF_BUDGET_MS=${settings.backoffBudgetMs}`));
    const throttled = stops.find((stop) => stop.answer.status === 429);
    // Stopped before the team's own limit is asked about: its window may take minutes to clear.
    const stop =
      throttled && (await test.step(`the ${team.name} stops the session the burst throttled`, () => stopPriced(api, throttled.session.jobId, team, settings)));
    const own = await burst.ownLimit();
    if (own?.untold)
      testInfo.annotations.push({ type: 'note', description: `teams-isolated: the ${team.name} was not asked after another team: ${own.untold}` });
    await check(
      'teams-isolated',
      judge.teamsIsolated(
        team.name,
        burst.others.map(({ as, answer }) => ({ as: { name: as.name }, answer })),
        own,
      ),
    );
    if (!throttled || !stop)
      notVerifiable(
        `none of the ${team.name}'s ${stops.length} stops during the burst was throttled (each got through), so whether a throttled stop does nothing could not be checked`,
      );
    await check('throttled-stop-did-nothing', judge.survived(stop, throttled.session.created, throttled.answer, boundsOf(settings)));
  },
);
