import { notVerifiable } from '../../src/checks/checks';
import { spec } from '../../src/config/rules';
import { AUTH_REFUSALS, judgedInChain } from '../../src/domain/chain-members';
import { judge } from '../../src/domain/named-checks';
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

test(
  "a stop with the owner's key under a lower-case bearer scheme is accepted with 200",
  spec('authentication/lower-case-bearer'),
  async ({ api, session, identities, check }) => {
    const stop = await test.step('the owner stops the session with "bearer <key>"', () => api.stop(session.jobId, identities.lowerCaseBearer));
    await check('status', judge.status(stop, 200, 'auth schemes are case-insensitive (RFC 9110 §11.1)'));
    await check('schema', judge.schema(stop, 'stop-result'));
  },
);
