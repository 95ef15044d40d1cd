/**
 * What an owner's stop leaves, for the three tests of rule 7 that ask it, through one session's
 * life (shared-run.ts): the stop, refusals of others and a second stop (second-stop,
 * final-for-everyone), an interact and a last stop (interact-after-stop).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { step } from '../checks/recorder';
import type { Answer } from './answer';
import { type CheckCall, judge } from './named-checks';
import { holdAroundMs } from './refusals';
import { judgedShared, type Parts, type TestContext } from './shared-run';

type AfterStopTest = 'stop-is-final/second-stop' | 'stop-is-final/final-for-everyone' | 'stop-is-final/interact-after-stop';
const TESTS: AfterStopTest[] = ['stop-is-final/second-stop', 'stop-is-final/final-for-everyone', 'stop-is-final/interact-after-stop'];

/** Long enough to be charged by the second: a stop that charges again then shows in the account (stop-is-final/account). */
export const BILLED_HOLD_MS = 1_500;

/** Test `id`'s part, judged on the session the rule's tests share (shared-run.ts). */
export const afterStop = (context: TestContext, id: AfterStopTest) =>
  judgedShared(context, 'after-stop', TESTS, (tests) => run(context, tests as AfterStopTest[]), id);

/** One session, stopped, then the parts of `tests` in order, each judged on its own answers. */
async function run({ api, sessions, identities, settings }: TestContext, tests: AfterStopTest[]): Promise<Parts> {
  const { owner } = identities;
  const session = await step('provision a session', () => sessions.provision());
  if (tests.includes('stop-is-final/second-stop')) await step(`hold the session ${BILLED_HOLD_MS} ms`, () => sessions.holdUntil(session, BILLED_HOLD_MS));
  const stop = await step('the owner stops the session', () => api.stop(session.jobId, owner));
  const firstStop: [string, CheckCall] = ['first-stop', judge.status(stop, 200)];
  const judged: Parts = {};
  // Others' refusals first, then one more stop of the owner's: the second stop, and the proof that nothing was revived.
  const refusals: Answer[] = [];
  if (tests.includes('stop-is-final/final-for-everyone'))
    for (const who of ['foreign', 'noKey', 'unknownKey'] as const)
      refusals.push(await step(`${identities[who].name} asks to stop the stopped session`, () => api.stop(session.jobId, identities[who])));
  const again = tests.includes('stop-is-final/second-stop') || tests.includes('stop-is-final/final-for-everyone');
  const second = again ? await step('the owner stops it again', () => api.stop(session.jobId, owner)) : stop;
  if (tests.includes('stop-is-final/second-stop'))
    judged['stop-is-final/second-stop'] = [
      firstStop,
      ['second-stop', judge.status(second, [200, 404], 'a stopped session answers 404 or 200')],
      // Repeating the first stop's settlement (the same credits, the duration absent or the same) reports it; another settlement is a second charge.
      ['no-second-charge', judge.noSecondCharge(second, stop)],
    ];
  if (tests.includes('stop-is-final/final-for-everyone'))
    judged['stop-is-final/final-for-everyone'] = [
      firstStop,
      ['refused', judge.refused(refusals)],
      ['reveals-nothing', judge.revealsNothing(refusals, [session.created, stop], identities.ownerTeam, session.jobId)],
      ['still-stopped', judge.stillStopped(second, stop)],
    ];
  if (tests.includes('stop-is-final/interact-after-stop')) {
    const again = await step('the owner interacts with the stopped session', () => sessions.interact(session));
    // A refusal: what it may have opened is held longer than the first session lasted (a second longer where the stop gave no duration and credits
    // count by the second), so that its settlement differs from a report of the first.
    const holdMs =
      stop.receivedAt - session.created.sentAt + holdAroundMs(api, settings, session.created) + (stop.body?.sessionDurationMs === undefined ? 1_000 : 0);
    if (again.status !== 200)
      await step(`hold what the interact may have opened ${holdMs} ms`, () =>
        sleep(Math.max(0, holdMs - (performance.now() - again.receivedAt)), undefined, { signal: api.signal }),
      );
    const last = await step('the owner stops it once more', () => api.stop(session.jobId, owner));
    judged['stop-is-final/interact-after-stop'] = [
      firstStop,
      ['interact', judge.interactAfterStop(again)],
      ['nothing-unannounced', judge.nothingUnannounced(again, last, stop)],
    ];
  }
  return judged;
}
