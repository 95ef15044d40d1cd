import { spec } from '../../src/config/rules';
import { HOLDS, heldAndStopped } from '../../src/domain/billing-holds';
import { test } from '../../src/playwright/fixtures';

// Longest first: it starts at once and the run waits for nothing else.
for (const { id, title } of HOLDS)
  test(
    `credits billed for a session ${title} are 2 per minute prorated by the second of its measured life`,
    spec(id),
    async ({ api, sessions, identities, settings, minuteHoldMs, check }) => heldAndStopped({ api, sessions, identities, settings, minuteHoldMs, check }, id),
  );
