/**
 * The command against hostile targets: each case runs `stop-session-conformance` against a target
 * that misbehaves, or kills part of the run mid-way, and checks that it ends with exit code 1 or 2
 * and a message naming what happened (the budget that ended it), that no session is left running
 * on the server's side (after `cleanup` where the command itself was killed), and that no key
 * reaches its output, its reports or its ledger. Time bounds are the budgets that should end each
 * case plus five baselines: the same command against a correct target, timed in this run,
 * so that a slow or busy machine moves both alike. Prints one table of the cases at the end.
 */

import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import type http from 'node:http';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import zlib from 'node:zlib';
import { createReferenceServer, type ReferenceOptions, type ReferenceServer, type Reply } from '../reference/server';
import { runFolder } from '../src/coordination/run-folder';
import type { Summary } from '../src/report/verdict';
import { isolatedEnv, ROOT, runCommand } from './matrix';
import { FREE_PLAN, onPlan, type Plan, PRODUCTION_FILE } from './production';
import { filesContaining, SECRETS } from './secrets';
import { tempDir } from './temp';

const BIN = path.join(ROOT, 'bin', 'stop-session-conformance.js');
/** Short bounds, so that each case takes seconds; one small rule. */
// These runs are about ending in bounded time; the account check (its opening and settling reads, a second or more against a remote target) is proven elsewhere.
const SHORT = { REQUEST_TIMEOUT_MS: '2000', BACKOFF_BUDGET_MS: '2000', TEST_TIMEOUT_MS: '15000', MAX_BODY_BYTES: '65536', ACCOUNT_CHECK: '0' };
const RULE = ['--rule', 'owner-stop'];
/** Cases at once: each is a whole run (command, Playwright, a worker, Allure); more than 4 on 2 cores only slows each down. */
const CONCURRENCY = 4;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

type Behaviour = ReferenceOptions['behaviour'];
type Writer = (res: http.ServerResponse, reply: Reply) => void;

const isInteract = (res: http.ServerResponse) => res.req.method === 'POST' && /\/interact$/.test(res.req.url ?? '');

/** Does the work at once (an interact creates its session) and answers `delayMs` later, or never once the client is gone. */
const answersLate =
  (delayMs: number): Behaviour =>
  (base) => ({
    send(res, reply) {
      if (!isInteract(res)) return base.send(res, reply);
      const timer = setTimeout(() => base.send(res, reply), delayMs);
      res.on('close', () => clearTimeout(timer));
    },
  });

/** Stops the session as the reference does, then writes every stop's answer its own way. */
const stopAnswers =
  (write: Writer): Behaviour =>
  (base) => ({
    send: (res, reply) => (res.req.method === 'DELETE' ? write(res, reply) : base.send(res, reply)),
  });

/** The answer, padded with 1 KB of JSON white space, a byte every 100 ms: read to its end, it would take 100 s. */
const trickled: Writer = (res, reply) => {
  const payload = Buffer.from(JSON.stringify(reply.body).padEnd(1024));
  res.writeHead(reply.status, { 'content-type': 'application/json', 'content-length': String(payload.length) });
  let sent = 0;
  const timer = setInterval(() => {
    res.write(payload.subarray(sent, ++sent));
    if (sent < payload.length) return;
    clearInterval(timer);
    res.end();
  }, 100);
  res.on('close', () => clearInterval(timer));
};

const endless: Writer = (res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  const chunk = Buffer.alloc(16 * 1024, 32);
  const pump = () => {
    while (!res.destroyed && res.write(chunk));
  };
  res.on('drain', pump);
  pump();
};

const FIFTY_MB = Buffer.alloc(50 * 1024 * 1024, 32);
const fiftyMegabytes: Writer = (res) => {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(FIFTY_MB.length) });
  res.end(FIFTY_MB);
};

/** 60 KB on the wire, 60 MB once decompressed. */
const BOMB = zlib.gzipSync(Buffer.alloc(60 * 1024 * 1024, 32), { level: 9 });
const gzipBomb: Writer = (res) => {
  res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': String(BOMB.length) });
  res.end(BOMB);
};

interface Row {
  name: string;
  exit: string;
  seconds: number;
  left: number;
  message: string;
}
const rows: Row[] = [];

/** The command, started in its own process group with its own reports folder, against `server`. */
function start(server: ReferenceServer, args: string[], settings: Record<string, string> = SHORT) {
  const reports = tempDir('hostile-');
  const env = isolatedEnv({ REPORTS_DIR: reports, BASE_URL: server.url, API_KEY: SECRETS[0], FOREIGN_API_KEY: SECRETS[1], ...settings });
  const started = performance.now();
  // No Allure HTML report: these cases check the verdict, the output and the ledger.
  const child = spawn(process.execPath, [BIN, '--no-allure', ...args], { cwd: ROOT, env, detached: true });
  let log = '';
  child.stdout.on('data', (chunk) => (log += chunk));
  child.stderr.on('data', (chunk) => (log += chunk));
  // Once every process that shares its output has ended, Playwright's included.
  let closed = false;
  child.on('close', () => (closed = true));
  // The command's exit, once what it printed has been read too (its output closes then, or, where a
  // process it started outlives it, within 5 s): on a busy runner the exit can come first.
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => {
      const done = () => resolve({ code, signal });
      if (closed) return done();
      child.once('close', done);
      setTimeout(done, 5_000).unref();
    }),
  );
  return { child, env, reports, exited, closed: () => closed, log: () => log, seconds: () => (performance.now() - started) / 1000 };
}

type Started = ReturnType<typeof start>;

/** The ledger's lines on each job whose session the server still holds. */
function ledgerOf(run: Started, server: ReferenceServer): string {
  const file = path.join(run.reports, 'ledger.jsonl');
  const lines = existsSync(file) ? readFileSync(file, 'utf8').split('\n') : [];
  return server
    .activeSessions()
    .map(({ jobId }) => [jobId, ...lines.filter((line) => line.includes(jobId))].join('\n  '))
    .join('\n');
}

/** The processes under `root`, from `ps`, with their process groups. */
function descendants(root: number): { pid: number; ppid: number; pgid: number; args: string }[] {
  const table = execFileSync('ps', ['-e', '-o', 'pid=,ppid=,pgid=,args='], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((line) => {
      const [pid, ppid, pgid, ...args] = line.trim().split(/\s+/);
      return { pid: Number(pid), ppid: Number(ppid), pgid: Number(pgid), args: args.join(' ') };
    });
  const found = table.filter((row) => row.pid === root);
  for (let i = 0; i < found.length; i++) found.push(...table.filter((row) => row.ppid === found[i].pid));
  return found;
}

/** Those of `pids` still running: an ended process that no one reaps (an orphan, here) stays as a zombie. */
function running(pids: number[]): number[] {
  if (!pids.length) return [];
  const { stdout } = spawnSync('ps', ['-o', 'pid=,stat=', '-p', pids.join(',')], { encoding: 'utf8' });
  return stdout
    .trim()
    .split('\n')
    .filter((line) => line.trim() && !/^\s*\d+\s+Z/.test(line))
    .map((line) => Number(line.trim().split(/\s+/)[0]));
}

async function until(what: string, condition: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`gave up after ${timeoutMs} ms waiting for ${what}`);
    await sleep(10);
  }
}

/** The message that names what happened: `log` from the first match of `message` to the end of its line. */
function lineOf(log: string, message: RegExp): string {
  const match = new RegExp(message.source, 'm').exec(log);
  return match ? log.slice(match.index).split('\n')[0].trim() : '(no such line)';
}

/** The ledger names identities and job ids, never a key; nothing the run wrote or printed holds one. */
function assertNoKey(run: Started, ...outputs: string[]): void {
  const file = path.join(run.reports, 'ledger.jsonl');
  assert.ok(existsSync(file), 'the run wrote its ledger');
  const entries = readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
  assert.ok(entries.length > 0, 'the ledger holds the job');
  for (const entry of entries) {
    // The owner's, or the owner's key under another scheme word where such a stop settled a session.
    assert.match(entry.identity, /^(owner team|owner's key under [\w -]+)$/);
    assert.match(entry.jobId ?? entry.scrape, UUID);
  }
  assert.deepEqual(filesContaining(run.reports), [], 'keys in the reports or the ledger');
  // What a killed run left of its channels too.
  if (existsSync(runFolder(run.reports))) assert.deepEqual(filesContaining(runFolder(run.reports)), [], "keys in the run's working folder");
  for (const output of [run.log(), ...outputs]) assert.deepEqual(filesContaining(output), [], 'keys in the output');
}

/**
 * Ends whatever the case left of the command, whichever process group it is in, at one instant:
 * every group is frozen before any is killed. Killed one after the other, a busy runner can pause
 * this process between two groups long enough for Playwright to see the command gone and stop its
 * sessions itself (case 11's behaviour), which is not what case 10 sets out to leave.
 */
function killAll(groups: Set<number>): void {
  for (const signal of ['SIGSTOP', 'SIGKILL'] as const) {
    for (const group of groups) {
      try {
        process.kill(-group, signal);
      } catch {
        // already gone
      }
    }
  }
}

/** Seconds the command took against a correct target, the rule and settings of the cases alike: measured once, before the cases. */
let baseline = 0;

/**
 * How long a case may take: its budgets (the seconds of the waits that must end it, such as request
 * timeouts), and the command's own work: five baselines (a run, its teardown, cleanup, a killed worker's restart).
 */
const bound = (budgetSeconds: number) => budgetSeconds + 5 * baseline;

interface Misbehaviour {
  name: string;
  behaviour: Behaviour;
  /** The seconds of waits that bound it: REQUEST_TIMEOUT_MS (2 s) for each request that must time out. */
  budget: number;
  message: RegExp;
}

const misbehaviours: Misbehaviour[] = [
  {
    name: 'interact hangs 60 s (session created)',
    behaviour: answersLate(60_000),
    budget: 2,
    message: /POST \/v2\/scrape\/\S+\/interact as owner team failed: no complete answer within 2000 ms \(REQUEST_TIMEOUT_MS\)/,
  },
  {
    name: 'interact answers 502 (session created)',
    behaviour: (base) => ({ interact: (team, jobId, body) => (base.interact(team, jobId, body), base.error(502, 'Bad gateway.')) }),
    budget: 0,
    message: /provisioning: POST \/v2\/scrape\/\{jobId\}\/interact must answer 200 \(status 502\)/,
  },
  {
    name: 'interact answers 202 (session created)',
    behaviour: (base) => ({ interact: (team, jobId, body) => ({ ...base.interact(team, jobId, body), status: 202 }) }),
    budget: 0,
    message: /provisioning: POST \/v2\/scrape\/\{jobId\}\/interact must answer 200 \(status 202\)/,
  },
  {
    name: 'stop answer trickled, 1 byte / 100 ms',
    behaviour: stopAnswers(trickled),
    // The test's stop, its teardown, the global teardown and the command each wait out REQUEST_TIMEOUT_MS.
    budget: 4 * 2,
    message: /DELETE \/v2\/scrape\/\S+\/interact as owner team failed: no complete answer within 2000 ms \(REQUEST_TIMEOUT_MS\)/,
  },
  {
    name: 'stop answer an endless chunked body',
    behaviour: stopAnswers(endless),
    budget: 0,
    message: /DELETE \/v2\/scrape\/\S+\/interact as owner team failed: the answer's body exceeds MAX_BODY_BYTES \(65536 bytes\)/,
  },
  {
    name: 'stop answer a 50 MB body',
    behaviour: stopAnswers(fiftyMegabytes),
    budget: 0,
    message: /DELETE \/v2\/scrape\/\S+\/interact as owner team failed: the answer's body exceeds MAX_BODY_BYTES \(65536 bytes\)/,
  },
  {
    name: 'stop answer a gzip bomb (60 KB -> 60 MB)',
    behaviour: stopAnswers(gzipBomb),
    budget: 0,
    message: /DELETE \/v2\/scrape\/\S+\/interact as owner team failed: the answer's body exceeds MAX_BODY_BYTES \(65536 bytes\) once decompressed \(gzip\)/,
  },
];

/** A target that is slow but correct: each session exists for 3 s before its interact answers, time enough to kill something. */
const SLOW_INTERACT = answersLate(3_000);
const SLOW_SETTINGS = { ...SHORT, REQUEST_TIMEOUT_MS: '5000' };
/** What a case against it waits out: its interact, and a request's timeout. */
const SLOW_SECONDS = 3 + 5;

/**
 * Cases 8 to 11: a run against a target whose interact answers late, caught once its first session
 * exists; afterwards, every process group the run made is killed and the target closed.
 */
async function midRun(
  interrupt: (caught: { server: ReferenceServer; run: ReturnType<typeof start>; tree: ReturnType<typeof descendants>; groups: Set<number> }) => Promise<void>,
) {
  const server = await createReferenceServer({ behaviour: SLOW_INTERACT });
  const run = start(server, RULE, SLOW_SETTINGS);
  const groups = new Set([run.child.pid!]);
  try {
    await until('a session on the server', () => server.activeSessions().length > 0);
    const tree = descendants(run.child.pid!);
    for (const p of tree) groups.add(p.pgid);
    await interrupt({ server, run, tree, groups });
  } finally {
    killAll(groups);
    await server.close();
  }
}

describe('the command against hostile targets ends in bounded time, says what happened and leaves no session running', { concurrency: CONCURRENCY }, () => {
  after(() => {
    const header = ['case', 'exit', 'seconds', 'left', 'message'];
    const cells = rows
      .sort((a, b) => parseInt(a.name, 10) - parseInt(b.name, 10))
      .map((row) => [row.name, row.exit, row.seconds.toFixed(1), String(row.left), row.message.slice(0, 180)]);
    const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
    const line = (c: string[]) =>
      c
        .map((cell, i) => cell.padEnd(widths[i]))
        .join('  ')
        .trimEnd();
    console.log(['', line(header), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n'));
  });

  // Started with the cases, so that it runs under the same load; each case waits for it before judging its own time.
  const measured = (async () => {
    const server = await createReferenceServer();
    const run = start(server, RULE);
    try {
      const { code } = await run.exited;
      // One rule of ten: incomplete, every test of it passed.
      assert.equal(code, 3, run.log().slice(-3000));
      baseline = run.seconds();
      rows.push({
        name: '0. baseline: a correct target',
        exit: String(code),
        seconds: baseline,
        left: server.activeSessions().length,
        message: 'every bound below is its budgets plus 5 times this',
      });
    } finally {
      killAll(new Set([run.child.pid!]));
      await server.close();
    }
  })();
  for (const [index, { name, behaviour, budget, message }] of misbehaviours.entries()) {
    test(`${index + 1}. ${name}`, async () => {
      const server = await createReferenceServer({ behaviour });
      const run = start(server, RULE);
      try {
        const { code } = await run.exited;
        const seconds = run.seconds();
        const left = server.activeSessions().length;
        rows.push({ name: `${index + 1}. ${name}`, exit: String(code), seconds, left, message: lineOf(run.log(), message) });
        assert.equal(code, 2, run.log().slice(-3000));
        assert.match(run.log(), message);
        await measured;
        assert.ok(
          seconds < bound(budget),
          `verdict after ${seconds.toFixed(1)} s, more than ${bound(budget).toFixed(1)} s (budgets ${budget} s, baseline ${baseline.toFixed(1)} s):\n${run.log().slice(-4000)}`,
        );
        assert.equal(left, 0, 'sessions left running on the server');
        assert.ok(server.state.stopped.size > 0, 'the case created a session');
        assertNoKey(run);
      } finally {
        killAll(new Set([run.child.pid!]));
        await server.close();
      }
    });
  }

  // Faults that end the run as a failure or an error, fast: the back-off budget is the default five minutes here, and must not be what bounds them.
  const faulty: {
    name: string;
    behaviour: Behaviour;
    args: string[];
    settings?: Record<string, string>;
    exit: number;
    message: RegExp;
    left: number;
    budget?: number;
    absent?: RegExp;
    cleanupClean?: true;
  }[] = [
    {
      name: '12. stop of a stopped session answers 500',
      behaviour: (base, state) => ({
        stop: (team, jobId) => (state.stopped.has(jobId) && !state.sessions.has(jobId) ? base.error(500, 'session gone') : base.stop(team, jobId)),
      }),
      args: ['--rule', 'stop-is-final'],
      settings: { REQUEST_TIMEOUT_MS: '10000' },
      exit: 1,
      message: /second-stop/,
      left: 0,
    },
    {
      name: '20. a stop of a settled session answers 502, whoever settled it (lower-case bearer too)',
      behaviour: (base, state) => ({
        stop: (team, jobId) =>
          state.stopped.has(jobId) && !state.sessions.has(jobId) ? base.error(502, 'Browser session release was not confirmed.') : base.stop(team, jobId),
      }),
      args: ['--rule', 'authentication', '--rule', 'stop-is-final'],
      settings: { REQUEST_TIMEOUT_MS: '10000' },
      exit: 1,
      message: /FAIL\s+stop-is-final\/second-stop/,
      left: 0,
      // The tests that sent those stops fail; the run's own bookkeeping believes the settlement and stops nothing again.
      absent: /ERRORS OF THE RUN|Could not stop|ERROR\s+\S+\//,
      cleanupClean: true,
    },
    {
      name: '13. every stop answers 500',
      behaviour: (base) => ({ stop: () => base.error(500, 'Browser session release was not confirmed.') }),
      args: RULE,
      // Its answers are immediate: a loaded machine must not turn a 500 into a timeout.
      settings: { REQUEST_TIMEOUT_MS: '10000' },
      exit: 1,
      message: /Could not stop 1 session\(s\)[^\n]*the stop answered 500, 3 times/,
      left: 1,
    },
    {
      name: '14. the limiter never recovers (429 from the fourth request on, no Retry-After)',
      // One budget for the run: a test's wait, then the stops of its sessions in the teardown, the global teardown and the command, a few seconds each (four budgets before).
      budget: 20 + 3 * 5,
      behaviour: (base) => {
        let allowed = 3;
        return {
          limit: (key) => (key.endsWith(':interact') && allowed-- <= 0 ? { allowed: false, retryAfterSeconds: 1 } : base.limit(key)),
          error: (status, message, headers) => base.error(status, message, status === 429 ? {} : headers),
        };
      },
      args: ['--rule', 'owner-stop', '--rule', 'unknown-job', '--rule', 'foreign-team'],
      // A test lasts longer than the budget, as by default: the request that waits it through says the limiter never recovered.
      settings: { BACKOFF_BUDGET_MS: '20000', TEST_TIMEOUT_MS: '60000' },
      exit: 2,
      message: /the back-off budget \(BACKOFF_BUDGET_MS=20000\) is used up/,
      left: -1,
    },
    {
      name: '19. the limiter never recovers, and its words teach the rate (429 from the fourth request on)',
      behaviour: (base) => {
        let consumed = 0;
        return {
          limit: (key) => (key.endsWith(':interact') && ++consumed > 3 ? { allowed: false, retryAfterSeconds: 30 } : base.limit(key)),
          error: (status, message, headers) =>
            status === 429
              ? base.error(429, `Rate limit exceeded. Consumed (req/min): ${consumed}, Remaining (req/min): 0. Upgrade your plan or please retry after 30s`, {})
              : base.error(status, message, headers),
        };
      },
      args: ['--rule', 'owner-stop', '--rule', 'unknown-job', '--rule', 'foreign-team'],
      settings: { BACKOFF_BUDGET_MS: '4000', TEST_TIMEOUT_MS: '10000' },
      exit: 2,
      message: /the back-off budget \(BACKOFF_BUDGET_MS=4000\) is used up/,
      left: -1,
      // A test's wait of a budget, and stops after it; where a team's own requests filled the minute its words name, a place in it is waited for,
      // in the test, in its teardown and in the command's last stops, each at most a test's length.
      budget: 4 * 4 + 3 * 10,
    },
    {
      name: '15. every interact hangs (the session is created), five rules',
      behaviour: answersLate(600_000),
      args: ['--rule', 'owner-stop', '--rule', 'foreign-team', '--rule', 'billing', '--rule', 'stop-is-final', '--rule', 'authentication'],
      settings: { REQUEST_TIMEOUT_MS: '4000' },
      exit: 2,
      message:
        /The target stopped answering: POST \/v2\/scrape\/\S+\/interact as owner team failed: no complete answer within 4000 ms \(REQUEST_TIMEOUT_MS\)\nEnding the run, an error of the run \(exit 2/,
      left: 0,
      // The first interacts time out together; the run ends then, its teardown's stops answered at once.
      budget: 4,
    },
    {
      name: '16. the first stop of each session goes unanswered (a second stop gets through)',
      behaviour: (base, state) => {
        const dropped = new Set<string>();
        return {
          send(res, reply) {
            const jobId = /^\/v2\/scrape\/([^/]+)\/interact$/.exec(res.req.url ?? '')?.[1];
            if (res.req.method !== 'DELETE' || !jobId || dropped.has(jobId) || !state.stopped.has(jobId)) return base.send(res, reply);
            // The session is stopped, as the backend would; the answer never comes.
            dropped.add(jobId);
            const session = state.stopped.get(jobId)!;
            state.stopped.delete(jobId);
            state.sessions.set(jobId, session);
          },
        };
      },
      args: ['--rule', 'owner-stop', '--rule', 'foreign-team', '--rule', 'billing', '--rule', 'stop-is-final'],
      settings: { REQUEST_TIMEOUT_MS: '4000' },
      exit: 2,
      message:
        /The target stopped answering: DELETE \/v2\/scrape\/\S+\/interact as owner team failed: no complete answer within 4000 ms \(REQUEST_TIMEOUT_MS\)\nEnding the run, an error of the run \(exit 2/,
      left: 0,
      // The test's stop, then the teardowns' first stops of the other sessions, all at once; their second stops get through.
      budget: 2 * 4,
    },
  ];
  for (const { name, behaviour, args, settings, exit, message, left, budget: stated, absent, cleanupClean } of faulty) {
    test(name, async () => {
      const server = await createReferenceServer({ behaviour });
      const run = start(server, args, { ...SHORT, BACKOFF_BUDGET_MS: '300000', ...settings });
      try {
        const { code } = await run.exited;
        const seconds = run.seconds();
        const running = server.activeSessions().length;
        rows.push({ name, exit: String(code), seconds, left: running, message: lineOf(run.log(), message) });
        assert.equal(code, exit, run.log().slice(-3000));
        assert.match(run.log(), message);
        // A fault found in seconds ends the run in seconds: one back-off budget at most, never one per waiting request.
        const budget = stated ?? Number(settings?.BACKOFF_BUDGET_MS ?? 0) / 1000 + Number(settings?.REQUEST_TIMEOUT_MS ?? 0) / 1000;
        await measured;
        assert.ok(
          seconds < bound(budget),
          `the command ended after ${seconds.toFixed(1)} s, more than ${bound(budget).toFixed(1)} s (budgets ${budget} s, baseline ${baseline.toFixed(1)} s):\n${run.log().slice(-4000)}`,
        );
        if (left >= 0)
          assert.equal(running, left, `sessions left running on the server, as the ledger saw them:\n${ledgerOf(run, server)}\n${run.log().slice(-3000)}`);
        if (running) assert.match(run.log(), /Could not stop \d+ session\(s\)/, 'a session left running is reported');
        if (absent) assert.doesNotMatch(run.log(), absent);
        if (cleanupClean) {
          const cleanup = await runCommand(process.execPath, [BIN, 'cleanup'], run.env);
          assert.equal(cleanup.code, 0, cleanup.log);
        }
        assertNoKey(run);
      } finally {
        killAll(new Set([run.child.pid!]));
        await server.close();
      }
    });
  }

  // Targets with plans: they must pass, plan to their limits (few refusals), end near their floor and leave nothing running.
  const plans: { name: string; plan: Plan; args: string[]; binding: 'interact' | 'scrape' }[] = [
    {
      name: '17. the free plan, its window scaled to 5 s: rate limit, job cap shared with scrapes, provisioning race',
      plan: { ...FREE_PLAN, windowMs: 5_000 },
      args: ['--rule', 'owner-stop', '--rule', 'foreign-team', '--rule', 'stop-is-final', '--rule', 'rate-limit'],
      binding: 'interact',
    },
    {
      name: '18. scrapes limited apart, tighter than stops and interacts (3 and 20 per 5 s), a cap of 3 jobs',
      plan: { limit: 20, scrapeLimit: 3, windowMs: 5_000, jobCap: 3, provisioningRaceMs: 300 },
      args: ['--rule', 'owner-stop', '--rule', 'billing', '--rule', 'stop-is-final'],
      binding: 'scrape',
    },
  ];
  for (const { name, plan, args, binding } of plans) {
    test(name, async () => {
      const lines: { at: number; line: string }[] = [];
      const server = await createReferenceServer({ ...onPlan(plan), log: (line) => lines.push({ at: Date.now(), line }) });
      // The production file: these targets are the hosted service, on a plan. The account check waits for the service's late charges.
      // The default request timeout: a plan is no hang, and on a busy runner one answer slower than 2 s would end the run as one.
      const run = start(server, args, {
        ...SHORT,
        REQUEST_TIMEOUT_MS: '30000',
        KNOWN_DEVIATIONS: path.join(ROOT, PRODUCTION_FILE),
        ACCOUNT_CHECK: '1',
        ACCOUNT_SETTLE_MS: '20000',
        TEST_TIMEOUT_MS: '120000',
      });
      try {
        const { code } = await run.exited;
        const seconds = run.seconds();
        const limited = lines.filter(({ line }) =>
          (binding === 'scrape' ? /^POST \/v2\/scrape / : /^(POST|DELETE) \/v2\/scrape\/[^/ ]*\/interact /).test(line),
        );
        const isRefused = ({ line }: { line: string }) => / 429 /.test(line);
        const refused = limited.filter(isRefused).length;
        // Before its first refusal the run knows no rate: the requests then in flight may all be refused. From the next window on, it plans.
        const firstRefusal = limited.find(isRefused)?.at ?? Infinity;
        // The run's own work: stops and interacts of jobs the target created. Stops of jobs nobody has (the burst, probes of the limit's room or recovery) are sent into the limit on purpose.
        const work = (line: string) => binding === 'scrape' || server.state.jobs.has(/\/v2\/scrape\/([^/ ]*)\/interact/.exec(line)?.[1] ?? '');
        const planned = limited.filter(({ at, line }) => at > firstRefusal + plan.windowMs && work(line));
        const early = limited.filter(({ at }) => at <= firstRefusal + plan.windowMs);
        const summary = JSON.parse(readFileSync(path.join(run.reports, 'conformance-summary.json'), 'utf8')) as Summary;
        const learnt = summary.rateLimits?.find((rate) => rate.team === 'owner' && rate.limiter === binding);
        const limit = binding === 'scrape' ? plan.scrapeLimit : plan.limit;
        // The floor: the requests that got through, at the plan's rate.
        const floorSeconds = ((limited.length - refused) / limit) * (plan.windowMs / 1000);
        rows.push({
          name,
          exit: String(code),
          seconds,
          left: server.activeSessions().length,
          message: `${refused} of ${limited.length} ${binding === 'scrape' ? 'scrapes' : 'stops and interacts'} refused (${planned.filter(isRefused).length} of the ${planned.length} of its own work once planned); learnt ${learnt ? `${learnt.limit} per ${learnt.windowMs / 1000} s` : 'nothing'}; floor ${floorSeconds.toFixed(1)} s`,
        });
        // Every rule chosen passes (with the production file's declarations): the others are not run.
        assert.equal(code, 3, run.log().slice(-3000));
        assert.equal(server.activeSessions().length, 0, 'sessions left running on the server');
        // Before it plans, at most the requests its workers had in flight (eight against a remote target), and a couple learning the cap.
        assert.ok(early.filter(isRefused).length <= 10, `${early.filter(isRefused).length} limited requests refused before the run could plan`);
        assert.ok(
          planned.filter(isRefused).length <= 0.25 * planned.length,
          `${planned.filter(isRefused).length} of the ${planned.length} requests of the run's own work after the first refusal's window were refused: more than a quarter`,
        );
        assert.deepEqual(learnt && { limit: learnt.limit, windowMs: learnt.windowMs }, { limit, windowMs: plan.windowMs }, "the run learnt the plan's rate");
        await measured;
        assert.ok(
          seconds < 1.1 * floorSeconds + bound(0),
          `the run took ${seconds.toFixed(1)} s: more than 1.1 times its floor (${floorSeconds.toFixed(1)} s) and ${bound(0).toFixed(1)} s`,
        );
        assertNoKey(run);
      } finally {
        killAll(new Set([run.child.pid!]));
        await server.close();
      }
    });
  }

  test('8. a Playwright worker killed with SIGKILL mid-test', () =>
    midRun(async ({ server, run, tree }) => {
      const runner = tree.find((p) => p.ppid === run.child.pid)!;
      const workers = tree.filter((p) => p.ppid === runner.pid);
      assert.equal(workers.length, 1, `one worker under Playwright's runner:\n${tree.map((p) => `${p.pid} ${p.ppid} ${p.args}`).join('\n')}`);
      process.kill(workers[0].pid, 'SIGKILL');
      const { code } = await run.exited;
      const seconds = run.seconds();
      const left = server.activeSessions().length;
      const message = /worker process exited unexpectedly \(code=null, signal=SIGKILL\)/;
      rows.push({ name: '8. worker SIGKILLed mid-test', exit: String(code), seconds, left, message: lineOf(run.log(), message) });
      assert.equal(code, 2, `a crashed worker is an error of the run, not a failure of the target:\n${run.log().slice(-3000)}`);
      assert.match(run.log(), message);
      assert.match(run.log(), /The global teardown stopped 1 session\(s\) their tests left/);
      await measured;
      assert.ok(seconds < bound(SLOW_SECONDS), `verdict after ${seconds.toFixed(1)} s, more than ${bound(SLOW_SECONDS).toFixed(1)} s`);
      assert.equal(left, 0, 'sessions left running on the server');
      assertNoKey(run);
    }));

  test('9. SIGTERM to the command mid-run', () =>
    midRun(async ({ server, run, tree }) => {
      run.child.kill('SIGTERM');
      const { code } = await run.exited;
      const seconds = run.seconds();
      const left = server.activeSessions().length;
      const message = /SIGTERM: stopping the run; waiting for its teardown/;
      rows.push({ name: '9. SIGTERM to the command mid-run', exit: String(code), seconds, left, message: lineOf(run.log(), message) });
      assert.equal(code, 2, run.log().slice(-3000));
      assert.match(run.log(), message);
      // Playwright's teardown ran: its reporters wrote the verdict, and no process of the run is left.
      assert.match(run.log(), /the run was interrupted before this test finished/);
      assert.match(run.log(), /Verdict: ERROR \(exit 2/);
      assert.deepEqual(running(tree.map((p) => p.pid)), [], 'processes of the run still running after the command exited');
      await measured;
      assert.ok(seconds < bound(SLOW_SECONDS), `verdict after ${seconds.toFixed(1)} s, more than ${bound(SLOW_SECONDS).toFixed(1)} s`);
      assert.equal(left, 0, 'sessions left running on the server');
      assertNoKey(run);
    }));

  test('10. SIGKILL to the whole command mid-run, then cleanup', () =>
    midRun(async ({ server, run, tree, groups }) => {
      // The command keeps Playwright in a process group of its own: the whole command is both groups.
      killAll(groups);
      const { signal } = await run.exited;
      await until('every process of the run to end', () => running(tree.map((p) => p.pid)).length === 0, 5_000);
      assert.equal(signal, 'SIGKILL');
      const [jobId] = server.activeSessions().map((s) => s.jobId);
      assert.ok(
        jobId,
        `a killed run leaves its session running; stopped on the server: ${JSON.stringify([...server.state.stopped.keys()])}; the run's output:\n${run.log().slice(-2000)}`,
      );

      const cleanupStarted = performance.now();
      const first = await runCommand(process.execPath, [BIN, 'cleanup'], run.env);
      const cleanupSeconds = (performance.now() - cleanupStarted) / 1000;
      const seconds = run.seconds();
      const left = server.activeSessions().length;
      rows.push({
        name: '10. SIGKILL to the whole command, cleanup',
        exit: `killed; cleanup ${first.code}`,
        seconds,
        left,
        message: lineOf(first.log, /^stopped/),
      });
      assert.equal(first.code, 0, first.log);
      assert.match(first.log, new RegExp(`^stopped\\s+${jobId} at ${server.url.replace(/\./g, '\\.')} \\(test owner-stop/answers-200\\)$`, 'm'));
      assert.equal(left, 0, 'sessions left running on the server after cleanup');

      const second = await runCommand(process.execPath, [BIN, 'cleanup'], run.env);
      assert.equal(second.code, 0, second.log);
      assert.match(second.log, /\/ledger\.jsonl: no session left open/);
      assert.match(second.log, /\/ledger\.previous\.jsonl: no session left open/);
      assert.doesNotMatch(second.log, /stopped|FAILED/);
      // The cleanup alone: a process start and one stop, less than a run.
      await measured;
      assert.ok(cleanupSeconds < bound(0), `the cleanup took ${cleanupSeconds.toFixed(1)} s, more than ${bound(0).toFixed(1)} s`);
      assertNoKey(run, first.log, second.log);
    }));

  test("11. SIGKILL to the command's own process group: Playwright winds down by itself", () =>
    midRun(async ({ server, run, tree }) => {
      process.kill(-run.child.pid!, 'SIGKILL');
      await run.exited;
      await until('the end of every process of the run', run.closed);
      const seconds = run.seconds();
      const left = server.activeSessions().length;
      const message = /The command that started this run is gone: stopping the run/;
      rows.push({ name: "11. SIGKILL to the command's group only", exit: 'killed', seconds, left, message: lineOf(run.log(), message) });
      assert.match(run.log(), message);
      await until('every process of the run to end', () => running(tree.map((p) => p.pid)).length === 0, 5_000);
      await measured;
      assert.ok(seconds < bound(SLOW_SECONDS), `the run ended after ${seconds.toFixed(1)} s, more than ${bound(SLOW_SECONDS).toFixed(1)} s`);
      assert.equal(left, 0, 'sessions left running on the server');
      const cleanup = await runCommand(process.execPath, [BIN, 'cleanup'], run.env);
      assert.equal(cleanup.code, 0, cleanup.log);
      assert.match(cleanup.log, /\/ledger\.jsonl: no session left open/);
      assertNoKey(run, cleanup.log);
    }));
});
