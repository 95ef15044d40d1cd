/**
 * One burst per run (each costs a whole rate-limit window on a real target). It drains the limit
 * of a team of its own where there is one (the embedded reference's third team, or BURST_API_KEY)
 * and runs beside the other tests, apart from other bursts. Otherwise it drains the owner's, under
 * Playwright's built-in "-exclusive-" lock: it runs once no other test is running, so it neither
 * starves the other tests of their limit nor disturbs the durations they measure.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { notVerifiable } from '../../src/checks/checks';
import { spec } from '../../src/config/rules';
import { stopPriced } from '../../src/domain/account';
import { boundsOf } from '../../src/domain/billing';
import { otherTeams, ownLimit, sendBurst } from '../../src/domain/burst';
import type { Answer } from '../../src/domain/client';
import { countStatuses, judge, peakPerSecond } from '../../src/domain/named-checks';
import { holdBeforeMs } from '../../src/domain/refusals';
import { epochOf } from '../../src/http/exchange';
import { burstLock, test } from '../../src/playwright/fixtures';

/**
 * Two live sessions go into the burst: their owner stops the first once a 429 shows the limiter
 * saturated, and the second likewise if the first got through (a window boundary can fall just
 * between), so that a throttled stop is almost always there to check.
 */
const CANDIDATES = 2;
/** The shortest age of a session a stop of it can be throttled at. */
const BURST_HOLD_MS = 1000;

test(
  'a burst of concurrent stops gets at least one 429 and otherwise 404, a stop it throttled does nothing, and the limiter recovers',
  { ...spec('rate-limit/burst'), lock: burstLock() },
  async ({ api, sessions, identities, settings, coordination, check }, testInfo) => {
    const [team, teamValues] = identities.burst ? [identities.burst, identities.burstTeam] : [identities.owner, identities.ownerTeam];
    const recover = () =>
      test.step('wait for the limiter to recover (back-off, Retry-After when given)', () => api.stop(randomUUID(), team, { on429: 'return-last' }));
    let recovered: Answer | undefined;
    // As many as the target's cap on live sessions allows: one is enough, the second a spare.
    const candidates = await test.step(`the ${team.name} provisions ${CANDIDATES} sessions (fewer under a cap on live sessions)`, () =>
      sessions.provisionMany(CANDIDATES, { as: team }));
    // Each session is older than a refusal's hold, and at least a second, before a stop of it can be throttled (the first goes right behind the burst's
    // first wave), so that its duration can prove it ran on: the owner's stop after the recovery may take long on a busy machine, and widens what a restarted clock could give.
    const holdMs = Math.max(
      ...candidates.map(
        (candidate) => Math.max(BURST_HOLD_MS, holdBeforeMs(api, settings, candidate.created)) - (performance.now() - candidate.created.receivedAt),
      ),
    );
    const clock = settings.declaredClock ? `: the target's clock counts in steps of ${settings.declaredClock.resolutionMs} ms` : '';
    if (holdMs > 0) await test.step(`hold the sessions ${Math.round(holdMs)} ms${clock}`, () => sleep(holdMs, undefined, { signal: api.signal }));
    // Where the run knows the team's rate, the burst is just wider than the room left in the window: a few refusals prove the limit, not hundreds.
    const room = coordination.schedule(team.team ?? team.name, 'interact').room();
    const concurrency = room === undefined ? settings.burstConcurrency : Math.min(settings.burstConcurrency, room + 2);
    const bounds = `${settings.burstRequests} requests or ${settings.burstSeconds} s`;
    // No other request of the run is in flight meanwhile: the burst would widen the intervals they measure.
    const { answers, others, before, stops, lost, burstMs } =
      await test.step(`the ${team.name} sends stops of an unknown job, ${concurrency} at a time${room === undefined ? '' : ` (its window has room for ${room})`}, until its first 429 (at most ${bounds}); once one gets 429, it also stops a live session of its own`, () =>
        api.quietly(async () => {
          // The other teams' plans have room (a stop of no job each answers, not 429): during the refusals they must still be served.
          const before = await Promise.all(
            otherTeams(identities, team).map(async (as) => ({ as, answer: await api.stop(randomUUID(), as, { on429: 'once' }) })),
          );
          // A team whose rate is not known has shown room for one request, and a pair both admitted begins a window: two pairs at most.
          const roomy = before
            .filter(({ answer }) => answer.status !== 429)
            .map(({ as }) => ({ as, room: coordination.schedule(as.team ?? as.name, 'interact').room() ?? 2 }));
          const burst = await sendBurst({
            api,
            team,
            others: roomy.filter(({ room }) => room > 0),
            candidates,
            concurrency,
            planned: room !== undefined,
            settings,
          });
          // A limit shared with the burst team (per client address, say) drained the owner's too: the run waits for its recovery.
          if (burst.others.some(({ as, answer }) => as === identities.owner && answer.status === 429)) recovered = await recover();
          return { ...burst, before };
        }));
    const peak = peakPerSecond(answers);
    await testInfo.attach('burst answers by status', {
      body: JSON.stringify(
        {
          requests: answers.length,
          lostOnTheWay: lost,
          durationMs: burstMs,
          peakPerSecond: peak,
          counts: countStatuses(answers),
          ownerStops: stops.map((stop) => stop.answer.status),
        },
        null,
        2,
      ),
      contentType: 'application/json',
    });
    await check('other-answers', judge.burstAnswers(answers));
    const apart = before.filter(({ as }) => !others.some((other) => other.as === as)).map(({ as, answer }) => `${as.name} (${answer.status} before the burst)`);
    if (apart.length)
      testInfo.annotations.push({
        type: 'note',
        description: `teams-isolated: not compared, no pair of theirs met the burst team's refusal or their plans had no room: ${apart.join(', ')}`,
      });
    await check('limited', judge.limited(answers, burstMs, settings.burstProofRate));
    const throttled = stops.find((stop) => stop.answer.status === 429);
    await check(
      'throttled-reveals-nothing',
      judge.throttledRevealsNothing(
        stops.map(({ answer, session }) => ({ answer, created: session.created, jobId: session.jobId })),
        team.name,
        teamValues,
      ),
    );

    const recovery = recovered ?? (await recover());
    await check('recovers', judge.status(recovery, 404, `the limiter must recover within BACKOFF_BUDGET_MS=${settings.backoffBudgetMs}`));

    // Another client of the team (ACCOUNT_CHECK=0) sends what the run cannot count.
    const sentIn = (from: number, to: number) => coordination.sentBy(team.team ?? team.name, epochOf(from), epochOf(to));
    const rooms = otherTeams(identities, team).map((as) => ({ as, room: coordination.schedule(as.team ?? as.name, 'interact').room() }));
    const own = settings.accountCheck
      ? await test.step(`whether the ${team.name}'s stated limit is its own: a request right after another team's as many`, () =>
          ownLimit(api, team, rooms, answers, sentIn))
      : undefined;
    await check('teams-isolated', judge.teamsIsolated(team.name, others, own));

    if (!throttled)
      notVerifiable(
        `none of the ${team.name}'s ${stops.length} stops during the burst was throttled (each got through), so whether a throttled stop does nothing could not be checked`,
      );
    const stop = await test.step(`the ${team.name} stops the session the burst throttled`, () => stopPriced(api, throttled.session.jobId, team, settings));
    await check('throttled-stop-did-nothing', judge.survived(stop, throttled.session.created, throttled.answer, boundsOf(settings)));
  },
);
