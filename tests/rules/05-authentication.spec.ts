import { notVerifiable } from '../../src/checks/checks';
import { spec } from '../../src/config/rules';
import { AUTH_REFUSALS, judgedInChain } from '../../src/domain/chain-members';
import { lowerCase } from '../../src/domain/lower-case';
import { test } from '../../src/playwright/fixtures';

// In order, in one worker: whichever of the chain's tests asks first runs it, and the others read it (refusal-chain.ts, chain-members.ts).
test.describe(() => {
  test.describe.configure({ mode: 'default' });
  const tests = [
    ...AUTH_REFUSALS.map(({ id, title }) => ({ id, title: `${title} answers 4xx, at any moment of the session's life, and changes nothing` })),
    { id: 'authentication/reveals-nothing' as const, title: "a refusal of a request without a valid key carries no billing and nothing of the owner's" },
  ];
  for (const { id, title } of tests)
    test(title, spec(id), async ({ api, sessions, identities, settings, check }) => {
      if (id === 'authentication/key-case-changed' && !identities.keyCaseChanged.authorization)
        notVerifiable("the owner's key has no letter whose case could change");
      await judgedInChain({ api, sessions, identities, settings, check }, id);
    });
});

// One session, stopped under the header name and the scheme word in lower case at once (lower-case.ts).
const lowerCaseTests = [
  { id: 'authentication/lower-case-header-name' as const, title: 'a stop with the owner\'s key under the header name "authorization" is accepted with 200' },
  { id: 'authentication/lower-case-bearer' as const, title: "a stop with the owner's key under a lower-case bearer scheme is accepted with 200" },
];
for (const { id, title } of lowerCaseTests)
  test(title, spec(id), async ({ api, sessions, identities, settings, check }) => lowerCase({ api, sessions, identities, settings, check }, id));
