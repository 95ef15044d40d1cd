/**
 * The owner's key in lower case where HTTP allows it, on one session (shared-run.ts): its stop under
 * the header name `authorization` (RFC 9110 §5.1) and the scheme `bearer` (§11.1) at once. Refused, the
 * session is stopped under each alone in turn, so that the test whose part was refused fails.
 */
import { step } from '../checks/recorder';
import type { Answer } from './answer';
import { judge } from './named-checks';
import { judgedShared, type Parts, type TestContext } from './shared-run';

type LowerCaseTest = 'authentication/lower-case-header-name' | 'authentication/lower-case-bearer';
const TESTS: LowerCaseTest[] = ['authentication/lower-case-header-name', 'authentication/lower-case-bearer'];

/** Test `id`'s part, judged on the session both tests share. */
export const lowerCase = (context: TestContext, id: LowerCaseTest) =>
  judgedShared(context, 'lower-case', TESTS, (tests) => run(context, tests as LowerCaseTest[]), id);

async function run({ api, sessions, identities }: TestContext, tests: LowerCaseTest[]): Promise<Parts> {
  const session = await step('provision a session', () => sessions.provision());
  const header = tests.includes('authentication/lower-case-header-name');
  const bearer = tests.includes('authentication/lower-case-bearer');
  const stopAs = (who: 'lowerCaseBoth' | 'lowerCaseHeader' | 'lowerCaseBearer', title: string) =>
    step(`the owner stops the session ${title}`, () => api.stop(session.jobId, identities[who]));
  let byHeader: Answer | undefined;
  let byBearer: Answer | undefined;
  const both = header && bearer ? await stopAs('lowerCaseBoth', 'with "authorization: bearer <key>"') : undefined;
  if (both?.status === 200) byHeader = byBearer = both;
  if (bearer && !byBearer) byBearer = await stopAs('lowerCaseBearer', 'with "Authorization: bearer <key>"');
  // Refused together, then let through under the capitalised name: the lower-case name was the refused part.
  if (header && !byHeader) byHeader = both && byBearer?.status === 200 ? both : await stopAs('lowerCaseHeader', 'with "authorization: Bearer <key>"');
  const judged: Parts = {};
  if (byBearer)
    judged['authentication/lower-case-bearer'] = [
      ['status', judge.status(byBearer, 200, 'auth schemes are case-insensitive (RFC 9110 §11.1)')],
      ['schema', judge.schema(byBearer, 'stop-result')],
    ];
  if (byHeader)
    judged['authentication/lower-case-header-name'] = [
      ['status', judge.status(byHeader, 200, 'header names are case-insensitive (RFC 9110 §5.1); behind an HTTP/2 proxy every name arrives in lower case')],
      ['schema', judge.schema(byHeader, 'stop-result')],
    ];
  return judged;
}
