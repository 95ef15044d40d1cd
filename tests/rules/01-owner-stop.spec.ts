import { spec } from '../../src/config/rules';
import { heldAndStopped } from '../../src/domain/billing-holds';
import { test } from '../../src/playwright/fixtures';

// Judged on the stop of rule 2's short hold (billing-holds.ts).
test(
  "the owner's stop answers 200 with a JSON stop result and success true",
  spec('owner-stop/answers-200'),
  async ({ api, sessions, identities, settings, minuteHoldMs, check }) =>
    heldAndStopped({ api, sessions, identities, settings, minuteHoldMs, check }, 'owner-stop/answers-200'),
);
