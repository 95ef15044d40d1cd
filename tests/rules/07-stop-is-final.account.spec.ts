/**
 * Rule 7 as the account sees it: after every other test of the run (a project teardown), the owner
 * team's credit counter must have been charged exactly the settlements and scrapes the run saw.
 */

import { notVerifiable } from '../../src/checks/checks';
import { spec, TEST_IDS } from '../../src/config/rules';
import { type Answer, summary } from '../../src/domain/client';
import { judge } from '../../src/domain/named-checks';
import { STRAY_SETTLEMENTS } from '../../src/domain/run-judges';
import { describeSettlement, isNewCharge } from '../../src/domain/settlements';
import { opensOneAtOnce } from '../../src/domain/simultaneous-opens';
import { expect, test } from '../../src/playwright/fixtures';
import { auditAccount } from '../../src/reproduction/account-audit';
import { composeLeaks, composeStrays } from '../../src/reproduction/compose';
import type { TraceStep } from '../../src/reproduction/trace';

// After every other test of the run: against a server that orphans a session here, the team's cap stays full and any later test of the team would wait for room.
test(
  'interacts that would open a session, sent at once on one job, open one: one stop ends it, and the team keeps every slot of its cap',
  spec('stop-is-final/simultaneous-opens'),
  async ({ api, sessions, identities, settings, ledger, check }) => opensOneAtOnce({ api, sessions, identities, settings, ledger, check }),
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
