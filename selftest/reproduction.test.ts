/**
 * Reproductions judge as the run does (one `expect`, held to Playwright's in suite.test.ts): the
 * bundled runner carries no Playwright and no key, a trace's arguments are written as data, never as a caller, and a request the run sent
 * into the team's rate limit goes into it again.
 */

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { createReferenceServer } from '../reference/server';
import type { Settings } from '../src/config/settings';
import type { Answer } from '../src/domain/answer';
import { keysOf } from '../src/domain/target';
import { composeHistory } from '../src/reproduction/compose';
import { type Plan, planOf } from '../src/reproduction/plan';
import { replaySteps, reproduce } from '../src/reproduction/runner';
import { Trace } from '../src/reproduction/trace';
import { writeReproduction } from '../src/reproduction/write';
import { isolatedEnv, ROOT, runCommand } from './matrix';
import { SECRETS } from './secrets';
import { variants } from './variants';

test('a reproduction is one file of at most 400 KB, without Playwright or a key; a caller is never written into it', async () => {
  const reportsDir = mkdtempSync(path.join(os.tmpdir(), 'reproduction-'));
  const trace = new Trace();
  const answer: Answer = {
    method: 'DELETE',
    path: '/v2/scrape/3f2a1c4e-8b7d-4e6f-9a0b-1c2d3e4f5a6b/interact',
    status: 404,
    headers: {},
    text: `{"success":false,"error":"x"}`,
    body: { success: false, error: 'x' },
    sentAt: 1,
    receivedAt: 2,
    attempts: 1,
  };
  const owner = { name: 'owner team', role: 'owner', authorization: `Bearer ${SECRETS[0]}`, owner: true as const };
  trace.record(answer, { method: 'DELETE', path: answer.path, as: owner });
  assert.throws(() => trace.serialize({ as: owner }), /a caller cannot be written/);
  // The embedded reference is recorded by name: its port changes each run.
  const settings = {
    reportsDir,
    embedded: true,
    baseURL: 'http://127.0.0.1:43210',
    requestTimeoutMs: 10_000,
    maxBodyBytes: 1_000_000,
    backoffBudgetMs: 6_000,
  } as Settings;
  const file = await writeReproduction(settings, {
    testId: 'unknown-job/random-uuid',
    title: 'a title',
    trace,
    failures: [{ check: 'status', judge: 'status', outcome: 'failed', message: 'm', answers: [], call: { judge: 'status', args: [answer, 200] } }],
  });
  const text = readFileSync(file!, 'utf8');
  assert.ok(text.length < 400_000, `${text.length} characters`);
  assert.doesNotMatch(text, /@playwright|playwright-core|127\.0\.0\.1/);
  assert.ok(!SECRETS.some((key) => text.includes(key)));
  rmSync(reportsDir, { recursive: true, force: true });
  const plan = planOf(text);
  assert.deepEqual(plan.checks[0].args, [{ $answer: 0 }, 200], 'an answer is written as its step');
  assert.equal(plan.made?.target, 'embedded reference');
  assert.deepEqual(Object.keys(plan.steps[0]).sort(), ['as', 'method', 'on429', 'path', 'receivedAt', 'sentAt', 'seq', 'status']);
});

test("a stop the run sent into the team's rate limit is sent into it again: a target that carries out the stops it throttles shows it, a correct one does not", async () => {
  const stopPath = '/v2/scrape/3f2a1c4e-8b7d-4e6f-9a0b-1c2d3e4f5a6b/interact';
  const plan = (limited: boolean): Plan => ({
    test: 'authentication/basic-scheme',
    title: 'a title',
    steps: [
      {
        seq: 0,
        method: 'POST',
        path: '/v2/scrape',
        data: { url: 'https://example.com' },
        as: 'owner',
        on429: 'retry',
        sentAt: 0,
        receivedAt: 2,
        status: 200,
        createdJob: '3f2a1c4e-8b7d-4e6f-9a0b-1c2d3e4f5a6b',
      },
      {
        seq: 1,
        method: 'POST',
        path: stopPath,
        data: { code: '1', language: 'node' },
        as: 'owner',
        on429: 'retry',
        provisions: true,
        sentAt: 3,
        receivedAt: 5,
        status: 200,
      },
      {
        seq: 2,
        method: 'DELETE',
        path: stopPath,
        as: 'owner',
        connection: 1,
        on429: 'retry',
        sentAt: 6,
        receivedAt: 1100,
        status: 200,
        ...(limited ? { limited: true as const } : {}),
      },
    ],
    checks: [{ check: 'status', judge: 'status', args: [{ $answer: 2 }, 200], message: 'in the run' }],
    schemeWordIgnored: false,
    limits: { requestTimeoutMs: 10_000, maxBodyBytes: 1_000_000, backoffBudgetMs: 6_000 },
  });
  const faulty = variants.find((variant) => variant.name === 'throttled-stop-still-stops')!;
  const servers = await Promise.all([createReferenceServer({ ...faulty.options }), createReferenceServer({ rateLimit: { limit: 40, windowMs: 3000 } })]);
  try {
    const { apiKey } = keysOf({ baseURL: servers[0].url, embedded: true }, {} as Settings);
    const env = (server: (typeof servers)[number]) => ({ BASE_URL: server.url, API_KEY: apiKey });
    const lines: string[] = [];
    assert.equal(await reproduce(plan(true), env(servers[0]), (line) => lines.push(line)), 1, lines.join('\n'));
    assert.match(lines.join('\n'), /met the team's rate limit after \d+/);
    assert.equal(await reproduce(plan(true), env(servers[1]), () => {}), 0, 'a correct target');
    assert.equal(await reproduce(plan(false), env(servers[0]), () => {}), 0, 'without the limit, the fault does not show');
    assert.deepEqual(
      servers.map((server) => server.activeSessions().length),
      [0, 0],
      'no session left',
    );
  } finally {
    await Promise.all(servers.map((server) => server.close()));
  }
});

test('a race the replay cannot send as close as the run did is no verdict (exit 2); sent as close, it decides', async () => {
  const job = '3f2a1c4e-8b7d-4e6f-9a0b-1c2d3e4f5a6b';
  const stopPath = `/v2/scrape/${job}/interact`;
  // A second stop 1 ms after the first's answer (its own answer slow): on a target that ends a session 100 ms after its stop, it finds the session again.
  const plan: Plan = {
    test: 'stop-is-final/second-stop',
    title: 'a title',
    steps: [
      {
        seq: 0,
        method: 'POST',
        path: '/v2/scrape',
        data: { url: 'https://example.com' },
        as: 'owner',
        on429: 'retry',
        sentAt: 0,
        receivedAt: 2,
        status: 200,
        createdJob: job,
      },
      {
        seq: 1,
        method: 'POST',
        path: stopPath,
        data: { code: '1', language: 'node' },
        as: 'owner',
        on429: 'retry',
        provisions: true,
        sentAt: 3,
        receivedAt: 5,
        status: 200,
      },
      { seq: 2, method: 'DELETE', path: stopPath, as: 'owner', on429: 'retry', sentAt: 6, receivedAt: 8, status: 200 },
      { seq: 3, method: 'DELETE', path: stopPath, as: 'owner', on429: 'retry', sentAt: 9, receivedAt: 60, status: 200 },
    ],
    checks: [{ check: 'status', judge: 'status', args: [{ $answer: 3 }, 404], message: 'in the run' }],
    schemeWordIgnored: false,
    limits: { requestTimeoutMs: 10_000, maxBodyBytes: 1_000_000, backoffBudgetMs: 6_000 },
  };
  const faulty = variants.find((variant) => variant.name === 'concurrent-stops-both-charge')!;
  const servers = await Promise.all([createReferenceServer({ ...faulty.options }), createReferenceServer({})]);
  try {
    const { apiKey } = keysOf({ baseURL: servers[0].url, embedded: true }, {} as Settings);
    const env = (server: (typeof servers)[number]) => ({ BASE_URL: server.url, API_KEY: apiKey });
    // A busy machine: the replay's own process is held 150 ms once the first stop has answered.
    const busy = (lines: string[]) => (line: string) => {
      lines.push(line);
      if (line.startsWith('#2 ')) for (const until = performance.now() + 150; performance.now() < until; );
    };
    const lines: string[] = [];
    assert.equal(await reproduce(plan, env(servers[0]), busy(lines)), 2, lines.join('\n'));
    assert.match(
      lines.join('\n'),
      /COULD NOT TELL: the requests did not come as close together as in the run \(#3 went \d+ ms after the answer it waited for, where in the run at most 54 ms passed/,
    );
    assert.equal(await reproduce(plan, env(servers[1]), busy([])), 2, 'a correct target, late: no verdict either');
    const quick: string[] = [];
    assert.equal(await reproduce(plan, env(servers[0]), (line) => quick.push(line)), 1, quick.join('\n'));
    assert.equal(await reproduce(plan, env(servers[1]), () => {}), 0, 'a correct target, as close as the run');
    // The faulty target ends its sessions 100 ms after their stop.
    await new Promise((resolve) => setTimeout(resolve, 150));
    assert.deepEqual(
      servers.map((server) => server.activeSessions().length),
      [0, 0],
      'no session left',
    );
  } finally {
    await Promise.all(servers.map((server) => server.close()));
  }
});

test('the requests the run sent while a request went into the limit wait for its drain, and still go at once with it', async () => {
  const stop = (seq: number, sentAt: number, limited: boolean) => ({
    seq,
    method: 'DELETE',
    path: '/v2/scrape/3f2a1c4e-8b7d-4e6f-9a0b-1c2d3e4f5a6b/interact',
    as: 'owner',
    on429: 'retry' as const,
    sentAt,
    receivedAt: sentAt + 100,
    status: 200,
    ...(limited ? { limited: true as const } : {}),
  });
  const sent: number[] = [];
  const start = performance.now();
  await replaySteps(
    [stop(0, 0, true), stop(1, 10, false), stop(2, 500, false)],
    async (step) => {
      sent[step.seq] = performance.now() - start;
      return { receivedAt: performance.now() } as Answer;
    },
    [],
    () => new Promise((resolve) => setTimeout(resolve, 300)),
  );
  assert.ok(sent[0] >= 290 && sent[1] >= 290, `both after the drain: ${sent.map(Math.round)}`);
  assert.ok(Math.abs(sent[1] - sent[0]) < 60, `at once: ${sent.map(Math.round)}`);
  assert.ok(sent[2] - sent[0] >= 380, `the next after its pause: ${sent.map(Math.round)}`);
});

test("a history's reproduction keeps the request each of its kept-alive connections carried before it, whatever its job", () => {
  const trace = new Trace();
  const owner = { name: 'owner team', role: 'owner', authorization: 'Bearer x', owner: true as const };
  const noKey = { name: 'no key', role: 'noKey', withoutValidKey: true as const };
  const connection = {};
  const answer = (method: string, path: string, at: number, body?: Record<string, unknown>): Answer => ({
    method,
    path,
    status: 200,
    headers: {},
    text: '',
    body,
    sentAt: at,
    receivedAt: at + 1,
    attempts: 1,
  });
  const [jobA, jobB] = ['3f2a1c4e-8b7d-4e6f-9a0b-1c2d3e4f5a6b', '4e3b2d5f-9c8e-4f70-8b1c-2d3e4f5a6b7c'];
  const record = (method: string, path: string, at: number, as: object, extra: Record<string, unknown> = {}, body?: Record<string, unknown>) => {
    const one = answer(method, path, at, body);
    trace.record(one, { method, path, as, ...extra } as never);
    return one;
  };
  record('POST', '/v2/scrape', 0, owner, {}, { data: { metadata: { scrapeId: jobA } } });
  record('DELETE', `/v2/scrape/${jobA}/interact`, 10, owner, { connection });
  record('POST', '/v2/scrape', 20, owner, {}, { data: { metadata: { scrapeId: jobB } } });
  record('POST', `/v2/scrape/${jobB}/interact`, 30, owner, { provisions: true });
  const refused = record('DELETE', `/v2/scrape/${jobB}/interact`, 40, noKey, { connection });
  const composed = composeHistory(trace, { call: { judge: 'modelRefusedStop', args: [refused, undefined, []] }, from: 2, to: 5 })!;
  const steps = composed.steps as { seq: number; method: string; path: string; as: string; connection?: number; provisions?: true }[];
  assert.deepEqual(
    steps.map((step) => `${step.method} ${step.as} ${step.connection ?? '-'}`),
    ['DELETE owner 1', 'POST owner -', 'POST owner -', 'DELETE noKey 1'],
    "the owner's earlier request on that connection comes first",
  );
  assert.ok(steps[0].path.includes(jobA));
  assert.deepEqual(composed.checks[0].args[0], { $answer: 3 });
});

test("the account's reproduction tells a session opened again on a job from its first one, even with the same figures", async () => {
  const { runJudge } = await import('../src/domain/named-checks').then((module) => ({
    runJudge: (judge: string, args: unknown[]) => module.runCheck({ judge, args } as never),
  }));
  const at = { n: 0 };
  const answer = (method: string, path: string, status: number, body?: Record<string, unknown>): Answer => ({
    method,
    path,
    status,
    headers: {},
    text: '',
    body,
    sentAt: ++at.n,
    receivedAt: ++at.n,
    attempts: 1,
  });
  const job = '/v2/scrape/3f2a1c4e-8b7d-4e6f-9a0b-1c2d3e4f5a6b/interact';
  const reading = (remaining: number) => answer('GET', '/v2/team/credit-usage', 200, { data: { remainingCredits: remaining } });
  const settled = { success: true, status: 'stopped', sessionDurationMs: 1000, creditsBilled: 0.033333 };
  const before = reading(100);
  const scrape = answer('POST', '/v2/scrape', 200, { data: { metadata: { creditsUsed: 1 } } });
  const opened = answer('POST', job, 200);
  const first = answer('DELETE', job, 200, settled);
  const reopened = answer('POST', job, 200);
  const second = answer('DELETE', job, 200, settled);
  const after = [reading(98.933334), reading(98.933334)];
  const judged = (interacts?: Answer[], rebills = true) => {
    try {
      return runJudge('accountCharged', [before, after, [scrape], [first, second], 10_000, false, interacts, rebills]) ?? 'pass';
    } catch (error) {
      return `fail: ${(error as Error).message.split('\n')[0]}`;
    }
  };
  assert.equal(judged([opened, reopened]), 'pass', 'two sessions, each charged once');
  assert.equal(judged([opened, reopened], false), 'pass', 'the account alone (the run replaying the sessions it blames) tells them apart too');
  assert.match(
    String(judged([opened])),
    /exactly what this session settled again/,
    'without the interact between, the second answer repeats the first settlement, and the account was charged for it again',
  );
});

test('replay says which target and when its reproductions were made, and refuses another target (exit 2) unless told to go on with --any-target', async () => {
  const reportsDir = mkdtempSync(path.join(os.tmpdir(), 'replay-target-'));
  const servers = await Promise.all([createReferenceServer({}), createReferenceServer({})]);
  try {
    // A stop of an unknown job, which the run is said to have wanted answered 200: every correct target still fails it.
    const trace = new Trace();
    const answer: Answer = {
      method: 'DELETE',
      path: '/v2/scrape/3f2a1c4e-8b7d-4e6f-9a0b-1c2d3e4f5a6b/interact',
      status: 404,
      headers: {},
      text: '{}',
      body: {},
      sentAt: 1,
      receivedAt: 2,
      attempts: 1,
    };
    trace.record(answer, { method: 'DELETE', path: answer.path, as: { name: 'owner team', role: 'owner', authorization: 'Bearer x', owner: true } });
    const settings = {
      reportsDir,
      baseURL: servers[0].url,
      embedded: false,
      requestTimeoutMs: 10_000,
      maxBodyBytes: 1_000_000,
      backoffBudgetMs: 6_000,
    } as Settings;
    const file = await writeReproduction(settings, {
      testId: 'unknown-job/random-uuid',
      title: 'a title',
      trace,
      failures: [{ check: 'status', judge: 'status', outcome: 'failed', message: 'm', answers: [], call: { judge: 'status', args: [answer, 200] } }],
    });
    assert.equal(planOf(readFileSync(file!, 'utf8')).made?.target, servers[0].url);
    const { apiKey, foreignApiKey } = keysOf({ baseURL: servers[0].url, embedded: true }, {} as Settings);
    const replay = (url: string, ...args: string[]) =>
      runCommand(
        process.execPath,
        [path.join(ROOT, 'bin', 'stop-session-conformance.js'), 'replay', reportsDir, ...args],
        isolatedEnv({ BASE_URL: url, API_KEY: apiKey, FOREIGN_API_KEY: foreignApiKey }),
      );
    const made = `made against ${servers[0].url} at \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z`;

    const elsewhere = await replay(servers[1].url);
    assert.equal(elsewhere.code, 2, elsewhere.log);
    assert.match(
      elsewhere.log,
      new RegExp(`^Configuration error:\\n  - the reproductions in \\S+ were ${made}, and the target configured now is ${servers[1].url}\\. `),
    );
    assert.match(
      elsewhere.log,
      new RegExp(`set BASE_URL=${servers[0].url} and its keys; to replay them against ${servers[1].url} all the same, give --any-target\\.`),
    );
    assert.doesNotMatch(elsewhere.log, /STILL FAILING|FIXED/, 'nothing replayed');

    const anyway = await replay(servers[1].url, '--any-target');
    assert.equal(anyway.code, 1, anyway.log);
    assert.match(
      anyway.log,
      new RegExp(
        `^Replaying 1 reproduction\\(s\\) of \\S+ against ${servers[1].url}\\n${made.replace('made', 'Made')} \\(another target: --any-target\\)\\n  STILL FAILING +unknown-job/random-uuid`,
        'm',
      ),
    );
    const there = await replay(servers[0].url);
    assert.equal(there.code, 1, there.log);
    assert.match(there.log, new RegExp(`^${made.replace('made', 'Made')}$`, 'm'));
    assert.ok(![elsewhere.log, anyway.log, there.log].some((log) => log.includes(apiKey)), 'no key in the output');
  } finally {
    await Promise.all(servers.map((server) => server.close()));
    rmSync(reportsDir, { recursive: true, force: true });
  }
});
