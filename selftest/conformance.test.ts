/**
 * The command end to end, as a user runs it: against the embedded reference, against external
 * targets with and without a known-deviations file, partial runs and shards, errors of the run
 * and bad configurations. Checks exit codes, the verdict, the reports, and that no key reaches
 * any of them. Each run writes into its own reports folder, so these tests run beside others.
 */

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { describe, test } from 'node:test';
import { chromium } from 'playwright-core';
import { type Behaviour, createReferenceServer, type ReferenceOptions, type ReferenceState } from '../reference/server';
import { RULE_IDS, reportGroupOf, TEST_IDS } from '../src/config/rules';
import { channel, runFolder } from '../src/coordination/run-folder';
import type { Summary } from '../src/report/verdict';
import { isolatedEnv, PLAYWRIGHT, ROOT, runCommand } from './matrix';
import { olderProduction, today } from './production';
import { filesContaining, SECRETS } from './secrets';
import { tempDir } from './temp';
import { capsSessions, correctVariants, faultyVariants, orderFaults } from './variants';

const BIN = path.join(ROOT, 'bin', 'stop-session-conformance.js');

/** Runs the command with its own reports folder; returns its exit code, output and summary. The Allure HTML report only when `allure`. */
async function conformance(args: string[], env: Record<string, string> = {}, { viaNpm = false, allure = viaNpm }: { viaNpm?: boolean; allure?: boolean } = {}) {
  const reports = tempDir('conformance-reports-');
  args = allure ? args : ['--no-allure', ...args];
  const command = viaNpm ? (['npm', ['run', '--silent', 'conformance', '--', ...args]] as const) : ([process.execPath, [BIN, ...args]] as const);
  const { code, log } = await runCommand(command[0], [...command[1]], isolatedEnv({ REPORTS_DIR: reports, ...env }));
  const file = path.join(reports, 'conformance-summary.json');
  const summary = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Summary) : undefined;
  return { code, log, reports, summary, statuses: summary ? Object.fromEntries(Object.entries(summary.rules).map(([id, rule]) => [id, rule.status])) : {} };
}

/** The tests that did not pass, with their notes: what a failed assertion on the statuses shows. */
const notPassing = (summary: Summary) =>
  Object.values(summary.rules)
    .flatMap((rule) => rule.tests)
    .filter((t) => t.outcome !== 'pass');

const options = (name: string) => [...faultyVariants, ...correctVariants].find((v) => v.name === name)!.options.behaviour!;

async function external(behaviour: ReferenceOptions['behaviour'], rateLimit?: ReferenceOptions['rateLimit']) {
  const server = await createReferenceServer({ behaviour, rateLimit });
  return { server, env: { BASE_URL: server.url, API_KEY: SECRETS[0], FOREIGN_API_KEY: SECRETS[1] } };
}

const PRODUCTION = 'fixtures/known-deviations/firecrawl-production.json';
/** The Allure report of the production-like run with its deviations declared, for the browser check. */
let reportWritten: (file: string | undefined) => void = () => {};
const declaredReport = new Promise<string | undefined>((resolve) => (reportWritten = resolve));
/** The complete run against the embedded reference, as users start it: once, for the tests that read it. */
let complete: ReturnType<typeof conformance> | undefined;
const completeRun = () => (complete ??= conformance([], {}, { viaNpm: true }));

// Each run has its own reports folder and target: three at a time, so that their waits overlap.
describe('the command, end to end', { concurrency: 3 }, () => {
  test('npm run conformance passes the embedded reference and writes every report, and no key', async () => {
    const run = await completeRun();
    assert.equal(run.code, 0, run.log.slice(-3000));
    assert.equal(run.summary?.verdict, 'pass');
    // A runner too loaded to send faster than the foreign team's limit leaves teams-apart not verifiable, saying so: that rule once more, alone, must pass.
    const off = notPassing(run.summary!);
    const unmet = off.length > 0 && off.every((t) => t.id === 'rate-limit/teams-apart' && /met no limit/.test(t.note ?? ''));
    const statuses = unmet ? { ...run.statuses, 'rate-limit': (await conformance(['--rule', 'rate-limit'])).statuses['rate-limit'] } : run.statuses;
    assert.deepEqual(new Set(Object.values(statuses)), new Set(['pass']), JSON.stringify(notPassing(run.summary!)));
    assert.deepEqual(Object.keys(run.statuses), RULE_IDS);
    for (const file of ['allure-report/index.html', 'junit.xml', 'conformance-summary.json', 'ledger.jsonl'])
      assert.ok(existsSync(path.join(run.reports, file)), file);
    assert.match(
      readFileSync(path.join(run.reports, 'allure-report', 'index.html'), 'utf8'),
      /<head>\s*<script>window\.allureReportData/,
      'the report declares its data store first (src/report/allure-report.ts)',
    );
    const junit = readFileSync(path.join(run.reports, 'junit.xml'), 'utf8');
    assert.equal(junit.match(/<testcase /g)?.length, TEST_IDS.length, 'one JUnit test case per test');
    // The cost as properties, a field each: the prediction's too, never an object's text.
    assert.match(junit, /<property name="cost\.sessions" value="\d+"\/>[\s\S]*<property name="cost\.predicted\.sessions" value="\d+"\/>/);
    assert.doesNotMatch(junit, /\[object Object\]/);
    assert.match(
      junit,
      /<testcase classname="billing" name="credits billed for a session held for the long hold[^"]*"[^>]*>\s*<properties>\s*<property name="rule" value="billing"\/>\s*<property name="test-id" value="billing\/long-hold"\/>\s*<property name="level" value="must"\/>/,
    );
    assert.match(run.log, /Verdict: PASS \(exit 0/);
    // One line per test as it ends, with its id; the reports folder holds what users read, and the run's working folder is gone.
    for (const id of TEST_IDS) assert.match(run.log, new RegExp(`^  PASS +${id} \\(\\d+ ms\\)$`, 'm'), id);
    assert.deepEqual(readdirSync(run.reports).sort(), [
      'allure-history.jsonl',
      'allure-report',
      'allure-results',
      'conformance-summary.json',
      'junit.xml',
      'ledger.jsonl',
    ]);
    assert.ok(!existsSync(runFolder(run.reports)), "the command removed the run's working folder");
    assert.deepEqual(filesContaining(run.reports), [], 'keys in the reports');
    assert.deepEqual(filesContaining(run.log), [], 'keys in the output');
  });

  test('a declared deviation that does not happen fails the run and says to remove it', async () => {
    const file = path.join(tempDir('deviations-'), 'stale.json');
    writeFileSync(file, JSON.stringify({ deviations: [{ test: 'unknown-job/random-uuid', check: 'status', reason: 'pretend it answers 400' }] }));
    const run = await conformance(['--rule', 'unknown-job'], { KNOWN_DEVIATIONS: file });
    assert.equal(run.code, 1, run.log.slice(-2000));
    assert.equal(run.statuses['unknown-job'], 'fail');
    assert.match(JSON.stringify(run.summary!.rules['unknown-job'].tests), /Declared as a known deviation, but it passes: unknown-job\/random-uuid › status/);
  });

  test('the production deviations excuse exactly their checks: the hosted service as it is today passes, its account checked', async () => {
    const { server, env } = await external(today().behaviour);
    try {
      const undeclared = await conformance(['--rule', 'billing'], env);
      assert.equal(undeclared.code, 1, 'the same deviations fail the run when they are not declared');
      assert.equal(undeclared.statuses.billing, 'fail');
      // Its whole seconds are named, with how to declare them.
      assert.match(
        undeclared.log,
        /a whole number of seconds within a second of that interval[^\n]*declare it in a known-deviations file \("clock": \{"resolutionMs": 1000\}/,
      );
      // The burst on a third team's plan (40 per 4 s): on the owner's 180 a second, a client slowed by a busy runner cannot tell a limit from none (an error of the run).
      const declared = await conformance(
        [],
        { ...env, BURST_API_KEY: SECRETS[2], KNOWN_DEVIATIONS: PRODUCTION, SEQUENCE_SEED: '1', SEQUENCE_RUNS: '10', SEQUENCE_BUDGET: '200' },
        { allure: true },
      );
      assert.equal(declared.code, 0, declared.log.slice(-3000));
      assert.equal(declared.statuses.billing, 'known deviation');
      // Its charges are what the declared billing rule gives; under the job cap, a loaded runner's histories may have stopped no live session, and the rule then says so.
      const sequences = declared.summary!.rules.sequences.tests[0];
      if (declared.statuses.sequences !== 'known deviation')
        assert.deepEqual([sequences.outcome, /credits were not checked/.test(sequences.note ?? '')], ['pass', true], JSON.stringify(sequences));
      assert.equal(declared.statuses.authentication, 'known deviation');
      const account = declared.summary!.rules['stop-is-final'].tests.find((t) => t.id === 'stop-is-final/account')!;
      assert.equal(account.outcome, 'pass', JSON.stringify(account));
      assert.match(account.note!, /the owner team's account was charged (\d+) credit\(s\) .* its answers account for \1 credit\(s\):/);
      // Nothing fails or errs; the burst may be not verifiable where a loaded runner let its stops through unthrottled (an honest outcome).
      assert.deepEqual(
        notPassing(declared.summary!).filter(
          (t) => t.outcome === 'fail' || t.outcome === 'error' || (t.outcome === 'not verifiable' && t.id !== 'rate-limit/burst'),
        ),
        [],
        'nothing failed, in error or not verifiable but the burst',
      );
      assert.match(declared.log, /KNOWN DEVIATION/);
      assert.deepEqual(filesContaining(declared.reports), [], 'keys in the reports');
      assert.deepEqual(filesContaining(declared.log), [], 'keys in the output');
      reportWritten(path.join(declared.reports, 'allure-report', 'index.html'));
    } finally {
      reportWritten(undefined);
      await server.close();
    }
  });

  test('beside the production deviations, what they do not declare still fails: a wrong duration, or twice the whole credits', async () => {
    // A duration error confined to long sessions, beside the whole-credit billing the file excuses: 1.4 s, more than a step of the declared clock.
    const { server: wrong, env: wrongEnv } = await external((base, state) => ({
      ...olderProduction!(base, state),
      stop: (team, jobId) => {
        const session = state.sessions.get(jobId);
        if (session && state.clock() - session.startedAt > 3_000) session.startedAt -= 1_400;
        return base.stop(team, jobId);
      },
    }));
    try {
      const run = await conformance(['--rule', 'billing', '--grep', 'long hold'], { ...wrongEnv, KNOWN_DEVIATIONS: PRODUCTION });
      assert.equal(run.code, 1, run.log.slice(-3000));
      const long = run.summary!.rules.billing.tests.find((t) => t.id === 'billing/long-hold')!;
      assert.equal(long.outcome, 'fail');
      assert.match(long.note!, /sessionDurationMs \d+ must lie in the measured interval/);
    } finally {
      await wrong.close();
    }
    // Whole credits, but a credit more than the declared rule gives: not the deviation the file declares.
    const { server: more, env: moreEnv } = await external((base, state) => ({
      ...olderProduction!(base, state),
      bill: (ms) => Math.max(2, Math.ceil((ms / 3_600_000) * 120)) + 1,
    }));
    try {
      // Enough histories that some stop a live session and are charged (an external target's default is 2, on 20 requests).
      const run = await conformance(['--rule', 'billing', '--rule', 'sequences'], {
        ...moreEnv,
        KNOWN_DEVIATIONS: PRODUCTION,
        SEQUENCE_SEED: '1',
        SEQUENCE_RUNS: '10',
        SEQUENCE_BUDGET: '200',
      });
      assert.equal(run.code, 1, run.log.slice(-3000));
      assert.deepEqual(
        run.summary!.rules.billing.tests.map((t) => t.outcome),
        ['fail', 'fail', 'fail', 'fail'],
      );
      assert.match(
        run.summary!.rules.billing.tests[1].note!,
        /creditsBilled 3 must be 2 credits\/minute prorated by the second .*; under the declared billing rule .* it must be between 2\.000000 and 2\.000000/,
      );
      assert.equal(run.summary!.rules.sequences.tests[0].outcome, 'fail');
      assert.match(run.summary!.rules.sequences.tests[0].note!, /creditsBilled 3 must be .*under the declared billing rule/);
    } finally {
      await more.close();
    }
  });

  test('a failed test leaves a reproduction without a key: replay says STILL FAILING on the faulty target, FIXED once the fault is gone', async () => {
    const { server: faulty, env } = await external(options('foreign-403-still-stops'));
    const { server: unknownJob, env: unknownJobEnv } = await external(options('unknown-job-200'));
    const { server: fixed } = await external(undefined);
    try {
      const run = await conformance(['--rule', 'foreign-team'], env);
      assert.equal(run.code, 1, run.log.slice(-3000));
      const survives = run.summary!.rules['foreign-team'].tests.find((t) => t.id === 'foreign-team/survives')!;
      assert.deepEqual([survives.outcome, survives.reproduction], ['fail', 'reproductions/foreign-team/survives.mjs']);
      assert.match(run.log, /^ {6}reproduce: node \S*reproductions\/foreign-team\/survives\.mjs$/m);
      assert.match(
        readFileSync(path.join(run.reports, 'junit.xml'), 'utf8'),
        /<property name="reproduction" value="reproductions\/foreign-team\/survives\.mjs"\/>/,
      );
      assert.match(
        run.log.trim().split('\n').at(-1)!,
        /^After a fix: npx stop-session-conformance replay \S+ \(npm run replay -- \S+ in a clone\)/,
        'the next step, last',
      );
      const replay = (extra: Record<string, string>, ...args: string[]) =>
        runCommand(process.execPath, [BIN, 'replay', run.reports, ...args], isolatedEnv(extra));
      const still = await replay(env);
      assert.equal(still.code, 1, still.log);
      assert.match(still.log, new RegExp(`^Made against ${env.BASE_URL} at \\S+Z\n`, 'm'));
      assert.match(still.log, /STILL FAILING +foreign-team\/survives\n +FAILS (refused|survives): /);
      // The fixed target is another server here: replay refuses it unless told to go on.
      const elsewhere = await replay({ ...env, BASE_URL: fixed.url });
      assert.equal(elsewhere.code, 2, elsewhere.log);
      assert.match(
        elsewhere.log,
        new RegExp(`were made against ${env.BASE_URL} at \\S+Z, and the target configured now is ${fixed.url}\\..*give --any-target`),
      );
      const gone = await replay({ ...env, BASE_URL: fixed.url }, '--any-target');
      assert.equal(gone.code, 0, gone.log);
      assert.match(gone.log, /FIXED +foreign-team\/survives/);
      // Without BASE_URL, against a fresh embedded reference.
      assert.match((await replay({}, '--any-target')).log, /FIXED +foreign-team\/survives/);
      assert.equal(fixed.activeSessions().length, 0, 'the reproduction stopped the sessions it opened');
      // Where one request shows the fault, a curl line with the key as $API_KEY.
      const single = await conformance(['--rule', 'unknown-job'], unknownJobEnv);
      const random = single.summary!.rules['unknown-job'].tests.find((t) => t.id === 'unknown-job/random-uuid')!;
      assert.match(random.curl ?? '', /^curl -sS -X DELETE -H "Authorization: Bearer \$API_KEY" "\$BASE_URL\/v2\/scrape\/[0-9a-f-]{36}\/interact"$/);
      assert.deepEqual(
        [...filesContaining(run.reports), ...filesContaining(single.reports), ...filesContaining(still.log)],
        [],
        'keys in the reproductions, their logs or the reports',
      );
    } finally {
      await Promise.all([faulty.close(), unknownJob.close(), fixed.close()]);
    }
  });

  test("with BURST_API_KEY the burst runs beside the other tests on a third team, and cleanup stops that team's sessions with its key only", async () => {
    // 50 in 3 s: a client slowed by a busy machine still saturates the limit early in a window, so a stop sent then is throttled.
    const { server, env } = await external(undefined, { limit: 50, windowMs: 3000 });
    try {
      // The billing rule's holds run while the burst does; the other rules would only repeat them.
      const run = await conformance(['--rule', 'rate-limit', '--rule', 'billing', '--rule', 'foreign-team'], { ...env, BURST_API_KEY: SECRETS[2] });
      assert.equal(run.code, 3, run.log.slice(-3000));
      assert.deepEqual(
        new Set(Object.values(run.statuses)),
        new Set(['pass', 'not run']),
        JSON.stringify(notPassing(run.summary!).filter((t) => t.outcome !== 'not run')),
      );
      const burst = run.summary!.rules['rate-limit'].tests.find((t) => t.id === 'rate-limit/burst')!;
      assert.equal(burst.outcome, 'pass', 'the throttled stop was checked, not skipped');
      const results = readdirSync(path.join(run.reports, 'allure-results'))
        .filter((f) => f.endsWith('-result.json'))
        .map((f) => JSON.parse(readFileSync(path.join(run.reports, 'allure-results', f), 'utf8')));
      const isBurst = (r: any) => r.labels.some((l: any) => l.name === 'testId' && l.value === 'rate-limit/burst');
      const own = results.find(isBurst);
      // Beside, not after: without a third team the burst waits for every other test to end (a busy machine may delay either side's start).
      const othersEnd = Math.max(...results.filter((r) => !isBurst(r)).map((r) => r.stop));
      assert.ok(own.start < othersEnd, `the burst started ${own.start - othersEnd} ms after the other tests had ended`);
      const ledger = readFileSync(path.join(run.reports, 'ledger.jsonl'), 'utf8');
      assert.equal(ledger.match(/"event":"created"[^\n]*"identity":"burst team"/g)?.length, 2, "the burst's two sessions are the burst team's");
      assert.equal(server.activeSessions().length, 0);
      assert.deepEqual(filesContaining(run.reports), [], 'keys in the reports');
      assert.deepEqual(filesContaining(run.log), [], 'keys in the output');
      // What the run says it spent is what the target counted: its charges, the sessions it stopped, and the bursts' 429s.
      const cost = run.summary!.cost!;
      assert.ok(Math.abs(cost.credits - server.creditsBilled()) < 0.001, `credits: ${cost.credits} reported, ${server.creditsBilled()} charged`);
      assert.equal(cost.sessions, server.state.charges.length, 'every session the run created was charged once');
      assert.ok(cost.throttled > 0 && cost.limitedRequests > cost.throttled, JSON.stringify(cost));
      assert.match(
        run.log,
        /COST: \d+ session\(s\) created and \d+ scrape\(s\), by every team the run used; [\d.]+ credit\(s\) billed as the stops' answers reported them \(creditsBilled; [^)]*\); \d+ request\(s\) to stop and interact, \d+ answered 429; [\d.]+ s from the workers' start to the verdict/,
      );
      assert.match(readFileSync(path.join(run.reports, 'junit.xml'), 'utf8'), /<property name="cost\.limitedRequests" value="\d+"\/>/);

      // A burst-team session a killed run left open: only that team's key can stop it.
      const call = (path: string, body: object) =>
        fetch(`${server.url}${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${SECRETS[2]}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }).then((r) => r.json());
      const jobId = (await call('/v2/scrape', { url: 'https://example.com' })).data.metadata.scrapeId;
      await call(`/v2/scrape/${jobId}/interact`, { code: 'console.log(1)', language: 'node' });
      writeFileSync(
        path.join(run.reports, 'ledger.jsonl'),
        `${JSON.stringify({ event: 'created', at: new Date().toISOString(), target: server.url, embedded: false, jobId, identity: 'burst team' })}\n`,
      );
      const withoutKey = await runCommand(process.execPath, [BIN, 'cleanup'], isolatedEnv({ REPORTS_DIR: run.reports, ...env }));
      assert.equal(withoutKey.code, 2, withoutKey.log);
      assert.match(withoutKey.log, /created by the burst team, whose key was not given; run the cleanup with BURST_API_KEY too/);
      assert.equal(server.activeSessions().length, 1);
      const withKey = await runCommand(process.execPath, [BIN, 'cleanup'], isolatedEnv({ REPORTS_DIR: run.reports, ...env, BURST_API_KEY: SECRETS[2] }));
      assert.equal(withKey.code, 0, withKey.log);
      assert.equal(server.activeSessions().length, 0);
      assert.deepEqual(filesContaining(withoutKey.log + withKey.log), [], 'keys in the output');
    } finally {
      await server.close();
    }
  });

  test('errors of the run are not failures of the target: a target that stops answering, or provisioning that fails, exits 2', async () => {
    // Answers the reachability probe, then never answers again: every request times out (3 s: a busy runner still answers the probe in time).
    const silent = http.createServer((req, res) => void (req.method === 'OPTIONS' && res.end()));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { server: broken, env: brokenEnv } = await external((base) => ({ interact: () => base.error(502, 'Bad gateway.') }));
    // Knows the keys (a stop of a random job gets 404), then refuses them when a session is provisioned: a key revoked during the run, say.
    const { server: refusing, env: refusingEnv } = await external((base) => ({ interact: () => base.error(401, 'Unauthorized: Invalid token') }));
    try {
      const stalled = await conformance(['--rule', 'owner-stop'], {
        BASE_URL: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`,
        API_KEY: SECRETS[0],
        FOREIGN_API_KEY: SECRETS[1],
        REQUEST_TIMEOUT_MS: '3000',
      });
      assert.equal(stalled.code, 2, stalled.log.slice(-2000));
      assert.equal(stalled.summary?.verdict, 'error', stalled.log.slice(-3000));
      assert.match(stalled.log, /no complete answer within 3000 ms/);
      assert.match(stalled.log, /ERRORS OF THE RUN/);
      assert.deepEqual(filesContaining(stalled.reports), [], 'keys in the reports');
      assert.deepEqual(filesContaining(stalled.log), [], 'keys in the output');

      const failedProvisioning = await conformance(['--rule', 'owner-stop'], brokenEnv);
      assert.equal(failedProvisioning.code, 2, failedProvisioning.log.slice(-2000));
      assert.equal(failedProvisioning.summary!.rules['owner-stop'].tests[0].outcome, 'error');
      assert.match(failedProvisioning.summary!.rules['owner-stop'].tests[0].note!, /provisioning: POST \/v2\/scrape\/\{jobId\}\/interact must answer 200/);
      assert.equal(broken.activeSessions().length, 0);

      const refusedProvisioning = await conformance(['--rule', 'owner-stop'], refusingEnv);
      assert.equal(refusedProvisioning.code, 2, refusedProvisioning.log.slice(-2000));
      assert.equal(refusedProvisioning.summary!.rules['owner-stop'].tests[0].outcome, 'error');
      assert.match(
        refusedProvisioning.summary!.rules['owner-stop'].tests[0].note!,
        /provisioning: POST \/v2\/scrape\/\{jobId\}\/interact must answer 200 \(status 401\)/,
      );
    } finally {
      silent.closeAllConnections();
      silent.close();
      await broken.close();
      await refusing.close();
    }
  });

  test('a burst too slow to tell a limit from none is an error of the run naming the rate it reached, never a failure of the target', async () => {
    // Answers that take 40 ms, two at a time: at most 50 a second, below the reference's limit of 180.
    const slow = options('slow-answers');
    const noLimit = options('no-rate-limit');
    const throttledClient = { BURST_CONCURRENCY: '2', BURST_SECONDS: '2' };
    for (const behaviour of [slow, (base: Behaviour, state: ReferenceState) => ({ ...slow(base, state), ...noLimit(base, state) })]) {
      const { server, env } = await external(behaviour);
      try {
        const run = await conformance(['--rule', 'rate-limit'], { ...env, ...throttledClient });
        assert.equal(run.code, 2, run.log.slice(-3000));
        const burst = run.summary!.rules['rate-limit'].tests[0];
        assert.equal(burst.outcome, 'error');
        assert.match(
          burst.note!,
          /no 429 in \d+ requests over [\d.]+ s, at up to (\d|[1-9]\d) answered within one second: below BURST_PROOF_RATE \(400 a second\)/,
        );
        assert.equal(server.activeSessions().length, 0);
      } finally {
        await server.close();
      }
    }
  });

  test("a target that caps each team's live sessions passes: the run learns the cap, its tests take turns under it, and the summary says so", async () => {
    // The rules whose tests hold sessions longest and most at once, under a cap of 2 (a busy runner starts workers seconds apart: fewer rules need not meet the cap); the matrix runs every rule under caps of 1, 2 and 4.
    const holding = ['billing', 'foreign-team', 'authentication', 'stop-is-final', 'unknown-job'].flatMap((rule) => ['--rule', rule]);
    for (const [cap, args] of [
      [2, holding],
      [1, ['--rule', 'rate-limit', '--rule', 'sequences', '--rule', 'owner-stop']],
    ] as const) {
      const { server, env } = await external(capsSessions(cap, false).behaviour);
      try {
        const run = await conformance([...args], { ...env, BURST_API_KEY: SECRETS[2] });
        assert.equal(run.code, 3, run.log.slice(-3000));
        // Passes: nothing fails and nothing errs (under a cap of 1, a burst team's lone stop may go unthrottled: not verifiable).
        assert.deepEqual(
          notPassing(run.summary!).filter((t) => t.outcome === 'fail' || t.outcome === 'error'),
          [],
        );
        assert.equal(run.summary!.sessionCap?.cap, cap, 'the cap the run met');
        // A test waiting for room tries again on the job it scraped: a scrape costs a credit, a wait nothing (a few jobs never get a session).
        const { scrapes, sessions } = run.summary!.cost!;
        assert.ok(scrapes <= sessions + 6, `${scrapes} scrapes for ${sessions} sessions`);
        assert.match(run.summary!.sessionCap!.how, /^learnt from refused interacts of the (owner|burst)( and (owner|burst))? teams?$/);
        assert.match(run.log, new RegExp(`SESSION CAP: ${cap} live session\\(s\\) per team`));
        assert.equal(server.activeSessions().length, 0);
        assert.deepEqual(filesContaining(run.reports), [], 'keys in the reports');
      } finally {
        await server.close();
      }
    }
  });

  test('the session budget: a dry run sends nothing; a run opens at most its budget, and spends no more than it predicted', async () => {
    // Requests the target received, and sessions it opened (an interact that found none and answered 200).
    const seen = { requests: 0, sessions: 0 };
    const { server, env } = await external(
      (base, state) => ({
        send: (res, reply) => ((seen.requests += 1), base.send(res, reply)),
        interact: (team, jobId, body) => {
          const fresh = !state.sessions.has(jobId);
          const reply = base.interact(team, jobId, body);
          if (fresh && reply.status === 200) seen.sessions += 1;
          return reply;
        },
      }),
      { limit: 100_000, windowMs: 1000 },
    );
    try {
      const dry = await conformance(['--dry-run'], env);
      assert.equal(dry.code, 0, dry.log);
      assert.match(
        dry.log,
        /^COST AT MOST: 40 session\(s\) \(SESSION_BUDGET=40; 15 of them the sequences rule's\), about 44 scrape\(s\) and [\d.]+ credit\(s\)/m,
      );
      assert.equal(seen.requests, 0, 'a dry run sent requests');
      // The default budget, all of it the sequences rule's: it searches until it is spent, not until its time is up.
      const searched = await conformance(['--rule', 'sequences'], { ...env, SEQUENCE_SECONDS: '60', SEQUENCE_BUDGET: '' });
      assert.equal(searched.code, 3, searched.log.slice(-3000));
      assert.ok(seen.sessions <= 40 && searched.summary!.cost!.sessions <= 40, `${seen.sessions} sessions opened, ${searched.summary!.cost!.sessions} counted`);
      assert.match(searched.log, /SEQUENCES: .*, 36 of its 36 session\(s\); systematic phase: all 1-step patterns/);
      const predicted = searched.summary!.cost!.predicted!;
      assert.equal(predicted.sessions, 40);
      // The target's own account of the run: every session's charge and every scrape's.
      const charged = [...server.state.charges, ...server.state.scrapes].reduce((sum, charge) => sum + charge.credits, 0);
      assert.ok(charged > 0 && charged <= predicted.credits, `charged ${charged}, predicted ${predicted.credits}`);
      // A budget below the rules' needs: the tests that get no session are not verifiable, and say which budget verifies them.
      seen.sessions = 0;
      const short = await conformance(['--rule', 'billing', '--rule', 'sequences'], { ...env, SESSION_BUDGET: '2' });
      assert.ok(seen.sessions <= 2, `${seen.sessions} sessions opened with SESSION_BUDGET=2`);
      const refused = notPassing(short.summary!).filter(
        (t) =>
          t.outcome === 'not verifiable' &&
          /session budget \(2, as predicted: SESSION_BUDGET.*a budget of 4 or more verifies every chosen test/.test(t.note ?? ''),
      );
      assert.equal(refused.length, 2, JSON.stringify(notPassing(short.summary!)));
      assert.equal(server.activeSessions().length, 0);
    } finally {
      await server.close();
    }
  });

  test('with its defaults, the sequences rule catches every order-only fault served as a remote target (50 a second), in a history of at most 5 steps', async () => {
    const caught = async (variant: (typeof orderFaults)[number]) => {
      const { server, env } = await external(variant.options.behaviour, { limit: 50, windowMs: 1000 });
      try {
        const run = await conformance(['--rule', 'sequences'], { ...env, SEQUENCE_SECONDS: '', SEQUENCE_BUDGET: '' });
        const test = run.summary!.rules.sequences.tests[0];
        assert.equal(test.outcome, 'fail', `${variant.name}: ${test.note}\n${run.log.slice(-2000)}`);
        const steps = Number(/A history of (\d+) steps breaks the model/.exec(run.log)?.[1]);
        assert.ok(steps <= 5, `${variant.name}: a history of ${steps} steps`);
        if (!variant.leaksSessions) assert.equal(server.activeSessions().length, 0, `${variant.name}: sessions left running`);
      } finally {
        await server.close();
      }
    };
    for (let i = 0; i < orderFaults.length; i += 2) await Promise.all(orderFaults.slice(i, i + 2).map(caught));
  });

  test('against a strict limit, the sequences rule paces itself and ends within its time', async () => {
    // 6 requests in 3 s: a 429 comes within the first history, and every wait lasts up to 3 s.
    const { server, env } = await external(undefined, { limit: 6, windowMs: 3000 });
    try {
      const run = await conformance(['--rule', 'sequences'], { ...env, SEQUENCE_SECONDS: '8' });
      assert.equal(run.summary!.rules.sequences.tests[0].outcome, 'pass', run.log.slice(-3000));
      assert.match(
        run.log,
        /SEQUENCES: searched [1-9]\d* histories, \d+ steps, \d+ requests to stop and interact in [\d.]+ s \([1-9]\d* request\(s\) waited behind the team's rate limit, [1-9]\d* of them after a 429 of their own\), \d+ of its \d+ session\(s\); systematic phase: /,
      );
      // 8 s at 2 requests a second reach few 3-step patterns: the run says so, and what would reach them all.
      assert.match(
        run.summary!.rules.sequences.tests[0].note ?? '',
        /the systematic phase did not reach every 3-step pattern: they take 343 sessions and about 1715 requests to stop and interact, SESSION_BUDGET=\d+, SEQUENCE_SECONDS=\d+ and SEQUENCE_BUDGET=2859 at this target's pace/,
      );
      const seconds = Number(/<testcase classname="sequences"[^>]*time="([\d.]+)"/.exec(readFileSync(path.join(run.reports, 'junit.xml'), 'utf8'))?.[1]);
      // Its 8 s, and at most one request's wait and the last history's cleanup past them.
      assert.ok(seconds <= 8 + 6, `the rule took ${seconds} s`);
      assert.equal(server.activeSessions().length, 0);
    } finally {
      await server.close();
    }
  });

  test('a test that could not be verified reads so in the Allure results, with its reason, not as an error', async () => {
    // Under STRICT, a search too short to reach every 3-step pattern proves nothing.
    const run = await conformance(['--rule', 'sequences', '--strict'], { SEQUENCE_BUDGET: '20' });
    const { outcome, note } = run.summary!.rules.sequences.tests[0];
    assert.equal(outcome, 'not verifiable', run.log.slice(-3000));
    const folder = path.join(run.reports, 'allure-results');
    const [result] = readdirSync(folder)
      .filter((f) => f.endsWith('-result.json'))
      .map((f) => JSON.parse(readFileSync(path.join(folder, f), 'utf8')));
    // Allure would head a message "Error": the reason is the description, and a label its category matches.
    assert.deepEqual([result.status, result.statusDetails.message, result.description], ['skipped', undefined, `Not verifiable: ${note}`]);
    assert.match(result.name, /^\[not verifiable\] /);
    assert.ok(
      result.labels.some((l: { name: string; value: string }) => l.name === 'notVerifiable' && l.value === note),
      JSON.stringify(result.labels),
    );
  });

  test('a partial run says incomplete (exit 3) and names what did not run; shard summaries merge into one verdict', async () => {
    const grep = await conformance(['--grep', 'a stop whose jobId is not a UUID']);
    assert.equal(grep.code, 3, grep.log.slice(-2000));
    assert.equal(grep.summary?.verdict, 'incomplete');
    assert.match(grep.log, /NOT RUN: \d+ of \d+ tests/);
    assert.ok(grep.summary!.notRun.includes('billing/long-hold'));
    const shard = await conformance(['--shard=2/2', '--rule', 'unknown-job']);
    assert.equal(shard.code, 3, `one shard alone is incomplete:\n${shard.log.slice(-2000)}`);
    assert.equal(shard.summary?.shard, '2/2');
    assert.match(shard.log, /merge the shards: npm run verdict/);

    // Two shards of the complete run (the command's --shards runs real ones: selftest/package.test.ts): each test in one of them.
    const { summary: whole } = await completeRun();
    assert.ok(whole, 'the complete run wrote its summary');
    const halves = [0, 1].map((half) => {
      const summary = structuredClone(whole) as Summary;
      const tests = Object.values(summary.rules).flatMap((rule) => rule.tests);
      for (const [index, t] of tests.entries()) if (index % 2 !== half) t.outcome = 'not run';
      Object.assign(summary, {
        shard: `${half + 1}/2`,
        verdict: 'incomplete',
        exitCode: 3,
        notRun: tests.filter((t) => t.outcome === 'not run').map((t) => t.id),
      });
      const file = path.join(tempDir('shard-'), 'conformance-summary.json');
      writeFileSync(file, JSON.stringify(summary));
      return { summary, file };
    });
    const verdict = (files: string[]) =>
      runCommand(process.execPath, [BIN, 'verdict', ...files, '--out', path.join(tempDir('merged-'), 'merged.json')], isolatedEnv({}));
    const merged = await verdict(halves.map((half) => half.file));
    assert.equal(merged.code, 0, merged.log);
    assert.match(merged.log, /Verdict: PASS/);

    const failing = halves[0].summary;
    Object.values(failing.rules)
      .flatMap((rule) => rule.tests)
      .find((t) => t.outcome === 'pass')!.outcome = 'fail';
    writeFileSync(halves[0].file, JSON.stringify(failing));
    const mergedFail = await verdict(halves.map((half) => half.file));
    assert.equal(mergedFail.code, 1, mergedFail.log);
    const missing = await verdict([halves[1].file]);
    assert.equal(missing.code, 3, 'one shard of two is incomplete');
  });

  test('bad configurations stop before any test with one message, listing every problem, and exit code 2', async () => {
    const unknownDeviation = path.join(tempDir('deviations-'), 'unknown.json');
    writeFileSync(
      unknownDeviation,
      JSON.stringify({ deviations: [{ test: 'billing/credits-of-a-renamed-test', check: 'credits', reason: 'whole-credit billing' }] }),
    );
    // Settings are checked as a whole: problems that do not hide one another share a run, and its one message lists them all.
    // A plain HTTP port, given as https.
    const plain = http.createServer((_request, response) => response.end());
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
    plain.unref();
    const cases: [Record<string, string>, RegExp[], string[]?][] = [
      [{ BASE_URL: 'http://127.0.0.1:9' }, [/API_KEY .*is not/]],
      [
        { BASE_URL: 'not a url', API_KEY: 'same-key-1', FOREIGN_API_KEY: 'same-key-1', BURST_REQUESTS: 'many', KNOWN_DEVIATIONS: 'missing.json' },
        [/not a valid URL/, /same key/, /BURST_REQUESTS must be an integer/, /does not exist/],
      ],
      [{ BASE_URL: 'http://127.0.0.1:9', API_KEY: 'a-key-0001', FOREIGN_API_KEY: 'b-key-0002' }, [/unreachable/]],
      [
        { BASE_URL: 'http://api.example.com', API_KEY: 'a-key-0001', FOREIGN_API_KEY: 'b-key-0002', BURST_API_KEY: 'a-key-0001' },
        [/plain http to api\.example\.com: the keys would travel in clear/, /BURST_API_KEY is the same key as API_KEY or FOREIGN_API_KEY/],
      ],
      [
        { API_KEY: 'a-key-0001', KNOWN_DEVIATIONS: unknownDeviation },
        [/without BASE_URL/, /entry 1 \("billing\/credits-of-a-renamed-test"\): "test" must be the id of a test/],
      ],
      [{ BURST_API_KEY: 'c-key-0003' }, [/without BASE_URL/]],
      [{}, [/no rule has the id nonsense/], ['--rule', 'nonsense']],
      [{}, [/unknown option --bogus: see --help/], ['--bogus']],
      // Flags and the environment in one message; the nearest flag, when one is close; a key given as a flag is never repeated.
      [{ BASE_URL: 'http://127.0.0.1:9' }, [/unknown option --stirct; did you mean --strict\?/, /API_KEY .*is not/], ['--stirct']],
      [
        {},
        [/--api-key, --foreign-api-key: keys are read from the environment only \(API_KEY, FOREIGN_API_KEY, BURST_API_KEY, or \.env\), never from flags/],
        ['--api-key', SECRETS[0], `--foreign-api-key=${SECRETS[1]}`],
      ],
      [
        { BASE_URL: `https://127.0.0.1:${(plain.address() as AddressInfo).port}`, API_KEY: 'a-key-0001', FOREIGN_API_KEY: 'b-key-0002' },
        [/answered plain HTTP, not https \(\w+\): if that is the address meant, use http:\/\/127\.0\.0\.1:\d+ in BASE_URL/],
      ],
    ];
    // A folder another live run writes to (this process stands for it).
    const busy = tempDir('busy-reports-');
    mkdirSync(runFolder(busy), { recursive: true });
    writeFileSync(channel(busy, 'lock'), String(process.pid));
    cases.push([{ REPORTS_DIR: busy }, [/Another run \(process \d+\) is writing to/]]);
    const runs = cases.flatMap(([env, messages, args], index) => {
      const commands: [string, string[]][] = [[process.execPath, [BIN, ...(args ?? [])]]];
      // Playwright's own command loads the same settings through playwright.config.ts: a missing key, an unreachable target, a busy folder.
      if (index === 0 || index === 2 || index === cases.length - 1) commands.push([PLAYWRIGHT, ['test']]);
      return commands.map(([command, commandArgs]) => ({ env, messages, args, command, commandArgs }));
    });
    // Four at a time: each is a process start and a message.
    for (let next = 0; next < runs.length; next += 4) {
      await Promise.all(
        runs.slice(next, next + 4).map(async ({ env, messages, args, command, commandArgs }) => {
          const { code, log } = await runCommand(command, commandArgs, isolatedEnv({ REPORTS_DIR: tempDir('bad-config-'), ...env }));
          assert.equal(code, 2, `${JSON.stringify(env)} ${args ?? ''}: ${log}`);
          for (const message of messages) assert.match(log, message);
          assert.ok((log.match(/Configuration error/g)?.length ?? 0) <= 1, `one message:\n${log}`);
          assert.doesNotMatch(log, /passed|failed|at .*\.ts:\d+/, 'no test ran and no stack trace');
          assert.deepEqual(filesContaining(log), [], 'keys in the output');
        }),
      );
    }
    plain.close();
    rmSync(runFolder(busy), { recursive: true, force: true });
  });

  test('a key the target does not know stops the run within seconds, before any test or session, with exit code 2 and the variable named', async () => {
    const { server, env } = await external(undefined);
    const unknown = 'fc-a-key-no-team-was-given-0009';
    try {
      // 15 s on an idle machine; on a busy one, four times what starting the command takes there (a dry run beside it).
      const dryStarted = performance.now();
      assert.equal((await conformance(['--dry-run'], env)).code, 0);
      const bound = Math.max(15, (4 * (performance.now() - dryStarted)) / 1000);
      for (const variable of ['API_KEY', 'FOREIGN_API_KEY']) {
        const started = performance.now();
        const run = await conformance([], { ...env, [variable]: unknown });
        const seconds = (performance.now() - started) / 1000;
        assert.equal(run.code, 2, run.log);
        assert.ok(seconds < bound, `${variable}: exit after ${seconds.toFixed(1)} s, more than ${bound.toFixed(1)} s`);
        assert.match(run.log, new RegExp(`^  - ${variable} was refused: .* answered 401 \\("Unauthorized: Invalid token"\\)`, 'm'));
        assert.equal((run.log.match(/was refused/g) ?? []).length, 1, `only ${variable}:\n${run.log}`);
        assert.doesNotMatch(run.log, /passed|failed|at .*\.ts:\d+/, 'no test ran and no stack trace');
        assert.equal(server.state.jobs.size + server.state.sessions.size + server.state.stopped.size, 0, 'nothing scraped, no session opened');
        assert.ok(!existsSync(path.join(run.reports, 'ledger.jsonl')), 'nothing in the ledger');
        assert.deepEqual(filesContaining(run.log, [...SECRETS, unknown]), [], 'keys in the output');
      }
    } finally {
      await server.close();
    }
  });

  test('the reference command names its keys file where the kit is installed', async () => {
    const child = spawn(process.execPath, [BIN, 'reference', '--port', '0'], { env: isolatedEnv({}) });
    try {
      let output = '';
      const line = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (chunk) => {
          output += chunk;
          const found = /^Reference server listening on .*$/m.exec(output);
          if (found) resolve(found[0]);
        });
        child.on('exit', () => reject(new Error(`the reference ended:\n${output}`)));
      });
      const teams = /\(teams and keys: (.+)\)$/.exec(line)?.[1];
      assert.equal(teams, realpathSync(path.join(ROOT, 'fixtures', 'teams.json')), line);
    } finally {
      child.kill();
    }
  });

  const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  /** What in a page's HTML would have the browser ask another host for something. */
  const OUTSIDE_LOADS = [
    /<\w+\b[^>]*?\s(?:src|srcset|poster)\s*=\s*["']?(?:https?:)?\/\/[^\s"'>]*/gi, // scripts, images, frames, media
    /<link\b[^>]*?\shref\s*=\s*["']?(?:https?:)?\/\/[^\s"'>]*/gi, // stylesheets, fonts, preloads
    /(?:url\(|@import)\s*["']?(?:https?:)?\/\/[^\s"')]*/gi, // CSS
    /\b(?:fetch|import|sendBeacon)\(\s*["'`](?:https?:)?\/\/[^\s"'`]*/gi,
    /googletagmanager|google-analytics|\bgtag\(/gi, // Allure's analytics, however it is loaded
  ];

  test('the Allure report of a run with known deviations shows every rule, its status and the deviations in a real browser, and asks no other host for anything', {
    skip: !existsSync(CHROMIUM) && `no Chromium at ${CHROMIUM}: install it with "apt-get install -y chromium" (as root) or set CHROMIUM_PATH`,
  }, async () => {
    const report = await declaredReport;
    assert.ok(report && existsSync(report), 'the production-like run above wrote its report');
    // A report of a company's staging must not call out (src/report/allure-report.ts strips Allure's analytics).
    const html = readFileSync(report, 'utf8');
    assert.deepEqual(
      OUTSIDE_LOADS.flatMap((pattern) => html.match(pattern) ?? []).map((found) => found.slice(-200)),
      [],
      'outside loads in the HTML',
    );
    assert.match(html, /<meta http-equiv="Content-Security-Policy" content="default-src 'self' data: blob: [^"]*">/, 'the page allows no other host');
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
    try {
      const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
      // Every request to another host is refused and recorded, and so is every load the page's policy refused.
      const outside: string[] = [];
      await context.route(
        (url) => !['file:', 'data:', 'blob:', 'about:'].includes(url.protocol),
        (route) => {
          outside.push(route.request().url());
          return route.abort();
        },
      );
      const page = await context.newPage();
      const consoleErrors: string[] = [];
      page.on('console', (message) => message.type() === 'error' && consoleErrors.push(message.text().slice(0, 200)));
      page.on('console', (message) => /Content Security Policy/.test(message.text()) && outside.push(message.text().slice(0, 300)));
      await page.goto(`file://${report}`);
      const groups = RULE_IDS.map(reportGroupOf);
      for (const group of groups) {
        await page
          .getByText(group, { exact: false })
          .first()
          .waitFor({ timeout: 20_000 })
          .catch((error: Error) => {
            throw new Error(`${error.message.split('\n')[0]}\nbrowser console errors: ${JSON.stringify(consoleErrors.slice(0, 5))}`);
          });
      }
      const text = await page.locator('body').innerText();
      assert.deepEqual(
        text
          .split('\n')
          .map((line) => line.trim())
          .filter((line) => groups.includes(line)),
        groups,
        'the rules, in their order',
      );
      assert.match(text, new RegExp(`Total\\s+${TEST_IDS.length}\\b`), `the report counts the run's ${TEST_IDS.length} tests`);
      const results = path.join(path.dirname(path.dirname(report)), 'allure-results');
      assert.match(
        readdirSync(results)
          .filter((f) => f.endsWith('-result.json'))
          .map((f) => readFileSync(path.join(results, f), 'utf8'))
          .join(''),
        /knownDeviation/,
      );
      await page.getByText('Categories', { exact: false }).first().click();
      await page.getByText('Known deviation', { exact: false }).first().click();
      await page.getByText('[known deviation]', { exact: false }).first().waitFor({ timeout: 20_000 });
      assert.deepEqual(outside, [], 'requests to other hosts');
    } finally {
      await browser.close();
    }
  });
});
