/** How results become outcomes: what counts as a known deviation, an error of the run, a failure. */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { refusalHoldMs } from '../src/domain/refusals';
import { outcomeOf } from '../src/report/verdict';

const declared = [{ type: 'known-deviation', description: 'credits: whole-credit billing' }];

test("a target's answer quoting 'Known deviation of' in a failure is still a failure", () => {
  const forged = 'Error: DELETE /v2/scrape/x/interact answered 500: {"error":"Known deviation of nothing"}';
  assert.equal(outcomeOf({ status: 'failed', errors: [forged], annotations: [] }).outcome, 'fail');
  assert.equal(
    outcomeOf({ status: 'failed', errors: ['Known deviation of nothing'], annotations: [] }).outcome,
    'fail',
    'without the check having declared it',
  );
});

test('a declared deviation is a known deviation alone; beside another failure or an error of the run it is not', () => {
  const deviation = 'KnownDeviation: Known deviation of billing/short-hold › credits: whole-credit billing\ncreditsBilled 2 must be ...';
  assert.equal(outcomeOf({ status: 'failed', errors: [deviation], annotations: declared }).outcome, 'known deviation');
  assert.equal(outcomeOf({ status: 'failed', errors: [deviation, 'RunError: Could not stop 1 session(s)'], annotations: declared }).outcome, 'error');
  assert.equal(outcomeOf({ status: 'failed', errors: [deviation, 'Error: sessionDurationMs 1 must lie ...'], annotations: declared }).outcome, 'fail');
});

test('errors of the run: RunError, a test or its teardown past its timeout, a crashed worker, an interrupted run', () => {
  for (const error of [
    'RunError: provisioning failed',
    'Error: RunError: x',
    'Test timeout of 30000ms exceeded.',
    'Tearing down "sessions" exceeded the test timeout of 15000ms.',
    'Error: worker process exited unexpectedly (code=null, signal=SIGKILL)',
  ]) {
    assert.equal(outcomeOf({ status: 'failed', errors: [error], annotations: [] }).outcome, 'error', error);
  }
  assert.equal(outcomeOf({ status: 'interrupted', errors: [], annotations: [] }).outcome, 'error');
  assert.equal(outcomeOf({ status: 'skipped', errors: [], annotations: [{ type: 'not-verifiable', description: 'no charge' }] }).outcome, 'not verifiable');
});

test('a failure is shown whole in the summary, its printed form, JUnit and the job summary; what the sequences rule searched is printed whatever its outcome', async () => {
  const { emptyRecords, renderSummary, summarise } = await import('../src/report/verdict');
  const { junitXml } = await import('../src/playwright/summary-reporter');
  const { githubSummary } = await import('../src/report/github-summary');
  const message =
    '\u001b[31mError: each answer is 200 or 404:\u001b[39m\nDELETE /v2/scrape/a/interact answered 200: {}\n\nDELETE /v2/scrape/a/interact answered 502: {}  ';
  const searched = { type: 'note', description: 'searched 4 histories, 12 steps' };
  const failed = outcomeOf({ status: 'failed', errors: [message], annotations: [searched, searched] });
  const whole = 'Error: each answer is 200 or 404:\nDELETE /v2/scrape/a/interact answered 200: {}\nDELETE /v2/scrape/a/interact answered 502: {}';
  assert.deepEqual(failed, { outcome: 'fail', note: whole, notes: 'searched 4 histories, 12 steps' });
  const records = emptyRecords();
  records.set('stop-is-final/simultaneous-stops', { ...records.get('stop-is-final/simultaneous-stops')!, ...failed });
  records.set('sequences/random-histories', { ...records.get('sequences/random-histories')!, ...failed });
  const summary = summarise(records, {
    target: 'https://api.example',
    embedded: false,
    strict: false,
    durationMs: 1,
    errors: ['RunError: Could not stop 1 session(s):\n  job-a'],
  });
  const printed = renderSummary(summary);
  assert.match(printed, /simultaneous-stops\n {10}Error: each answer is 200 or 404:\n {10}DELETE \S+ answered 200: \{\}\n {10}DELETE \S+ answered 502: \{\}\n/);
  assert.match(printed, /\n {2}SEQUENCES: searched 4 histories, 12 steps\n/);
  assert.match(printed, /Could not stop 1 session\(s\):\n {8}job-a\n/);
  assert.match(
    junitXml(summary, new Map()),
    /<failure message="Error: each answer is 200 or 404:" type="conformance failure">Error: each answer is 200 or 404:\nDELETE \S+ answered 200: \{\}\nDELETE \S+ answered 502: \{\}<\/failure>/,
  );
  const { markdown } = githubSummary(summary);
  assert.match(
    markdown,
    /- `stop-is-final\/simultaneous-stops` \[@inferred\]: Error: each answer is 200 or 404:\n {2}```text\n {2}DELETE \S+ answered 200: \{\}\n {2}DELETE \S+ answered 502: \{\}\n {2}```\n/,
  );
  assert.match(markdown, /- RunError: Could not stop 1 session\(s\):\n {2}```text\n {4}job-a\n {2}```/);
});

test('refusal holds grow with DURATION_TOLERANCE_MS and with how long the target takes to answer, so a clock restarted at a refusal shows', () => {
  assert.deepEqual(
    [0, 20, 50, 120].map((durationToleranceMs) => refusalHoldMs({ durationToleranceMs })),
    [100, 100, 250, 600],
  );
  // A target (or a runner) that answers slowly: the hold outgrows how long an answer takes.
  assert.deepEqual(
    [10, 50, 200].map((exchangeMs) => refusalHoldMs({ durationToleranceMs: 20 }, exchangeMs)),
    [100, 240, 840],
  );
});

test('after a refusal, a duration a clock restarted at the refusal could give too proves nothing: not verifiable, never a pass', async () => {
  const { expectSurvived } = await import('../src/domain/billing');
  const settings = { durationToleranceMs: 20, creditTolerance: 0.000001 } as any;
  const session = { created: { sentAt: 0, receivedAt: 10 } } as any;
  const refusal = { sentAt: 110, receivedAt: 120 } as any;
  const stop = (receivedAt: number, sessionDurationMs: number) => ({ status: 200, sentAt: 230, receivedAt, body: { success: true, sessionDurationMs } }) as any;
  assert.deepEqual(
    expectSurvived(stop(240, 230), session, refusal, settings),
    {},
    'a quick stop: 230 ms is the whole session, past the 150 ms a restart could give',
  );
  assert.match(
    expectSurvived(stop(400, 230), session, refusal, settings).notVerifiable ?? '',
    /fits the whole session .* and a clock restarted at the refusal alike \(at most 310\.0 ms\)/,
    'a stop that took 170 ms',
  );
  assert.throws(
    () => expectSurvived(stop(240, 115), session, refusal, settings),
    /sessionDurationMs 115 must lie in the measured interval/,
    'a clock restarted at the refusal',
  );
});

test('against a declared clock of whole seconds, the holds grow by two steps and a duration is judged one step wider, never more', async () => {
  const { expectSurvived, durationVerdict } = await import('../src/domain/billing');
  const declaredClock = { resolutionMs: 1000, reason: 'whole seconds' };
  assert.equal(refusalHoldMs({ durationToleranceMs: 20, declaredClock }, 10), 2330);
  const settings = { durationToleranceMs: 20, creditTolerance: 0.000001, declaredClock } as any;
  const interval = { lo: 2516, hi: 3207 };
  assert.equal(durationVerdict({ sessionDurationMs: 3000 }, interval, settings), undefined, 'within the measured interval: no declaration needed');
  assert.match(durationVerdict({ sessionDurationMs: 2000 }, interval, settings)?.message ?? '', /in \[1496, 4227\] ms, and it does/);
  assert.throws(() => durationVerdict({ sessionDurationMs: 1000 }, interval, settings), /one step further, in \[1496, 4227\] ms/);
  assert.throws(
    () => durationVerdict({ sessionDurationMs: 2000 }, interval, { durationToleranceMs: 20 } as any),
    /must lie in the measured interval \[2496, 3227\] ms/,
    'undeclared, a whole second off fails',
  );
  // Held 2.33 s before the refusal and after: a whole session is told from one restarted at the refusal, a step off either way.
  const session = { created: { sentAt: 0, receivedAt: 10 } } as any;
  const refusal = { sentAt: 2340, receivedAt: 2350 } as any;
  const stop = (sessionDurationMs: number) => ({ status: 200, sentAt: 4680, receivedAt: 4690, body: { success: true, sessionDurationMs } }) as any;
  assert.deepEqual(expectSurvived(stop(4680), session, refusal, settings), {}, 'the whole session, within the measured interval');
  assert.ok(
    expectSurvived(stop(4000), session, refusal, settings).declared,
    'a step under the interval: the declared clock, and still past what a restart could give (3370 ms)',
  );
  assert.throws(
    () => expectSurvived(stop(3350), session, refusal, settings),
    /must lie in the measured interval/,
    'a clock restarted at the refusal, even a step late',
  );
});

test('a charge is a settlement: a repeat of it or a zero reports it, another duration or positive amount charges again', async () => {
  const { isNewCharge, distinctSettlements } = await import('../src/domain/settlements');
  const answer = (body: object, status = 200) => ({ status, body }) as any;
  const first = answer({ success: true, sessionDurationMs: 3000, creditsBilled: 2 });
  assert.equal(
    isNewCharge(answer({ success: true, status: 'stopped', cleanupQueued: true, creditsBilled: 2 }), first),
    false,
    "today's repeat stop: the earlier charge, no duration",
  );
  assert.equal(isNewCharge(answer({ success: true, sessionDurationMs: 3000, creditsBilled: 2 }), first), false, 'the same settlement again');
  assert.equal(isNewCharge(answer({ success: true }), first), false);
  assert.equal(isNewCharge(answer({ success: false, error: 'Browser session not found.' }, 404), first), false);
  assert.equal(isNewCharge(answer({ success: true, creditsBilled: 0 }), first), false, 'zero alone reports nothing');
  assert.equal(
    isNewCharge(answer({ success: true, sessionDurationMs: 5, creditsBilled: 0, alreadyStopped: true }), first),
    false,
    'nothing billed now, with a duration: a report, not a charge',
  );
  assert.equal(isNewCharge(answer({ success: true, sessionDurationMs: 21, creditsBilled: 0 })), false, 'zero is never a charge');
  assert.equal(isNewCharge(answer({ success: true, sessionDurationMs: 4000, creditsBilled: 2 }), first), true, 'a new duration');
  assert.equal(isNewCharge(answer({ success: true, creditsBilled: 3 }), first), true, 'a new amount');
  assert.equal(isNewCharge(answer({ success: true, creditsBilled: 2 }), answer({ success: true })), true, 'after a stop that settled nothing, a charge is new');
  assert.equal(
    distinctSettlements([first, answer({ success: true, creditsBilled: 2 }), answer({ success: true, sessionDurationMs: 4000, creditsBilled: 2 })]).length,
    2,
  );
});

test('the account judges money: exact is a pass, a settlement reported twice and charged twice is a failure naming it, anything else not verifiable', async () => {
  const { judgeAccount, accountTolerance } = await import('../src/domain/account');
  const spending = {
    settlements: [
      { jobId: 'job-a', settled: [{ credits: 2, durationMs: 3000 }], reports: 2 },
      { jobId: 'job-b', settled: [{ credits: 3, durationMs: 61000 }], reports: 1 },
    ],
    scrapes: { count: 3, credits: 3, unpriced: 0 },
  };
  const judge = (remaining: number, still = true, spent = spending) => judgeAccount(100, { remaining, still }, spent, 60000);
  assert.equal(judge(92).outcome, 'pass');
  assert.match(
    judge(90).message,
    /charged 10 credit\(s\) .* account for 8 credit\(s\): 5 credit\(s\) in 2 settlement\(s\) of its 2 settled session\(s\), each counted once, and 3 credit\(s\) for its 3 scrape\(s\): 2 credit\(s\) more, exactly what this session settled again: .* for job-a \(2 credit\(s\); 2 stop\(s\) answered 200 about it\)/,
  );
  assert.equal(judge(90).outcome, 'fail');
  assert.equal(judge(87).outcome, 'not verifiable', "job-b was reported once: a charge of its amount may be anyone's");
  assert.equal(judge(91).outcome, 'not verifiable', 'one credit more: no settlement reported twice');
  assert.equal(judge(90, false).outcome, 'not verifiable', 'the counter still moving');
  assert.equal(judge(95).outcome, 'not verifiable', 'charged less: still queued');
  assert.equal(judge(90, true, { ...spending, scrapes: { count: 3, credits: 1, unpriced: 2 } }).outcome, 'not verifiable', 'scrapes of unknown price');
  // One session's settlement reported by five answers, each charged: four more charges of it, and no more.
  const reportedOften = { ...spending, settlements: [{ ...spending.settlements[0], reports: 5 }, spending.settlements[1]] };
  assert.match(
    judge(84, true, reportedOften).message,
    /8 credit\(s\) more, exactly what this session settled again: .* for job-a \(2 credit\(s\) 4 times; 5 stop\(s\) answered 200 about it\)/,
  );
  assert.equal(judge(82, true, reportedOften).outcome, 'not verifiable', 'more than each report charged again explains');
  // The tolerance follows the precision of what was reported: never a small session charged twice.
  const small = {
    settlements: Array.from({ length: 200 }, (_, i) => ({ jobId: `j${i}`, settled: [{ credits: 0.041667 }], reports: i === 0 ? 2 : 1 })),
    scrapes: { count: 200, credits: 200, unpriced: 0 },
  };
  assert.ok(accountTolerance(small) < 0.001, `${accountTolerance(small)}`);
  const expected = 200 + 200 * 0.041667;
  assert.equal(judgeAccount(1000, { remaining: 1000 - expected, still: true }, small, 5000).outcome, 'pass');
  assert.equal(judgeAccount(1000, { remaining: 1000 - expected - 0.041667, still: true }, small, 5000).outcome, 'fail');
  assert.equal(
    accountTolerance({ settlements: [{ jobId: 'x', settled: [{ credits: 2 }], reports: 1 }], scrapes: { count: 0, credits: 0, unpriced: 0 } }) < 0.01,
    true,
    'whole credits: to the cent',
  );
});

test('sessions stopped by answers without a charge may have cost what their lives bill at most, and no more', async () => {
  const { judgeAccount } = await import('../src/domain/account');
  // Two sessions of at most 2.5 s and 61 s: at most 3 s and 61 s billed, 0.1 + 2.033333 credits.
  const spending = {
    settlements: [],
    scrapes: { count: 2, credits: 2, unpriced: 0 },
    silent: [
      { jobId: 'a', lifeMs: 2_500, reports: 1 },
      { jobId: 'b', lifeMs: 61_000, reports: 1 },
    ],
  };
  const judge = (remaining: number) => judgeAccount(100, { remaining, still: true }, spending, 5000);
  assert.equal(judge(100 - 2 - 2.1).outcome, 'pass');
  assert.match(
    judge(100 - 2 - 2.1).message,
    /2\.1 credit\(s\) more, within the 2\.133333 credit\(s\) its 2 session\(s\) stopped by answers without a creditsBilled may have cost at most/,
  );
  assert.equal(judge(100 - 2 - 2.2).outcome, 'not verifiable', 'more than their lives bill');
  assert.equal(judge(100 - 2 - 4).outcome, 'not verifiable');
  // Answered without a charge twice: a second charge could hide in the slack.
  const repeated = { ...spending, silent: [{ ...spending.silent[0], reports: 2 }, spending.silent[1]] };
  assert.equal(judgeAccount(100, { remaining: 100 - 2 - 2.1, still: true }, repeated, 5000).outcome, 'not verifiable');
});
