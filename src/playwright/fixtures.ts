/**
 * The `test` every spec imports, composed from small fixture groups, each answering one question:
 * - targetFixtures (target.ts): which target, with which settings and identities;
 * - clientFixtures (client.ts): how a test talks to it (`api`), and the run ledger;
 * - checkFixtures (checks.ts): which test this is (`testId`) and its named checks (`check`);
 * - sessionFixtures (sessions.ts): the sessions a test provisions, always stopped afterwards;
 * - sequenceFixtures (sequences.ts): the seed of the sequences rule's random histories.
 */
import * as playwright from '@playwright/test';
import { checkFixtures } from '../checks/checks';
import { clientFixtures } from '../domain/client';
import { sequenceFixtures } from '../sequences/sequences';
import { sessionFixtures } from '../domain/sessions';
import { targetFixtures } from '../domain/target';

export { expect } from '../checks/expect';

// Playwright's test without its browser fixtures, where the installed Playwright has it: no browser
// driver in each worker, and no trace recorder or context options around each test. The suite calls
// the target with its own client.
const base: playwright.TestType<object, object> = (playwright as { _baseTest?: playwright.TestType<object, object> })._baseTest ?? playwright.test;

export const test = base.extend(targetFixtures).extend(clientFixtures).extend(checkFixtures).extend(sessionFixtures).extend(sequenceFixtures);
