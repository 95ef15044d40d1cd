/** How results become outcomes: what counts as a known deviation, an error of the run, a failure. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { outcomeOf } from '../tests/support/verdict';
import { refusalHoldMs } from '../tests/support/refusals';

const declared = [{ type: 'known-deviation', description: 'credits: whole-credit billing' }];

test("a target's answer quoting 'Known deviation of' in a failure is still a failure", () => {
  const forged = 'Error: DELETE /v2/scrape/x/interact answered 500: {"error":"Known deviation of nothing"}';
  assert.equal(outcomeOf({ status: 'failed', errors: [forged], annotations: [] }).outcome, 'fail');
  assert.equal(outcomeOf({ status: 'failed', errors: ['Known deviation of nothing'], annotations: [] }).outcome, 'fail', 'without the check having declared it');
});

test('a declared deviation is a known deviation alone; beside another failure or an error of the run it is not', () => {
  const deviation = 'KnownDeviation: Known deviation of billing/short-hold › credits: whole-credit billing\ncreditsBilled 2 must be ...';
  assert.equal(outcomeOf({ status: 'failed', errors: [deviation], annotations: declared }).outcome, 'known deviation');
  assert.equal(outcomeOf({ status: 'failed', errors: [deviation, 'RunError: Could not stop 1 session(s)'], annotations: declared }).outcome, 'error');
  assert.equal(outcomeOf({ status: 'failed', errors: [deviation, 'Error: sessionDurationMs 1 must lie ...'], annotations: declared }).outcome, 'fail');
});

test('errors of the run: RunError, a test past its timeout, a crashed worker, an interrupted run', () => {
  for (const error of ['RunError: provisioning failed', 'Error: RunError: x', 'Test timeout of 30000ms exceeded.', 'Error: worker process exited unexpectedly (code=null, signal=SIGKILL)']) {
    assert.equal(outcomeOf({ status: 'failed', errors: [error], annotations: [] }).outcome, 'error', error);
  }
  assert.equal(outcomeOf({ status: 'interrupted', errors: [], annotations: [] }).outcome, 'error');
  assert.equal(outcomeOf({ status: 'skipped', errors: [], annotations: [{ type: 'not-verifiable', description: 'no charge' }] }).outcome, 'not verifiable');
});

test('refusal holds grow with DURATION_TOLERANCE_MS and with how long the target takes to answer, so a clock restarted at a refusal shows', () => {
  assert.deepEqual([0, 20, 50, 120].map((durationToleranceMs) => refusalHoldMs({ durationToleranceMs })), [100, 100, 250, 600]);
  // A target (or a runner) that answers slowly: the hold outgrows how long an answer takes.
  assert.deepEqual([10, 50, 200].map((exchangeMs) => refusalHoldMs({ durationToleranceMs: 20 }, exchangeMs)), [100, 240, 840]);
});

test("after a refusal, a duration a clock restarted at the refusal could give too proves nothing: not verifiable, never a pass", async () => {
  const { expectSurvived } = await import('../tests/support/billing');
  const settings = { durationToleranceMs: 20, creditTolerance: 0.000001 } as any;
  const session = { created: { sentAt: 0, receivedAt: 10 } } as any;
  const refusal = { sentAt: 110, receivedAt: 120 } as any;
  const stop = (receivedAt: number, sessionDurationMs: number) => ({ status: 200, sentAt: 230, receivedAt, body: { success: true, sessionDurationMs } }) as any;
  assert.deepEqual(expectSurvived(stop(240, 230), session, refusal, settings), {}, 'a quick stop: 230 ms is the whole session, past the 150 ms a restart could give');
  assert.match(expectSurvived(stop(400, 230), session, refusal, settings).notVerifiable ?? '', /fits the whole session .* and a clock restarted at the refusal alike \(at most 310\.0 ms\)/, 'a stop that took 170 ms');
  assert.throws(() => expectSurvived(stop(240, 115), session, refusal, settings), /sessionDurationMs 115 must lie in the measured interval/, 'a clock restarted at the refusal');
});
