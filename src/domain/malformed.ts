/**
 * Rule 8's stops of malformed jobIds. The stop of "not-a-uuid" is also rule 9's malformed-job-id
 * (shared-run.ts): one request, two tests.
 */
import { randomUUID } from 'node:crypto';
import type { TestId } from '../config/rules';
import type { Answer } from './answer';
import { type CheckCall, judge } from './named-checks';
import { judgedShared, type Parts, type SharedContext } from './shared-run';
import type { Identity } from './target';

const CLOSED = 'the target closed the connection without answering this stop, though it answers the next: a malformed jobId must get a 4xx answer';

export function malformedStop(context: SharedContext, as: Identity, jobId: string, id: TestId): Promise<void> {
  const tests: TestId[] = jobId === 'not-a-uuid' ? ['malformed-job-id/not-a-uuid', 'json-answers/malformed-job-id'] : [id];
  return judgedShared(context, `malformed-${tests[0]}`, tests, () => run(context, as, jobId, tests[0]!), id);
}

async function run({ api }: SharedContext, as: Identity, jobId: string, id: TestId): Promise<Parts> {
  const stop: Answer | undefined = await api.stop(jobId, as).catch(async (error) => {
    // A connection closed on this request alone, while the target answers the next: the target's, not the network's.
    if (!/ECONNRESET|socket hang up/.test(String(error)) || (await api.stop(randomUUID(), as)).status >= 500) throw error;
    return undefined;
  });
  const unanswered: CheckCall = judge.unanswered(CLOSED);
  return {
    [id]: [['status', stop ? judge.clientError(stop) : unanswered]],
    'json-answers/malformed-job-id': [['json-error', stop ? judge.jsonError(stop) : unanswered]],
  };
}
