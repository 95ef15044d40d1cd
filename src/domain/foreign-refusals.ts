/**
 * The foreign team's refused stops, as rules 3 and 9 judge them: one chain (refusal-chain.ts) whose
 * session survives the foreign team's refusals, with the tests that judge what those refusals say.
 */
import type { Check } from '../checks/checks';
import { step } from '../checks/recorder';
import type { TestId } from '../config/rules';
import type { Client } from './client';
import { judge } from './named-checks';
import type { Observer, Seen } from './refusal-chain';
import type { Sessions } from './sessions';
import type { Identities } from './target';

export interface ForeignContext {
  api: Client;
  sessions: Sessions;
  identities: Identities;
  check: Check;
}

export function foreignChain({ api, sessions, identities, check }: ForeignContext) {
  const { foreign } = identities;
  const ask = (jobId: string) => step('the foreign team asks to stop the session', () => api.stop(jobId, foreign));
  const first = (seen: Seen) => seen.answersOf(foreign)[0]!;
  const observer = (id: TestId, checks: Observer['checks'], alone: Observer['alone'], otherJob?: true): Observer => ({
    id,
    refusers: [foreign],
    checks,
    alone,
    ...(otherJob ? { otherJob } : {}),
  });
  return {
    links: [
      {
        id: 'foreign-team/survives' as const,
        refuser: foreign,
        refused: (answers: Parameters<typeof judge.refused>[0]) => judge.refused(answers, 403),
        interactAfter: true as const,
      },
    ],
    observers: [
      observer(
        'foreign-team/forbidden',
        (seen) => [
          ['status', judge.status(first(seen), 403)],
          ['schema', judge.schema(first(seen), 'error')],
        ],
        async (session) => {
          const refused = await ask(session.jobId);
          await check('status', judge.status(refused, 403));
          await check('schema', judge.schema(refused, 'error'));
        },
      ),
      observer(
        'foreign-team/reveals-nothing',
        (seen) => [
          ['refused', judge.refused([first(seen)], 403)],
          ['reveals-nothing', judge.revealsNothing([first(seen)], [seen.created, seen.otherJob!], identities.ownerTeam, seen.jobId)],
        ],
        async (session) => {
          const otherJob = await step('the owner creates another scrape job', () => sessions.jobWithoutSession());
          const refused = await ask(session.jobId);
          await check('refused', judge.refused([refused], 403));
          await check('reveals-nothing', judge.revealsNothing([refused], [session.created, otherJob.scrape], identities.ownerTeam, session.jobId));
        },
        true,
      ),
      observer(
        'json-answers/forbidden',
        (seen) => [
          ['status', judge.status(first(seen), 403)],
          ['json-error', judge.jsonError(first(seen))],
        ],
        async (session) => {
          const refused = await ask(session.jobId);
          await check('status', judge.status(refused, 403));
          await check('json-error', judge.jsonError(refused));
        },
      ),
    ],
  };
}
