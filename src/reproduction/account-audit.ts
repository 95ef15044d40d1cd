/**
 * Rule 7 as the account sees it, after every other test of the run: the owner team's credit counter
 * must have been charged exactly the settlements and scrapes the run saw. Where it was not, the
 * sessions blamed are replayed alone to confirm it, or one session alone tells a target that charges
 * other than it reports from another use of the team (its first stop served beside another team's
 * request); the foreign team, which refused the owner's sessions all run, must have been charged
 * its own spending alone.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Check, type ComposedReproduction, notVerifiable } from '../checks/checks';
import { expect } from '../checks/expect';
import { attach, extendTimeout, note, step } from '../checks/recorder';
import type { Settings } from '../config/settings';
import type { Coordination } from '../coordination/coordination';
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
} from '../domain/account';
import type { Client } from '../domain/client';
import type { Ledger } from '../domain/ledger';
import type { Sessions } from '../domain/sessions';
import type { Identities } from '../domain/target';
import { ACCOUNT_READING, composeAccount, refuserUncharged, stepsOfJob } from './compose';
import { confirmBlame, replayBudgetMs } from './confirm';
import type { Trace, TraceStep } from './trace';

/** How long after the probe's first stop is sent another team's request follows: within a slow stop, or just after a quick one. */
const BESIDE_A_STOP_MS = 50;

export async function auditAccount({
  api,
  identities,
  settings,
  ledger,
  sessions,
  coordination,
  requestTrace,
  check,
  title,
}: {
  api: Client;
  identities: Identities;
  settings: Settings;
  ledger: Ledger;
  sessions: Sessions;
  coordination: Coordination;
  requestTrace: Trace;
  check: Check;
  /** The test's title, for the blamed sessions' replay. */
  title: string;
}): Promise<void> {
  const opening = readOpening(coordination);
  if (!opening) notVerifiable('the run scraped nothing as the owner team, so the account was never opened');
  if ('unavailable' in opening) notVerifiable(`the owner team's account could not be used: ${opening.unavailable}`);
  const spending = ledger.spending(api.target.baseURL, identities.owner.name);
  const expected =
    spending.settlements.reduce((sum, session) => sum + session.settled.reduce((total, one) => total + one.credits, 0), 0) + spending.scrapes.credits;
  // Sessions stopped by answers without a charge may have cost anything up to what their lives bill at most.
  const unstated = unstatedMost(spending, settings.declaredBilling?.rule);
  const closing = await step(`read the account until the run's charges have landed (at most ${settings.accountSettleMs} ms)`, () =>
    settleAccount(api, identities.owner, opening.remaining - expected - unstated / 2, accountTolerance(spending) + unstated / 2, settings),
  );
  await attach('account', JSON.stringify({ opening: opening.remaining, readings: closing.readings, ...spending }, null, 2));
  let verdict = judgeAccount(
    opening.remaining,
    { remaining: closing.readings.at(-1)!.remaining, still: closing.still },
    spending,
    settings.accountSettleMs,
    undefined,
    settings.declaredBilling?.rule,
  );
  if (verdict.outcome === 'not verifiable' && spending.scrapes.unpriced && closing.still && opening.remaining - closing.readings.at(-1)!.remaining > expected) {
    // The scrapes' answers gave no price: one scrape alone tells it, then the run is judged at that price.
    extendTimeout(3 * settings.accountSettleMs + 4 * settings.requestTimeoutMs);
    const price = await step('one scrape alone: its price, as the account shows it', () =>
      measureScrapePrice(api, identities.owner, () => sessions.jobWithoutSession(), settings),
    );
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
  let charged: ComposedReproduction | undefined;
  const chargedAsSettled = () =>
    check(
      'charged-as-settled',
      () => expect(verdict.outcome, verdict.message).toBe('pass'),
      () => charged,
    );
  // Its reproduction: the requests of the sessions charged again, between two readings of the account.
  const readings = requestTrace.steps.filter((step) => step.path === CREDIT_USAGE_PATH);
  // Each job's requests in the test that created it, then in the sweep for leaks (which may have stopped a session opened there).
  const partsOf = (jobId: string) =>
    [ledger.creatorOf(api.target.baseURL, jobId) ?? '', 'stop-is-final/no-leaks'].map((test) =>
      stepsOfJob(coordination.loadTrace<TraceStep>(test) ?? [], jobId),
    );
  const composeFor = (jobs: string[]) => composeAccount([[ACCOUNT_READING], ...jobs.flatMap(partsOf), readings], settings.accountSettleMs);
  // Sessions blamed by the sum of their settlements may add up to the excess by chance: replayed alone, they must be charged again.
  // Where they are not, the next set that adds up to it is replayed.
  for (const blamed of verdict.outcome === 'fail' ? (verdict.blames ?? []) : []) {
    const composed = composeFor(blamed.jobs);
    if (!composed) continue;
    // The replay's sessions come out of the run's budget, as every other session does.
    if (!sessions.fromBudget(blamed.jobs.length)) {
      verdict = {
        outcome: 'not verifiable',
        message: `${blamed.message}; replaying the ${blamed.jobs.length} session(s) blamed alone would take as many of the session budget, which has ${sessions.budgetLeft()} left`,
      };
      break;
    }
    charged = composed;
    extendTimeout(replayBudgetMs(composed, settings));
    const confirmed = await step(`the sessions blamed (${blamed.jobs.join(', ')}), replayed alone: the account must be charged again`, () =>
      confirmBlame(settings, api.target, identities, ledger, { outcome: 'fail', message: blamed.message }, composed, title),
    );
    await attach('the blamed sessions replayed', confirmed.output, 'text/plain');
    note(confirmed.note);
    verdict = confirmed.verdict;
    if (verdict.outcome !== 'not verifiable') break;
  }
  if (verdict.outcome === 'not verifiable' && closing.still) {
    // More or less than the run explains: one session alone, refused as the run's sessions were, tells a target that charges other than it reports from another use of the team.
    extendTimeout(2 * settings.accountSettleMs + 6 * settings.requestTimeoutMs + PROBE_HOLD_MS);
    const probeStart = requestTrace.steps.length;
    const probed = await step(
      `one session alone, held ${PROBE_HOLD_MS} ms and refused by another team and without a key before its owner stops it twice (the first time beside another team's request): the account must move by exactly what its scrape and its first stop report`,
      () =>
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
                // Another team's request while the first stop is served, or right after it: the charge is still the owner's.
                const first = api.stop(session.jobId, identities.owner);
                await sleep(BESIDE_A_STOP_MS, undefined, { signal: api.signal });
                await Promise.all([first, api.stop(randomUUID(), identities.foreign, { on429: 'once' })]);
                await api.stop(session.jobId, identities.owner);
                return first;
              },
            };
          },
          settings,
        ),
    );
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
    extendTimeout(3 * settings.accountSettleMs + 6 * settings.requestTimeoutMs);
    const probeStart = requestTrace.steps.length;
    const side = await step("the foreign team's account moved by its own spending alone (else one session it refuses, alone)", () =>
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
      ),
    );
    if (side.note) note(side.note);
    await check(
      'refusals-charge-nobody',
      () => expect(side.failure, side.failure).toBeUndefined(),
      () => (side.failure ? refuserUncharged(composeAccount([requestTrace.steps.slice(probeStart)], settings.accountSettleMs, true)) : undefined),
    );
  }
  if (verdict.outcome === 'not verifiable') notVerifiable(verdict.message);
  note(verdict.message);
  await chargedAsSettled();
}
