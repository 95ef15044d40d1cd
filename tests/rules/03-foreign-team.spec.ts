import { spec } from '../../src/config/rules';
import { judgedInChain } from '../../src/domain/chain-members';
import { test } from '../../src/playwright/fixtures';

// Judged on the chain of requests that must change nothing, through one session's life (chain-members.ts).
const tests = [
  { id: 'foreign-team/forbidden', title: "a foreign team's stop answers 403 with an error body" },
  {
    id: 'foreign-team/survives',
    title:
      "a foreign team's refused stop, at any moment of the session's life, changes nothing: the owner uses the session on, and its stop answers 200 for the whole session",
  },
  {
    id: 'foreign-team/reveals-nothing',
    title: "a foreign team's 403 carries no billing and nothing of the owner's: no duration, no credits, no team, no other job",
  },
] as const;

for (const { id, title } of tests)
  test(title, spec(id), async ({ api, sessions, identities, settings, check }) => judgedInChain({ api, sessions, identities, settings, check }, id));
