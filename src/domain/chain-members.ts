import { step } from '../checks/recorder';
import type { TestId } from '../config/rules';
import type { Answer } from './answer';
import { judge } from './named-checks';
import { type Link, type Observer, refusedInChain, type Seen } from './refusal-chain';
import type { TestContext } from './shared-run';
import type { IdentityName } from './target';
import { unknownJobAlone } from './unknown-jobs';

export const AUTH_REFUSALS: { id: TestId; who: IdentityName; title: string; schemeWord?: true }[] = [
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

/** The chains, by the tests they prove. */
const CHAINS: Record<string, TestId[]> = {
  'unknown-jobs': ['unknown-job/others-survive', 'unknown-job/random-uuid', 'unknown-job/job-without-session', 'json-answers/not-found'],
  foreign: ['foreign-team/survives', 'foreign-team/forbidden', 'foreign-team/reveals-nothing', 'json-answers/forbidden'],
  keyless: [...AUTH_REFUSALS.map(({ id }) => id), 'authentication/reveals-nothing'],
};

/** Test `id` judged on its chain. */
export function judgedInChain(context: TestContext, id: TestId): Promise<void> {
  const name = Object.keys(CHAINS).find((chain) => CHAINS[chain]!.includes(id));
  if (!name) throw new Error(`${id} is in no chain`);
  const { links, observers } = members(context);
  const of = (member: { id: TestId }) => CHAINS[name]!.includes(member.id);
  const { api, sessions, settings, check, identities } = context;
  return refusedInChain({ api, sessions, settings, check, owner: identities.owner }, name, { links: links.filter(of), observers: observers.filter(of) }, id);
}

/** Every member of every chain, as `context`'s test sees them. */
function members(context: TestContext): { links: Link[]; observers: Observer[] } {
  const { api, sessions, identities, settings, check } = context;
  const { foreign } = identities;
  const first = (seen: Seen) => seen.answersOf(foreign)[0]!;
  const ownSession = () => step('a session of its own', () => sessions.provision());
  const foreignAsks = (jobId: string) => step('the foreign team asks to stop the session', () => api.stop(jobId, foreign));
  const revealing = ['noKey', 'unknownKey', 'keyTruncated'] as const;
  // Another scheme word is refused, or taken as the target's known-deviations file declares (refusal-checks.ts).
  const authLinks: Link[] = AUTH_REFUSALS.filter(({ who }) => who !== 'keyCaseChanged' || identities.keyCaseChanged.authorization).map(
    ({ id, who, schemeWord }) => ({
      id,
      refuser: identities[who],
      refused: (answers: Answer[]) => (schemeWord ? judge.schemeRefused(answers, settings.declaredSchemeWord) : judge.refused(answers)),
    }),
  );
  const unknownJob = (id: TestId, checks: Observer['checks'], otherJob?: true): Observer => ({
    id,
    refusers: [],
    checks,
    alone: () => unknownJobAlone(context, id),
    ...(otherJob ? { otherJob } : {}),
  });
  return {
    links: [
      {
        id: 'unknown-job/others-survive',
        others: true,
        checkName: 'status',
        refused: ([random, withoutSession]) => judge.all([judge.status(random!, 404), judge.status(withoutSession!, 404)]),
        alone: () => unknownJobAlone(context, 'unknown-job/others-survive'),
      },
      { id: 'foreign-team/survives', refuser: foreign, refused: (answers) => judge.refused(answers, 403), interactAfter: true },
      ...authLinks,
    ],
    observers: [
      unknownJob('unknown-job/random-uuid', ({ random }) => [
        ['status', judge.status(random, 404)],
        ['schema', judge.schema(random, 'error')],
      ]),
      unknownJob('json-answers/not-found', ({ random }) => [
        ['status', judge.status(random, 404)],
        ['json-error', judge.jsonError(random)],
      ]),
      unknownJob(
        'unknown-job/job-without-session',
        ({ withoutSession }) => [
          ['status', judge.status(withoutSession!, 404)],
          ['schema', judge.schema(withoutSession!, 'error')],
        ],
        true,
      ),
      {
        id: 'foreign-team/forbidden',
        refusers: [foreign],
        checks: (seen) => [
          ['status', judge.status(first(seen), 403)],
          ['schema', judge.schema(first(seen), 'error')],
        ],
        alone: async () => {
          const refused = await foreignAsks((await ownSession()).jobId);
          await check('status', judge.status(refused, 403));
          await check('schema', judge.schema(refused, 'error'));
        },
      },
      {
        id: 'json-answers/forbidden',
        refusers: [foreign],
        checks: (seen) => [
          ['status', judge.status(first(seen), 403)],
          ['json-error', judge.jsonError(first(seen))],
        ],
        alone: async () => {
          const refused = await foreignAsks((await ownSession()).jobId);
          await check('status', judge.status(refused, 403));
          await check('json-error', judge.jsonError(refused));
        },
      },
      {
        id: 'foreign-team/reveals-nothing',
        refusers: [foreign],
        otherJob: true,
        checks: (seen) => [
          ['refused', judge.refused([first(seen)], 403)],
          ['reveals-nothing', judge.revealsNothing([first(seen)], [seen.created, seen.otherJob!], identities.ownerTeam, seen.jobId)],
        ],
        alone: async () => {
          const otherJob = await step('the owner creates another scrape job', () => sessions.jobWithoutSession());
          const session = await ownSession();
          const refused = await foreignAsks(session.jobId);
          await check('refused', judge.refused([refused], 403));
          await check('reveals-nothing', judge.revealsNothing([refused], [session.created, otherJob.scrape], identities.ownerTeam, session.jobId));
        },
      },
      {
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
        alone: async () => {
          const otherJob = await step('the owner creates another scrape job', () => sessions.jobWithoutSession());
          const session = await ownSession();
          const answers: Answer[] = [];
          for (const who of revealing)
            answers.push(await step(`${identities[who].name} asks to stop the session`, () => api.stop(session.jobId, identities[who])));
          await check('refused', judge.refused(answers));
          await check('reveals-nothing', judge.revealsNothing(answers, [session.created, otherJob.scrape], identities.ownerTeam, session.jobId));
        },
      },
    ],
  };
}
