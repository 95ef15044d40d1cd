import { spec } from '../../src/config/rules';
import { judgedInChain } from '../../src/domain/chain-members';
import { test } from '../../src/playwright/fixtures';

// Judged on the chain of requests that must change nothing, through one session's life (chain-members.ts).
const tests = [
  { id: 'unknown-job/random-uuid', title: 'a stop of a random job id that was never provisioned answers 404 with an error body' },
  { id: 'unknown-job/job-without-session', title: 'a stop of a scrape job that never had a browser session answers 404 with an error body' },
  {
    id: 'unknown-job/others-survive',
    title:
      "a stop of a job with no session, sent while the owner's session on another job runs, changes nothing: that session runs on, and its stop answers 200 for its whole life",
  },
] as const;

for (const { id, title } of tests)
  test(title, spec(id), async ({ api, sessions, identities, settings, check }) => judgedInChain({ api, sessions, identities, settings, check }, id));
