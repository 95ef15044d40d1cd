/**
 * The owner's key in lower case where HTTP allows it, on one session (shared-run.ts): an interact
 * under the header name `authorization` (RFC 9110 §5.1), then a stop under the scheme `bearer` (§11.1).
 */
import { step } from '../checks/recorder';
import { judge } from './named-checks';
import { judgedShared, type Parts, type TestContext } from './shared-run';

type LowerCaseTest = 'authentication/lower-case-header-name' | 'authentication/lower-case-bearer';
const TESTS: LowerCaseTest[] = ['authentication/lower-case-header-name', 'authentication/lower-case-bearer'];

/** Test `id`'s part, judged on the session both tests share. */
export const lowerCase = (context: TestContext, id: LowerCaseTest) =>
  judgedShared(context, 'lower-case', TESTS, (tests) => run(context, tests as LowerCaseTest[]), id);

async function run({ api, sessions, identities }: TestContext, tests: LowerCaseTest[]): Promise<Parts> {
  const session = await step('provision a session', () => sessions.provision());
  const judged: Parts = {};
  if (tests.includes('authentication/lower-case-header-name')) {
    const interact = await step('the owner interacts with the header named "authorization"', () =>
      sessions.interact({ jobId: session.jobId, owner: identities.lowerCaseHeader }),
    );
    // Behind an HTTP/2 proxy every header name arrives in lower case.
    judged['authentication/lower-case-header-name'] = [['status', judge.status(interact, 200, 'header names are case-insensitive (RFC 9110 §5.1)')]];
  }
  if (tests.includes('authentication/lower-case-bearer')) {
    const stop = await step('the owner stops the session with "bearer <key>"', () => api.stop(session.jobId, identities.lowerCaseBearer));
    judged['authentication/lower-case-bearer'] = [
      ['status', judge.status(stop, 200, 'auth schemes are case-insensitive (RFC 9110 §11.1)')],
      ['schema', judge.schema(stop, 'stop-result')],
    ];
  }
  return judged;
}
