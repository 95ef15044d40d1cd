/**
 * The `test` every spec imports, composed from small fixture groups, each answering one question:
 * - targetFixtures: which target, with which settings and identities;
 * - clientFixtures: how a test talks to it (`api`), and the run ledger;
 * - checkFixtures (checks.ts): which test this is (`testId`) and its named checks (`check`);
 * - sessionFixtures: the sessions a test provisions, always stopped afterwards;
 * - sequenceFixtures: the seed of the sequences rule's random histories.
 * This layer alone speaks to Playwright: the library records its steps through the recorder it
 * installs (recorder.ts).
 */

import type { Fixtures } from '@playwright/test';
import * as playwright from '@playwright/test';
import './recorder';
import { RunError } from '../config/errors';
import type { TestId } from '../config/rules';
import { loadSettings, type Settings, withKnownDeviations } from '../config/settings';
import { Coordination } from '../coordination/coordination';
import { predict } from '../domain/budget';
import { type Client, createClient } from '../domain/client';
import { Ledger, ledgerFile } from '../domain/ledger';
import { type Session, Sessions } from '../domain/sessions';
import { burstHasOwnTeam, type Identities, identitiesFor, type Target, targetFrom } from '../domain/target';
import { Trace } from '../reproduction/trace';
import { checkFixtures } from './checks';

export { expect } from '../checks/expect';

/**
 * The burst's lock: on a third team's limit, apart from other bursts only; on the owner's, Playwright's
 * "-exclusive-" lock (it runs once no other test is running). Decided here, where the settings are read.
 */
export const burstLock = () => (burstHasOwnTeam(loadSettings()) ? 'rate-limit-burst' : '-exclusive-');

const targetFixtures: Fixtures<
  { target: Target; identities: Identities; minuteHoldMs: number },
  { settings: Settings; knownDeviationsFile: string | undefined; sessionCap: number | undefined }
> = {
  /** For the kit's variant matrix: the known-deviations file of this worker's target, in place of KNOWN_DEVIATIONS, and its stated cap. */
  knownDeviationsFile: [undefined, { scope: 'worker', option: true }],
  sessionCap: [undefined, { scope: 'worker', option: true }],
  settings: [
    async ({ knownDeviationsFile, sessionCap }, use) => {
      const settings = knownDeviationsFile ? withKnownDeviations(loadSettings(), knownDeviationsFile) : loadSettings();
      await use(sessionCap === undefined ? settings : { ...settings, sessionCap });
    },
    { scope: 'worker' },
  ],
  // An option of each test, not of the worker: the variant matrix aims the tests of many variants at their own servers in shared workers.
  target: [async ({ settings }, use) => use(targetFrom(settings)), { option: true }],
  identities: async ({ target, settings }, use) => use(identitiesFor(target, settings)),
  // An option of each test too: the variant matrix holds past a minute only where a variant's billing changes there.
  minuteHoldMs: [async ({ settings }, use) => use(settings.billingMinuteHoldMs), { option: true }],
};

/** A test's client, attaching to its report; cancelled when the test ends. */
const clientFixtures: Fixtures<
  { api: Client; requestTrace: Trace; coordination: Coordination },
  { ledger: Ledger },
  { target: Target; identities: Identities },
  { settings: Settings }
> = {
  /** Every request of the test, for its reproduction. */
  requestTrace: async ({}, use) => use(new Trace()),
  /** What the test shares with the run's other workers about its target (src/coordination/coordination.ts). */
  coordination: async ({ settings, target }, use) => use(new Coordination(settings.reportsDir, target.baseURL, settings.rateLimit)),

  ledger: [async ({ settings }, use) => use(new Ledger(ledgerFile(settings.reportsDir))), { scope: 'worker' }],

  // `identities` first: it registers the keys for redaction before any request.
  api: async ({ target, settings, ledger, coordination, requestTrace: trace, identities: _ }, use, testInfo) => {
    const api = createClient({
      target,
      settings,
      ledger,
      coordination,
      endsRunOnHang: true,
      onAnswer: (answer, request) => trace.record(answer, request),
      attach: (name, body) => testInfo.attach(name, { body, contentType: 'application/json' }),
    });
    await use(api);
    api.cancel();
    // After the sessions' teardown, which used this test's client too: the tally includes its stops.
    coordination.recordSpend();
  },
};

const sessionFixtures: Fixtures<
  { sessions: Sessions; session: Session },
  object,
  { api: Client; testId: TestId; target: Target; identities: Identities },
  { settings: Settings; ledger: Ledger }
> = {
  sessions: async ({ api, identities, settings, ledger, target, testId }, use, testInfo) => {
    // The prediction is the most the run opens: second tries come out of it, never past it. Shards and the burst's run after them
    // share the whole run's budget (one folder of tickets), each with a prediction of its own part.
    const { sessions: predicted, budget, needed } = predict(settings);
    const most = settings.budgetFolder ? budget : predicted;
    const sessions = new Sessions({ api, identities, settings, ledger, testId, signal: api.signal, budget: { sessions: most, needed } });
    await use(sessions);
    // The test is over (or abandoned): end its requests and waits, then stop what it left running.
    api.cancel();
    const cleaner = createClient({
      target,
      settings,
      ledger,
      coordination: api.coordination,
      attach: (name, body) => testInfo.attach(`cleanup: ${name}`, { body, contentType: 'application/json' }),
    });
    const problems = await sessions.cleanup(cleaner);
    if (problems.length) throw new RunError(`Could not stop ${problems.length} session(s) this test created: ${problems.join(', ')}`);
  },

  session: async ({ sessions }, use) => use(await sessions.provision()),
};

/**
 * The seeds of the histories (SEQUENCE_SEED, or one random seed) and how many histories each
 * runs (SEQUENCE_RUNS): options, so that the variant matrix can set them variant by variant.
 */
const sequenceFixtures: Fixtures<{ sequenceSeeds: number[]; sequenceRuns: number }, object, object, { settings: Settings }> = {
  sequenceSeeds: [async ({ settings }, use) => use(settings.sequenceSeeds ?? [Math.floor(Math.random() * 2 ** 31)]), { option: true }],
  sequenceRuns: [async ({ settings }, use) => use(settings.sequenceRuns), { option: true }],
};

// Playwright's test without its browser fixtures, where the installed Playwright has it: no browser
// driver in each worker, and no trace recorder or context options around each test. The suite calls
// the target with its own client.
const base: playwright.TestType<object, object> = (playwright as { _baseTest?: playwright.TestType<object, object> })._baseTest ?? playwright.test;

export const test = base.extend(targetFixtures).extend(clientFixtures).extend(checkFixtures).extend(sessionFixtures).extend(sequenceFixtures);
