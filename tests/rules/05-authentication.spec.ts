import type { Check } from '../../src/checks/checks';
import { notVerifiable } from '../../src/checks/checks';
import { spec, type TestId } from '../../src/config/rules';
import type { Settings } from '../../src/config/settings';
import type { Answer, Client } from '../../src/domain/client';
import { judge } from '../../src/domain/named-checks';
import { type Link, type Observer, refusedInChain } from '../../src/domain/refusal-chain';
import type { Sessions } from '../../src/domain/sessions';
import type { Identities, IdentityName } from '../../src/domain/target';
import { test } from '../../src/playwright/fixtures';

const refusals: { id: TestId; who: IdentityName; title: string; schemeWord?: true }[] = [
  { id: 'authentication/no-key', who: 'noKey', title: 'a stop without an Authorization header' },
  { id: 'authentication/empty-token', who: 'emptyToken', title: 'a stop with "Bearer" and no token' },
  { id: 'authentication/garbage', who: 'garbage', title: 'a stop with a garbage Authorization value' },
  { id: 'authentication/unknown-key', who: 'unknownKey', title: 'a stop with an unknown, well-formed key' },
  { id: 'authentication/key-case-changed', who: 'keyCaseChanged', title: "a stop with the owner's key with the case of its letters changed" },
  { id: 'authentication/key-extended', who: 'keyExtended', title: "a stop with the owner's key with characters appended" },
  { id: 'authentication/key-truncated', who: 'keyTruncated', title: "a stop with the owner's key without its last character" },
  { id: 'authentication/basic-scheme', who: 'basicScheme', title: "a stop with the owner's key under the Basic scheme", schemeWord: true },
  { id: 'authentication/token-scheme', who: 'tokenScheme', title: "a stop with the owner's key under the Token scheme", schemeWord: true },
];

// Another scheme word is refused, or taken as the target's known-deviations file declares (refusal-checks.ts).
const links = (identities: Identities, settings: Settings): Link[] =>
  refusals
    .filter(({ who }) => who !== 'keyCaseChanged' || identities.keyCaseChanged.authorization)
    .map(({ id, who, schemeWord }) => ({
      id,
      refuser: identities[who],
      refused: (answers: Answer[]) => (schemeWord ? judge.schemeRefused(answers, settings.declaredSchemeWord) : judge.refused(answers)),
    }));

/** What a refusal of three of them says, judged on the chain's answers or alone. */
const revealing = ['noKey', 'unknownKey', 'keyTruncated'] as const;
const revealsNothing = ({ api, sessions, identities, check }: { api: Client; sessions: Sessions; identities: Identities; check: Check }): Observer => ({
  id: 'authentication/reveals-nothing',
  refusers: revealing.map((who) => identities[who]),
  otherJob: true,
  checks: (seen) => {
    const answers = revealing.map((who) => seen.answersOf(identities[who])[0]!);
    return [
      ['refused', judge.refused(answers)],
      ['reveals-nothing', judge.revealsNothing(answers, [seen.created, seen.otherJob!], identities.ownerTeam, seen.jobId)],
    ];
  },
  alone: async (session) => {
    const otherJob = await test.step('the owner creates another scrape job', () => sessions.jobWithoutSession());
    const answers: Answer[] = [];
    for (const who of revealing)
      answers.push(await test.step(`${identities[who].name} asks to stop the session`, () => api.stop(session.jobId, identities[who])));
    await check('refused', judge.refused(answers));
    await check('reveals-nothing', judge.revealsNothing(answers, [session.created, otherJob.scrape], identities.ownerTeam, session.jobId));
  },
});

// In order, in one worker: the first refusal's test runs the chain the others read (refusal-chain.ts).
test.describe(() => {
  test.describe.configure({ mode: 'default' });
  for (const { id, who, title } of refusals) {
    test(`${title} answers 4xx, at any moment of the session's life, and changes nothing`, spec(id), async ({ api, sessions, identities, settings, check }) => {
      if (who === 'keyCaseChanged' && !identities.keyCaseChanged.authorization) notVerifiable("the owner's key has no letter whose case could change");
      const chain = { links: links(identities, settings), observers: [revealsNothing({ api, sessions, identities, check })] };
      await refusedInChain({ api, sessions, check, settings, owner: identities.owner }, 'authentication', chain, id);
    });
  }
  test(
    "a refusal of a request without a valid key carries no billing and nothing of the owner's",
    spec('authentication/reveals-nothing'),
    async ({ api, sessions, identities, settings, check }) => {
      const chain = { links: links(identities, settings), observers: [revealsNothing({ api, sessions, identities, check })] };
      await refusedInChain({ api, sessions, check, settings, owner: identities.owner }, 'authentication', chain, 'authentication/reveals-nothing');
    },
  );
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
