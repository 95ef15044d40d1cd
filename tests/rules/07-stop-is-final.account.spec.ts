/**
 * Rule 7 as the account sees it: after every other test of the run (a project teardown), the owner
 * team's credit counter must have been charged exactly the settlements and scrapes the run saw.
 */

import { notVerifiable } from '../../src/checks/checks';
import { OPENS, spec, TEST_IDS } from '../../src/config/rules';
import { CAP_CONFIRM_MS, capAcrossRun, capsHeld, MOST_AT_ONCE } from '../../src/domain/cap-discovery';
import { type Answer, summary } from '../../src/domain/client';
import { judge } from '../../src/domain/named-checks';
import { STRAY_SETTLEMENTS } from '../../src/domain/run-judges';
import { describeSettlement, isNewCharge } from '../../src/domain/settlements';
import { expect, test } from '../../src/playwright/fixtures';
import { auditAccount } from '../../src/reproduction/account-audit';
import { composeLeaks, composeStrays } from '../../src/reproduction/compose';
import type { TraceStep } from '../../src/reproduction/trace';

// After every other test of the run: against a server that orphans a session here, the team's cap stays full and any later test of the team would wait for room.
test(
  'interacts that would open a session, sent at once on one job, open one: one stop ends it, and the team keeps every slot of its cap',
  spec('stop-is-final/simultaneous-opens'),
  async ({ api, sessions, identities, settings, ledger, check }, testInfo) => {
    // Two waits of CAP_CONFIRM_MS at most: a cap that refused a team while the run held none of its sessions, asked again later (the run is
    // each team's only client, as its account check holds), and a slot the last stop releases late.
    testInfo.setTimeout(testInfo.timeout + 2 * CAP_CONFIRM_MS);
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
    const count = cap === undefined ? 3 : Math.min(cap + 1, MOST_AT_ONCE);
    const { jobId, opens } = await test.step(`the owner sends ${count} interacts at once on a new job`, () => sessions.openAtOnce(count));
    await check('opens', judge.opensOne(opens));
    const stop = await test.step('the owner stops the session', () => api.stop(jobId, identities.owner));
    await check('stop', judge.status(stop, 200));
    const again = await test.step('the owner stops it again', () => api.stop(jobId, identities.owner));
    await check('one-session', judge.oneSession(again, stop));
    if (cap === undefined) {
      // As many sessions one after the other as the run held live at once: a cap refusing one of them was not kept.
      const across = await capAcrossRun(api, sessions, ledger, identities.owner, OPENS['stop-is-final/account']?.sessions ?? 0, testInfo);
      if ('refused' in across) {
        const shownBy = `sessions opened one after the other were refused for a cap once ${across.live} were live (${summary(across.refused)})`;
        return check('cap-kept', judge.capKeptAllRun(across.peak, across.live, shownBy));
      }
      return void testInfo.annotations.push({ type: 'note', description: `cap-kept: ${across.untold}; no cap on live sessions is known` });
    }
    // A cap the target states (up front, or in its refusals' words): every slot free again (a session nobody can stop holds one), and
    // one more at once refused. An inferred cap may be too high, and one above MOST_AT_ONCE too costly to fill: one session.
    const stated = sessions.statedCap();
    // A cap in the target's own words, against the most the owner surely held live at once during the run.
    const inWords = sessions.capInWords();
    const peak = ledger.mostLive(api.target.baseURL, identities.owner.name);
    const keptAllRun = () =>
      inWords === undefined
        ? undefined
        : check('cap-kept', judge.capKeptAllRun(peak, inWords, `the target's refusals state a cap of ${inWords} live sessions`));
    const room = stated !== undefined && stated < MOST_AT_ONCE ? stated : undefined;
    // One more than the cap where the budget has room for it, else the cap alone (cap-kept then unasked), else nothing to tell.
    // The account check, after this test, keeps its sessions (rules.ts).
    const left = sessions.budgetLeft() - (OPENS['stop-is-final/account']?.sessions ?? 0);
    const filling = room === undefined ? 1 : Math.min(room + 1, left);
    if (room !== undefined && filling < room) {
      await keptAllRun();
      notVerifiable(
        `filling the cap of ${room} the target states takes ${room} sessions of the budget, which has ${left} left: SESSION_BUDGET=${settings.sessionBudget + room + 1 - left} verifies it`,
      );
    }
    const opened = await test.step(`the owner opens ${filling} session(s) at once, each on a new job`, () =>
      sessions.openEvery(filling, room ?? 1, CAP_CONFIRM_MS));
    await check('room-left', judge.roomLeft(opened, room ?? 1, count));
    await keptAllRun();
    if (room !== undefined && filling > room) await check('cap-kept', judge.capKept(opened, room));
    else if (room !== undefined)
      testInfo.annotations.push({
        type: 'note',
        description: `cap-kept: not asked, the session budget had room for the cap of ${room} alone (SESSION_BUDGET=${settings.sessionBudget + 1} asks it)`,
      });
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
    await auditAccount({ api, identities, settings, ledger, sessions, coordination, requestTrace, check, title: testInfo.title });
  },
);
