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

test('refusal holds grow with DURATION_TOLERANCE_MS, so a clock restarted at a refusal always shows', () => {
  assert.deepEqual([0, 20, 50, 120].map((durationToleranceMs) => refusalHoldMs({ durationToleranceMs })), [100, 100, 250, 600]);
});
