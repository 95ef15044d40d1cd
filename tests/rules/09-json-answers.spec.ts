import { randomUUID } from 'node:crypto';
import { notVerifiable } from '../../src/checks/checks';
import { spec } from '../../src/config/rules';
import { judgedInChain } from '../../src/domain/chain-members';
import type { Answer } from '../../src/domain/client';
import { judge } from '../../src/domain/named-checks';
import { test } from '../../src/playwright/fixtures';

// Judged on the chain of requests that must change nothing (chain-members.ts).
for (const { id, title } of [
  { id: 'json-answers/not-found', title: 'a 404 answer is application/json with success false and a short single-line error' },
  { id: 'json-answers/forbidden', title: 'a 403 answer is application/json with success false and a short single-line error' },
] as const)
  test(title, spec(id), async ({ api, sessions, identities, settings, check }) => judgedInChain({ api, sessions, identities, settings, check }, id));

/**
 * A keyless tier may refuse with its own 429, whose body the specification does not fix: the
 * request is retried within the back-off budget, and a 429 to the end makes the test not verifiable.
 */
function unlessRateLimited(answer: Answer): void {
  if (answer.status === 429)
    notVerifiable(
      'the request without a valid key was answered 429 (rate limited) to the end of the back-off budget, not with an authentication refusal whose body could be checked',
    );
}

test(
  'the refusal of a request without a key is application/json with success false and a short single-line error',
  spec('json-answers/no-key'),
  async ({ api, identities, check }) => {
    const stop = await api.stop(randomUUID(), identities.noKey, { on429: 'return-last' });
    unlessRateLimited(stop);
    await check('json-error', judge.jsonError(stop));
  },
);

test(
  'the refusal of an unknown key is application/json with success false and a short single-line error',
  spec('json-answers/unknown-key'),
  async ({ api, identities, check }) => {
    const stop = await api.stop(randomUUID(), identities.unknownKey, { on429: 'return-last' });
    unlessRateLimited(stop);
    await check('json-error', judge.jsonError(stop));
  },
);

test(
  'the refusal of a malformed jobId is application/json with success false and a short single-line error',
  spec('json-answers/malformed-job-id'),
  async ({ api, identities, check }) => {
    const stop = await api.stop('not-a-uuid', identities.owner);
    await check('json-error', judge.jsonError(stop));
  },
);
