/**
 * The suite's HTTP client on its own: its timing brackets the server's handling, every request
 * ends in bounded time whatever the server does, bodies are capped after decompression too, the
 * 429 back-off never spins, and nothing it hands to a test carries a key.
 */

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import zlib from 'node:zlib';
import type { Rate } from '../src/config/rates';
import { Coordination } from '../src/coordination/coordination';
import { readSpend, writeSpend } from '../src/coordination/cost';
import { type Client, createClient } from '../src/domain/client';
import { Ledger } from '../src/domain/ledger';
import { exchange } from '../src/http/exchange';
import { retryDelayMs } from '../src/http/limits';
import { registerSecret } from '../src/http/redact';
import { tempDir } from './temp';

async function serve(handler: http.RequestListener): Promise<{ url: string; close: () => void }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

const bounds = { timeoutMs: 1_000, maxBodyBytes: 64 * 1024 };
// Made once, before any clock starts: compressing 60 MB takes a busy runner longer than the bound under test.
const FIFTY_MB = Buffer.alloc(50 * 1024 * 1024, 32);
const BOMB = zlib.gzipSync(Buffer.alloc(60 * 1024 * 1024, 32), { level: 9 });

test("an exchange starts after its connection is open and brackets the server's whole handling of the request", async () => {
  const seen: { arrivedAt?: number; answeredAt?: number; body?: string; host?: string } = {};
  const server = await serve((request, response) => {
    seen.arrivedAt = performance.now();
    seen.host = request.headers.host;
    const chunks: Buffer[] = [];
    request
      .on('data', (chunk) => chunks.push(chunk))
      .on('end', () => {
        seen.body = Buffer.concat(chunks).toString();
        setTimeout(() => {
          response.setHeader('content-type', 'application/json');
          response.end('{"success":true}', () => (seen.answeredAt = performance.now()));
        }, 30);
      });
  });
  try {
    const answer = await exchange(`${server.url}/v2/x?y=1`, { method: 'POST', headers: { authorization: 'Bearer k' }, data: { code: 'x' }, ...bounds });
    assert.equal(answer.status, 200);
    assert.equal(answer.body.toString(), '{"success":true}');
    assert.equal(seen.body, '{"code":"x"}');
    assert.equal(seen.host, new URL(server.url).host);
    assert.ok(answer.sentAt <= seen.arrivedAt!, 'sentAt is before the server saw the request');
    assert.ok(seen.answeredAt! <= answer.receivedAt, 'receivedAt is after the server finished its answer');
    assert.ok(answer.receivedAt - answer.sentAt >= 30, "the window holds the server's 30 ms");
  } finally {
    server.close();
  }
});

const hostile: [string, http.RequestListener, RegExp][] = [
  ['never answers', () => {}, /no complete answer within 1000 ms/],
  [
    'trickles its body a byte every 100 ms',
    (_, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const timer = setInterval(() => res.write(' '), 100);
      res.on('close', () => clearInterval(timer));
    },
    /no complete answer within 1000 ms/,
  ],
  [
    'sends an endless chunked body',
    (_, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(16 * 1024, 32);
      const pump = () => {
        while (res.write(chunk));
      };
      res.on('drain', pump);
      pump();
    },
    /exceeds MAX_BODY_BYTES \(65536 bytes\)/,
  ],
  [
    'sends a 50 MB body',
    (_, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(FIFTY_MB.length) });
      res.end(FIFTY_MB);
    },
    /exceeds MAX_BODY_BYTES \(65536 bytes\)/,
  ],
  [
    'sends a gzip bomb (60 KB that expands to 60 MB)',
    (_, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end(BOMB);
    },
    /exceeds MAX_BODY_BYTES \(65536 bytes\) once decompressed \(gzip\)/,
  ],
  [
    'closes the connection mid-answer',
    (_, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('{"par');
      setTimeout(() => res.destroy(), 20);
    },
    /closed before the answer was complete|aborted|ECONNRESET/,
  ],
];

for (const [what, handler, message] of hostile) {
  test(`an exchange with a server that ${what} fails in bounded time and says why`, async () => {
    const server = await serve(handler);
    const started = performance.now();
    try {
      await assert.rejects(exchange(`${server.url}/`, { method: 'DELETE', headers: {}, ...bounds }), message);
      assert.ok(performance.now() - started < 2_500, `ended after ${Math.round(performance.now() - started)} ms`);
    } finally {
      server.close();
    }
  });
}

test('a cancelled client ends its request and its back-off wait at once', async () => {
  const server = await serve((_, res) => setTimeout(() => res.writeHead(429, { 'retry-after': '30' }).end('{}'), 10));
  const client = createClient({
    target: { baseURL: server.url, embedded: true },
    settings: { requestTimeoutMs: 10_000, maxBodyBytes: 1024, backoffBudgetMs: 60_000 },
  });
  const started = performance.now();
  try {
    const pending = client.send({ method: 'DELETE', path: '/x', as: { name: 'tester' } });
    setTimeout(() => client.cancel(), 200);
    await assert.rejects(pending, /cancelled/);
    assert.ok(performance.now() - started < 1_000);
  } finally {
    server.close();
  }
});

test('a pooled request whose kept-alive connection is reset before any answer is sent once more on a connection of its own, and only then', async () => {
  // The second request on each connection is dropped unanswered, as a server closing an idle kept-alive socket does.
  const served = new WeakMap<object, number>();
  let received = 0;
  const server = await serve((req, res) => {
    received += 1;
    const count = (served.get(req.socket) ?? 0) + 1;
    served.set(req.socket, count);
    if (count === 2) req.socket.destroy();
    else res.writeHead(404, { 'content-type': 'application/json' }).end('{}');
  });
  const client = createClient({
    target: { baseURL: server.url, embedded: true },
    settings: { requestTimeoutMs: 5_000, maxBodyBytes: 1024, backoffBudgetMs: 0 },
  });
  try {
    const send = (pooled: boolean) => client.send({ method: 'DELETE', path: '/x', as: { name: 'tester' }, pooled, attach: false });
    assert.equal((await send(true)).status, 404);
    assert.equal((await send(true)).status, 404, 'the reset reused connection is retried on a new one');
    assert.equal(received, 3);
    // Two idle connections in the pool, both closed by the server: the one retry must not take the other.
    await Promise.all([send(true), send(true)]);
    assert.equal((await send(true)).status, 404, 'retried on a connection of its own, not on another idle one of the pool');
    assert.equal(received, 7);
    // Each unpooled request has a connection of its own: a reset there is not the keep-alive race, and fails.
    const fresh = await serve((req) => req.socket.destroy());
    const unpooled = createClient({
      target: { baseURL: fresh.url, embedded: true },
      settings: { requestTimeoutMs: 5_000, maxBodyBytes: 1024, backoffBudgetMs: 0 },
    });
    try {
      await assert.rejects(unpooled.send({ method: 'DELETE', path: '/x', as: { name: 'tester' }, attach: false }), /failed/);
    } finally {
      unpooled.cancel();
      fresh.close();
    }
  } finally {
    client.cancel();
    server.close();
  }
});

test('Retry-After: honoured when it means a wait, never below a growing floor, and no tight loop on zero, negative, garbage or past values', () => {
  assert.equal(retryDelayMs(1, '3'), 3000);
  assert.equal(retryDelayMs(1, new Date(Date.now() + 5_000).toUTCString()) > 3_000, true);
  for (const value of ['0', '-5', new Date(Date.now() - 60_000).toUTCString()]) {
    assert.deepEqual(
      [1, 2, 3, 4].map((attempt) => retryDelayMs(attempt, value)),
      [100, 200, 400, 800],
      value,
    );
  }
  for (const value of [undefined, '', 'soon', 'NaN']) {
    const waits = [1, 2, 3, 4, 5].map((attempt) => retryDelayMs(attempt, value, () => 0.5));
    assert.deepEqual(waits, [1000, 2000, 4000, 8000, 8000], String(value));
  }
  assert.equal(retryDelayMs(1, '99999999'), 3_600_000, 'an absurd Retry-After is capped at an hour');
  const afterWaiting = (waitedMs: number) => retryDelayMs(9, undefined, () => 0.5, waitedMs);
  assert.deepEqual([0, 32_000, 56_000, 300_000].map(afterWaiting), [8000, 4000, 1000, 1000], 'the longer a request has waited, the more often it asks');
});

test('a 429 loop against a server that always answers "Retry-After: 0" backs off instead of spinning', async () => {
  let requests = 0;
  const server = await serve((_, res) => (requests++, res.writeHead(429, { 'retry-after': '0' }).end('{}')));
  const client = createClient({
    target: { baseURL: server.url, embedded: true },
    settings: { requestTimeoutMs: 1_000, maxBodyBytes: 1024, backoffBudgetMs: 1_500 },
  });
  try {
    const last = await client.send({ method: 'DELETE', path: '/x', as: { name: 'tester' }, on429: 'return-last' });
    assert.equal(last.status, 429);
    assert.ok(requests <= 5, `${requests} requests in 1.5 s`);
    await assert.rejects(client.send({ method: 'DELETE', path: '/x', as: { name: 'tester' } }), /RunError|back-off budget/);
  } finally {
    server.close();
  }
});

test('a request waiting after 429 goes before fresh ones from other clients of the run (no starvation)', async () => {
  // One request per 300 ms window, no Retry-After: a fresh request would win every window over one polling every second.
  let windowStart = 0;
  let used = 0;
  const served: string[] = [];
  const arrived: string[] = [];
  const server = await serve((req, res) => {
    const now = performance.now();
    arrived.push(String(req.headers.authorization).replace('Bearer ', ''));
    if (now - windowStart >= 300) [windowStart, used] = [now, 0];
    if (++used > 1) return void res.writeHead(429).end('{}');
    served.push(String(req.headers.authorization).replace('Bearer ', ''));
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"success":false,"error":"x"}');
  });
  const reportsDir = tempDir('queue-');
  const client = () =>
    createClient({
      target: { baseURL: server.url, embedded: true },
      settings: { requestTimeoutMs: 2_000, maxBodyBytes: 1024, backoffBudgetMs: 10_000 },
      coordination: new Coordination(reportsDir, server.url),
    });
  const [a, b] = [client(), client()];
  // One team (the queue is per identity); the server tells the requests apart by their tokens.
  const send = (who: Client, name: string, team = 'owner team') =>
    who.send({ method: 'DELETE', path: '/x', as: { name: team, authorization: `Bearer ${name}` } });
  try {
    await send(b, 'b1');
    const waiting = send(a, 'a');
    await new Promise((resolve) => setTimeout(resolve, 50));
    for (const name of ['b2', 'b3']) await send(b, name);
    await waiting;
    assert.deepEqual(served, ['b1', 'a', 'b2', 'b3'], 'the waiting request is served before the fresh ones that came after it');

    // Another team's request is sent at once, not behind this team's waiting one (here the server's limit is shared, so it gets 429 and waits its own turn).
    arrived.length = 0;
    await new Promise((resolve) => setTimeout(resolve, 300));
    await send(b, 'b4');
    const waitingAgain = send(a, 'a2');
    await new Promise((resolve) => setTimeout(resolve, 50));
    const other = send(b, 'c1', 'burst team');
    await Promise.all([waitingAgain, other]);
    assert.ok(
      arrived.indexOf('c1') < arrived.lastIndexOf('a2'),
      `the other team's first attempt comes before the waiting request is served: ${arrived.join(' ')}`,
    );
  } finally {
    server.close();
  }
});

test("a 429 met while the team's own schedule had room is waited out and counted as not earned; without a known rate, none is", async () => {
  // The first stop of each server is refused: under 2 a second stated, its window had room (another's use of a shared limit).
  const refusingFirst = () => {
    let answered = 0;
    return serve((_req, res) => {
      if (++answered === 1) return void res.writeHead(429, { 'content-type': 'application/json' }).end('{"success":false,"error":"Too many requests"}');
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"success":false,"error":"x"}');
    });
  };
  const reportsDir = tempDir('unearned-');
  const unearned = () => (writeSpend(reportsDir), readSpend(reportsDir).teams.owner?.unearned ?? 0);
  const stop = async (rate?: Rate) => {
    const server = await refusingFirst();
    const client = createClient({
      target: { baseURL: server.url, embedded: true },
      settings: { requestTimeoutMs: 2_000, maxBodyBytes: 1024, backoffBudgetMs: 10_000 },
      coordination: new Coordination(tempDir('unearned-run-'), server.url, rate),
    });
    try {
      return await client.send({
        method: 'DELETE',
        path: '/v2/scrape/3f2a1c4e-8b7d-4e6f-9a0b-1c2d3e4f5a6b/interact',
        as: { name: 'owner team', team: 'owner', authorization: 'Bearer x' },
      });
    } finally {
      server.close();
    }
  };
  const before = unearned();
  assert.equal((await stop({ limit: 2, windowMs: 1_000, from: 'stated' })).status, 404);
  assert.equal(unearned() - before, 1, 'refused with room in the window');
  assert.equal((await stop()).status, 404);
  assert.equal(unearned() - before, 1, 'no rate known: the run cannot tell whose the refusal was');
});

/** A process that holds the quiet spell of `url` in `reportsDir`: it prints "ready"; on a line in, it prints "asking", takes the spell, prints "holding", holds it for `holdMs`, then prints how long it waited for others' requests to drain. */
function spellHolder(reportsDir: string, url: string, holdMs: number) {
  const script = `
    const { QuietSpell } = require(${JSON.stringify(path.join(__dirname, '..', 'src', 'coordination', 'quiet-spell.ts'))});
    const spell = new QuietSpell(${JSON.stringify(reportsDir)}, ${JSON.stringify(url)});
    process.stdout.write('ready\\n');
    process.stdin.once('data', async () => {
      process.stdout.write('asking\\n');
      const asked = performance.now();
      let drainedMs;
      await spell.hold(5000, 5000, new AbortController().signal, () => { drainedMs = performance.now() - asked; process.stdout.write('holding\\n'); return new Promise((resolve) => setTimeout(resolve, ${holdMs})); });
      process.stdout.write('drained ' + Math.round(drainedMs) + '\\n');
      process.exit(0);
    });`;
  const child = spawn(process.execPath, ['--require', require.resolve('tsx/cjs'), '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk) => (out += chunk));
  const seen = async (line: string) => {
    while (!out.includes(line)) await new Promise((resolve) => setTimeout(resolve, 5));
  };
  return { child, seen, output: () => out };
}

test("while another process's burst sends, a request waits for it; the burst waits for requests already in flight", async () => {
  let release: (() => void) | undefined;
  const server = await serve((req, res) => {
    const answer = () => res.writeHead(404, { 'content-type': 'application/json' }).end('{"success":false,"error":"x"}');
    if (req.url === '/slow') release = answer;
    else answer();
  });
  const reportsDir = tempDir('quiet-');
  const client = createClient({
    target: { baseURL: server.url, embedded: true },
    settings: { requestTimeoutMs: 5_000, maxBodyBytes: 1024, backoffBudgetMs: 10_000 },
    coordination: new Coordination(reportsDir, server.url),
  });
  const send = (to: string) => client.send({ method: 'DELETE', path: to, as: { name: 'owner team', authorization: 'Bearer x' } });
  try {
    await send('/x'); // the client's first request: loading and first calls are not what is measured
    const control = performance.now();
    await send('/x');
    // Well below the 400 ms a request waiting for the 600 ms spell below takes, even on a busy runner.
    assert.ok(performance.now() - control < 300, `no spell, no wait (${Math.round(performance.now() - control)} ms)`);

    const holder = spellHolder(reportsDir, server.url, 600);
    await holder.seen('ready');
    holder.child.stdin.write('go\n');
    await holder.seen('holding');
    const started = performance.now();
    await send('/x');
    assert.ok(performance.now() - started >= 400, `the request waited for the burst (${Math.round(performance.now() - started)} ms)`);
    await holder.seen('drained');

    const second = spellHolder(reportsDir, server.url, 10);
    await second.seen('ready');
    const inFlight = send('/slow');
    while (!release) await new Promise((resolve) => setTimeout(resolve, 5));
    second.child.stdin.write('go\n');
    // From when it asks: a busy runner may leave the line unread for a while, and a spell not yet asked for proves nothing.
    await second.seen('asking');
    await new Promise((resolve) => setTimeout(resolve, 400));
    assert.doesNotMatch(second.output(), /holding/, 'the burst has not begun while a request is in flight');
    release();
    await inFlight;
    await second.seen('drained');
    assert.ok(Number(/drained (\d+)/.exec(second.output())![1]) >= 350, second.output());
  } finally {
    server.close();
  }
});

test('one spell at a time: a second waits until the first is lowered', async () => {
  const reportsDir = tempDir('spells-');
  const url = 'http://127.0.0.1:9';
  const first = spellHolder(reportsDir, url, 800);
  const second = spellHolder(reportsDir, url, 10);
  await Promise.all([first.seen('ready'), second.seen('ready')]);
  first.child.stdin.write('go\n');
  await first.seen('holding');
  second.child.stdin.write('go\n');
  await second.seen('asking');
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.doesNotMatch(second.output(), /holding/, 'the second spell has not begun while the first is up');
  await first.seen('drained');
  await second.seen('drained');
});

test('answers reach a test redacted: a key the server echoes in its body or headers never does', async () => {
  const key = 'fc-client-test-key-0123456789';
  registerSecret(key, 'API_KEY');
  const server = await serve((req, res) => {
    res.writeHead(401, {
      'content-type': 'application/json',
      'www-authenticate': `Bearer realm="x", key="${key}"`,
      'set-cookie': `session=${key}`,
      'x-echo': encodeURIComponent(key),
    });
    res.end(JSON.stringify({ success: false, error: `bad key ${req.headers.authorization}`, b64: Buffer.from(key).toString('base64') }));
  });
  const attached: string[] = [];
  const client = createClient({
    target: { baseURL: server.url, embedded: true },
    settings: { requestTimeoutMs: 1_000, maxBodyBytes: 4096, backoffBudgetMs: 0 },
    attach: async (_name, body) => void attached.push(body),
  });
  try {
    const answer = await client.send({ method: 'DELETE', path: '/x', as: { name: 'tester', authorization: `Bearer ${key}` } });
    const everything = JSON.stringify(answer) + attached.join('');
    for (const form of [key, encodeURIComponent(key), Buffer.from(key).toString('base64').slice(0, 20)]) assert.ok(!everything.includes(form), `found ${form}`);
    assert.match(answer.text, /\[API_KEY\]/);
    assert.equal(answer.headers['set-cookie'], '[redacted]');
    assert.equal(answer.headers['www-authenticate'], 'Bearer [parameters redacted]');
  } finally {
    server.close();
  }
});

test('in the ledger, only a stop by the team that created a job ends it', () => {
  const ledger = new Ledger(path.join(tempDir('ledger-'), 'ledger.jsonl'));
  const target = 'http://127.0.0.1:1';
  ledger.created({ target, embedded: false, jobId: 'job-a', identity: 'burst team' });
  ledger.ended({ target, jobId: 'job-a', identity: 'owner team', status: 404 });
  assert.deepEqual(
    ledger.open().map((entry) => entry.jobId),
    ['job-a'],
    "another owner identity's 404 leaves it open",
  );
  assert.equal(ledger.endedHere(target, 'job-a', 'burst team'), false);
  ledger.ended({ target, jobId: 'job-a', identity: 'burst team', status: 200 });
  assert.deepEqual(ledger.open(), []);
  assert.equal(ledger.endedHere(target, 'job-a', 'burst team'), true);
});

test('in the ledger, the sessions that may have been live while an interact was refused: what the target held then at most, and no more', async () => {
  const ledger = new Ledger(path.join(tempDir('ledger-'), 'ledger.jsonl'));
  const target = 'http://127.0.0.1:1';
  const event = (jobId: string, what: 'opening' | 'live' | 'not-opened' | 'maybe-open' | 'ended', identity = 'owner team') =>
    what === 'ended' ? ledger.ended({ target, jobId, identity, status: 200 }) : ledger.session(what, { target, jobId, identity });
  const tick = () => sleep(5);
  for (const jobId of ['held', 'stopped-before', 'stopping', 'waiting', 'refused-meanwhile', 'refused-one', 'other-team', 'reopened'])
    ledger.created({ target, embedded: false, jobId, identity: 'owner team' });
  for (const jobId of ['held', 'stopped-before', 'stopping', 'reopened']) event(jobId, 'opening'), event(jobId, 'live');
  event('other-team', 'opening', 'burst team');
  event('other-team', 'live', 'burst team');
  // An interact waiting out a 429: its attempt opened nothing, and its wait holds nothing.
  event('waiting', 'opening');
  event('waiting', 'not-opened');
  event('stopped-before', 'ended');
  await tick();
  // Another team's stop ends nothing of the owner's.
  event('held', 'ended', 'burst team');
  // An interact that timed out may have opened a session: it counts until its owner's stop.
  event('timed-out', 'opening');
  event('timed-out', 'maybe-open');
  // Stopped, then opened again by an interact on the stopped job.
  event('reopened', 'ended');
  event('reopened', 'opening');
  event('reopened', 'live');
  // The refusal was sent within a millisecond of this stop's answer: that stop may have come after it.
  event('stopped-just-before', 'opening');
  event('stopped-just-before', 'live');
  event('stopped-just-before', 'ended');
  const sentAt = Date.parse(JSON.parse(readFileSync(ledger.file, 'utf8').trim().split('\n').at(-1)!).at) + 0.9;
  await tick();
  event('stopping', 'ended');
  event('pending', 'opening');
  event('refused-meanwhile', 'opening');
  event('refused-meanwhile', 'not-opened');
  const receivedAt = Date.now();
  await tick();
  event('waiting', 'opening');
  event('waiting', 'live');
  const counted = 'held, timed-out, reopened, stopped-just-before, stopping (its stop may come after), and pending';
  assert.deepEqual(ledger.possiblyLive(target, 'owner team', 'refused-one', sentAt, receivedAt), { count: 6, pending: 1 }, counted);
  event('pending', 'not-opened');
  assert.deepEqual(ledger.possiblyLive(target, 'owner team', 'refused-one', sentAt, receivedAt), { count: 5, pending: 0 });
  assert.deepEqual(ledger.possiblyLive(target, 'owner team', 'held', sentAt, receivedAt), { count: 4, pending: 0 }, 'the refused one itself is not counted');
  event('timed-out', 'ended');
  await tick();
  const later = Date.now();
  assert.deepEqual(
    ledger.possiblyLive(target, 'owner team', 'refused-one', later, later + 1),
    { count: 3, pending: 0 },
    'held, reopened and waiting, which went live since',
  );
});
