/**
 * Rule 7 as the account sees it: after every other test of the run (a project teardown), the owner
 * team's credit counter must have been charged exactly the settlements and scrapes the run saw.
 */

import { notVerifiable } from '../../src/checks/checks';
import { spec, TEST_IDS } from '../../src/config/rules';
import {
  accountTolerance,
  CREDIT_USAGE_PATH,
  judgeAccount,
  judgeRefuser,
  measureScrapePrice,
  PROBE_HOLD_MS,
  pricedAt,
  probeAccount,
  REFUSER_OPENING,
  readOpening,
  settleAccount,
  unstatedMost,
} from '../../src/domain/account';
import { CAP_CONFIRM_MS, capsHeld } from '../../src/domain/cap-discovery';
import { type Answer, summary } from '../../src/domain/client';
import { judge } from '../../src/domain/named-checks';
import { STRAY_SETTLEMENTS } from '../../src/domain/run-judges';
import { describeSettlement, isNewCharge } from '../../src/domain/settlements';
import { expect, test } from '../../src/playwright/fixtures';
import { ACCOUNT_READING, composeAccount, composeLeaks, composeStrays, stepsOfJob } from '../../src/reproduction/compose';
import { confirmBlame, replayBudgetMs } from '../../src/reproduction/confirm';
import type { TraceStep } from '../../src/reproduction/trace';

// After every other test of the run: against a server that orphans a session here, the team's cap stays full and any later test of the team would wait for room.
test(
  'interacts that would open a session, sent at once on one job, open one: one stop ends it, and the team keeps every slot of its cap',
  spec('stop-is-final/simultaneous-opens'),
  async ({ api, sessions, identities, settings, check }, testInfo) => {
    // A cap that refused a team while the run held none of its sessions, asked again later: the run is each team's only client, as its account check holds.
    testInfo.setTimeout(testInfo.timeout + CAP_CONFIRM_MS);
    const teams = [identities.owner, identities.foreign, ...(identities.burst ? [identities.burst] : [])];
    const held = await capsHeld(api, teams, settings.accountCheck, async (as) => (await sessions.openAtOnce(1, { as, once: true })).opens[0]);
    for (const description of held.freed) testInfo.annotations.push({ type: 'note', description });
    if (held.kept.length || held.freed.length)
      await check('room-left', () =>
        expect(held.kept, `the target keeps the slots of stopped sessions (a stop must release its browser): ${held.kept.join('; ')}`).toEqual([]),
      );
    if (held.untold.length) notVerifiable(held.untold.join('; '));
    // Under a known cap, one open more than it allows: every session opened beside the first would hold a slot.
    const cap = sessions.cap();
    const count = cap === undefined ? 3 : Math.min(cap + 1, 8);
    const { jobId, opens } = await test.step(`the owner sends ${count} interacts at once on a new job`, () => sessions.openAtOnce(count));
    await check('opens', judge.opensOne(opens));
    const stop = await test.step('the owner stops the session', () => api.stop(jobId, identities.owner));
    await check('stop', judge.status(stop, 200));
    const again = await test.step('the owner stops it again', () => api.stop(jobId, identities.owner));
    await check('one-session', judge.oneSession(again, stop));
    if (cap === undefined)
      return void test.info().annotations.push({
        type: 'note',
        description: 'no cap on live sessions is known: a slot a session opened beside the first still held would not show',
      });
    const {
      opens: [open],
    } = await test.step('the owner opens one more session', () => sessions.openAtOnce(1));
    await check('room-left', judge.roomLeft(open, cap, count));
  },
);

// In this order, whatever the first finds (their project is not fully parallel): the sweep's stops settle what it finds, and the account check then counts them.

test(
  'no session runs that the run did not open: every job whose interact was refused or failed holds nothing',
  spec('stop-is-final/no-leaks'),
  async ({ api, identities, ledger, coordination, requestTrace, check }) => {
    const jobs = ledger.refusedOpenings(api.target.baseURL, identities.owner.name);
    // Every interact the run sent opened the session it asked for: no job is at risk, and the run's own sessions are stopped by their tests.
    if (!jobs.length)
      test
        .info()
        .annotations.push({ type: 'note', description: 'no interact of the run was refused or failed: no job where a session nobody asked for could run' });
    const found: ((typeof jobs)[number] & { stop: Answer })[] = [];
    for (const job of jobs) {
      const stop = await test.step(`the owner stops job ${job.jobId}, whose last interact answered ${job.status ?? 'nothing'}`, () =>
        api.stop(job.jobId, identities.owner));
      found.push({ ...job, stop });
    }
    // Another answer (a 5xx, as some targets give a repeat stop) says nothing of what runs there: judged without those jobs, then said.
    const odd = found.filter(({ stop }) => stop.status !== 200 && stop.status !== 404);
    const strays = ledger.settledWithoutSession(api.target.baseURL);
    await check(
      'nothing-stopped-unasked',
      () => {
        const stray = strays.map(({ jobId, identity, ...settled }) => `the ${identity}'s stop of ${jobId} settled ${describeSettlement(settled)}`);
        expect(stray, STRAY_SETTLEMENTS).toEqual([]);
      },
      // Its reproduction: the requests of the tests that sent those stops, up to them.
      () =>
        composeStrays(
          strays.map(({ jobId }) => jobId),
          TEST_IDS.map((test) => coordination.loadTrace<TraceStep>(test) ?? []),
        ),
    );
    await check(
      'nothing-left',
      judge.nothingLeft(
        found.filter((job) => !odd.includes(job)).map(({ jobId, status, stop, settled }) => ({ jobId, status, stop, settled })),
        jobs.length - odd.length,
      ),
      // Its reproduction: the requests of the tests that created the jobs it found a session on, then its stops of them.
      () =>
        composeLeaks(
          found.filter(({ stop, settled }) => isNewCharge(stop) && settled.every((one) => isNewCharge(stop, one))),
          requestTrace,
          (test) => coordination.loadTrace(test),
        ),
    );
    const untold = `the sweep's stops of ${odd.length} job(s) answered neither 404 (empty) nor 200 (stopped), so what runs there cannot be told: ${odd.map(({ stop }) => summary(stop)).join('; ')}`;
    // A failure found meanwhile stands; else the test could not tell.
    if (odd.length && test.info().errors.length) test.info().annotations.push({ type: 'note', description: untold });
    else if (odd.length) notVerifiable(untold);
  },
);

test(
  "the owner team's account is charged each session's settlement once, and nothing the run did not see",
  spec('stop-is-final/account'),
  async ({ api, identities, settings, ledger, sessions, coordination, requestTrace, check }, testInfo) => {
    // Its own wait, on top of the test's timeout: ACCOUNT_SETTLE_MS is all the charges get to land.
    testInfo.setTimeout(testInfo.timeout + settings.accountSettleMs);
    // Each shard of a run against the embedded reference starts a reference of its own; the shards of a run against a remote target share its account.
    if (testInfo.config.shard && !api.target.embedded)
      notVerifiable('this run is one shard of several, which spend from the same account: the account can only be held to the whole run');
    const opening = readOpening(coordination);
    if (!opening) notVerifiable('the run scraped nothing as the owner team, so the account was never opened');
    if ('unavailable' in opening) notVerifiable(`the owner team's account could not be used: ${opening.unavailable}`);
    const spending = ledger.spending(api.target.baseURL, identities.owner.name);
    const expected =
      spending.settlements.reduce((sum, session) => sum + session.settled.reduce((total, one) => total + one.credits, 0), 0) + spending.scrapes.credits;
    // Sessions stopped by answers without a charge may have cost anything up to what their lives bill at most.
    const unstated = unstatedMost(spending, settings.declaredBilling?.rule);
    const closing = await test.step(`read the account until the run's charges have landed (at most ${settings.accountSettleMs} ms)`, () =>
      settleAccount(api, identities.owner, opening.remaining - expected - unstated / 2, accountTolerance(spending) + unstated / 2, settings));
    await testInfo.attach('account', {
      body: JSON.stringify({ opening: opening.remaining, readings: closing.readings, ...spending }, null, 2),
      contentType: 'application/json',
    });
    let verdict = judgeAccount(
      opening.remaining,
      { remaining: closing.readings.at(-1)!.remaining, still: closing.still },
      spending,
      settings.accountSettleMs,
      undefined,
      settings.declaredBilling?.rule,
    );
    if (
      verdict.outcome === 'not verifiable' &&
      spending.scrapes.unpriced &&
      closing.still &&
      opening.remaining - closing.readings.at(-1)!.remaining > expected
    ) {
      // The scrapes' answers gave no price: one scrape alone tells it, then the run is judged at that price.
      testInfo.setTimeout(testInfo.timeout + 3 * settings.accountSettleMs + 4 * settings.requestTimeoutMs);
      const price = await test.step('one scrape alone: its price, as the account shows it', () =>
        measureScrapePrice(api, identities.owner, () => sessions.jobWithoutSession(), settings));
      if (price !== undefined)
        verdict = judgeAccount(
          opening.remaining,
          { remaining: closing.readings.at(-1)!.remaining, still: closing.still },
          pricedAt(spending, price),
          settings.accountSettleMs,
          price,
          settings.declaredBilling?.rule,
        );
    }
    // Its reproduction: the requests of the sessions charged again, between two readings of the account.
    const readings = requestTrace.steps.filter((step) => step.path === CREDIT_USAGE_PATH);
    // Each job's requests in the test that created it, then in the sweep for leaks (which may have stopped a session opened there).
    const partsOf = (jobId: string) =>
      [ledger.creatorOf(api.target.baseURL, jobId) ?? '', 'stop-is-final/no-leaks'].map((test) =>
        stepsOfJob(coordination.loadTrace<TraceStep>(test) ?? [], jobId),
      );
    const charged = verdict.jobs ? composeAccount([[ACCOUNT_READING], ...verdict.jobs.flatMap(partsOf), readings], settings.accountSettleMs) : undefined;
    if (verdict.outcome === 'fail' && charged) {
      // Sessions blamed by the sum of their settlements may add up to the excess by chance: replayed alone, they must be charged again.
      testInfo.setTimeout(testInfo.timeout + replayBudgetMs(charged, settings));
      const blamed = verdict;
      const confirmed = await test.step('the sessions blamed, replayed alone: the account must be charged again', () =>
        confirmBlame(settings, api.target, identities, ledger, blamed, charged, testInfo.title));
      await testInfo.attach('the blamed sessions replayed', { body: confirmed.output, contentType: 'text/plain' });
      testInfo.annotations.push({ type: 'note', description: confirmed.note });
      verdict = confirmed.verdict;
    }
    if (verdict.outcome === 'not verifiable' && closing.still) {
      // More or less than the run explains: one session alone, refused as the run's sessions were, tells a target that charges other than it reports from another use of the team.
      testInfo.setTimeout(testInfo.timeout + 2 * settings.accountSettleMs + 6 * settings.requestTimeoutMs + PROBE_HOLD_MS);
      const probeStart = requestTrace.steps.length;
      const probed =
        await test.step(`one session alone, held ${PROBE_HOLD_MS} ms and refused by another team and without a key before its owner stops it twice: the account must move by exactly what its scrape and its first stop report`, () =>
          probeAccount(
            api,
            identities.owner,
            async () => {
              const session = await sessions.provision();
              for (const who of ['foreign', 'noKey'] as const) await api.stop(session.jobId, identities[who]);
              // Long enough to be charged by the second, so that a charge of the wrong size, or a repeat stop's, shows.
              await sessions.holdUntil(session, PROBE_HOLD_MS);
              return {
                scrape: session.scrape,
                created: session.created,
                stop: async () => {
                  const first = await api.stop(session.jobId, identities.owner);
                  await api.stop(session.jobId, identities.owner);
                  return first;
                },
              };
            },
            settings,
          ));
      // Its reproduction: the probe again.
      if (probed)
        await check(
          'charged-as-settled',
          () => expect(probed, `${verdict.message}; and ${probed}`).toBeUndefined(),
          () => composeAccount([requestTrace.steps.slice(probeStart)], settings.accountSettleMs, true),
        );
    }
    // The foreign team refused the owner's sessions all run: a refusal must charge its caller nothing either.
    const refuser = readOpening(coordination, REFUSER_OPENING);
    if (refuser && 'remaining' in refuser) {
      testInfo.setTimeout(testInfo.timeout + 3 * settings.accountSettleMs + 6 * settings.requestTimeoutMs);
      const probeStart = requestTrace.steps.length;
      const side = await test.step("the foreign team's account moved by its own spending alone (else one session it refuses, alone)", () =>
        judgeRefuser(
          api,
          identities.foreign,
          refuser.remaining,
          ledger.spending(api.target.baseURL, identities.foreign.name),
          async () => {
            const session = await sessions.provision();
            await api.stop(session.jobId, identities.foreign);
            await api.stop(session.jobId, identities.owner);
          },
          settings,
        ));
      if (side.note) testInfo.annotations.push({ type: 'note', description: side.note });
      await check(
        'refusals-charge-nobody',
        () => expect(side.failure, side.failure).toBeUndefined(),
        () => (side.failure ? composeAccount([requestTrace.steps.slice(probeStart)], settings.accountSettleMs, true) : undefined),
      );
    }
    if (verdict.outcome === 'not verifiable') notVerifiable(verdict.message);
    testInfo.annotations.push({ type: 'note', description: verdict.message });
    await check(
      'charged-as-settled',
      () => expect(verdict.outcome, verdict.message).toBe('pass'),
      () => charged,
    );
  },
);
