import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bearerToken } from '../reference/auth';
import { creditsFor } from '../reference/billing';
import { createRateLimiter } from '../reference/rate-limit';
import { createReferenceServer, loadTeams } from '../reference/server';

const [owner, foreign] = loadTeams();

test('billing: 2 credits per minute, every started second counts, 6 decimals', () => {
  const cases: [number, number][] = [
    [0, 0],
    [1, 0.033333],
    [999, 0.033333],
    [1000, 0.033333],
    [1001, 0.066667],
    [59_999, 2],
    [60_000, 2],
    [61_000, 2.033333],
    [3_600_000, 120],
  ];
  for (const [ms, credits] of cases) assert.equal(creditsFor(ms), credits, `${ms} ms`);
});

test('auth: the bearer scheme is case-insensitive and needs exactly one token', () => {
  const cases: [string | undefined, string | undefined][] = [
    ['Bearer abc', 'abc'],
    ['bearer abc', 'abc'],
    ['BEARER abc', 'abc'],
    ['Bearer    abc  ', 'abc'],
    ['\tBearer\tabc', 'abc'],
    [undefined, undefined],
    ['', undefined],
    ['Bearer', undefined],
    ['Bearer ', undefined],
    ['Bearer a b', undefined],
    ['Basic abc', undefined],
    ['Token abc', undefined],
    ['abc', undefined],
    ['Bearerabc', undefined],
  ];
  for (const [header, token] of cases) assert.equal(bearerToken(header), token, JSON.stringify(header));
});

test('rate limiter: a fixed window per key, with Retry-After until the window ends, then recovery', () => {
  let now = 0;
  const take = createRateLimiter({ limit: 3, windowMs: 1000 }, () => now);
  assert.deepEqual(
    [take('a'), take('a'), take('a')].map((d) => d.allowed),
    [true, true, true],
  );
  now = 200;
  assert.deepEqual(take('a'), { allowed: false, retryAfterSeconds: 1 });
  assert.equal(take('b').allowed, true, 'another key has its own window');
  now = 999;
  assert.equal(take('a').allowed, false, 'the last millisecond of the window is still limited');
  now = 1000;
  assert.equal(take('a').allowed, true, 'a new window starts at the boundary');
  const slow = createRateLimiter({ limit: 1, windowMs: 5000 }, () => now);
  slow('c');
  now = 1100;
  assert.deepEqual(slow('c'), { allowed: false, retryAfterSeconds: 5 });
});

async function withServer(run: (url: string, server: Awaited<ReturnType<typeof createReferenceServer>>) => Promise<void>, clock?: () => number) {
  const server = await createReferenceServer({ rateLimit: { limit: 1000, windowMs: 1000 }, clock });
  try {
    await run(server.url, server);
  } finally {
    await server.close();
  }
}

const auth = (key: string) => ({ Authorization: `Bearer ${key}` });

async function provision(url: string) {
  const scrape = await fetch(`${url}/v2/scrape`, { method: 'POST', headers: auth(owner.keys[0]), body: JSON.stringify({ url: 'https://example.com' }) });
  const jobId = (await scrape.json()).data.metadata.scrapeId;
  const interact = await fetch(`${url}/v2/scrape/${jobId}/interact`, { method: 'POST', headers: auth(owner.keys[0]), body: JSON.stringify({ code: '1' }) });
  assert.equal(interact.status, 200);
  return jobId as string;
}

test('stop: owner 200 with duration and credits from the injected clock, then 404; foreign 403 leaves it running', async () => {
  let now = 0;
  await withServer(
    async (url, server) => {
      const jobId = await provision(url);
      const forbidden = await fetch(`${url}/v2/scrape/${jobId}/interact`, { method: 'DELETE', headers: auth(foreign.keys[0]) });
      assert.equal(forbidden.status, 403);
      assert.deepEqual(await forbidden.json(), { success: false, error: 'Forbidden.' });
      assert.equal(server.activeSessions().length, 1);
      now = 61_000;
      const stop = await fetch(`${url}/v2/scrape/${jobId}/interact`, { method: 'DELETE', headers: auth(owner.keys[0]) });
      assert.equal(stop.status, 200);
      assert.equal(stop.headers.get('content-type'), 'application/json');
      assert.deepEqual(await stop.json(), { success: true, sessionDurationMs: 61_000, creditsBilled: 2.033333 });
      assert.equal(server.activeSessions().length, 0);
      assert.equal(server.creditsBilled(owner.id), 2.033333);
      const again = await fetch(`${url}/v2/scrape/${jobId}/interact`, { method: 'DELETE', headers: auth(owner.keys[0]) });
      assert.equal(again.status, 404);
      assert.equal(server.creditsBilled(), 2.033333, 'no second charge');
    },
    () => now,
  );
});

test('stop: two simultaneous stops of one session give exactly one 200 with a charge and one 404', async () => {
  await withServer(async (url, server) => {
    for (let round = 0; round < 20; round++) {
      const jobId = await provision(url);
      const answers = await Promise.all([1, 2].map(() => fetch(`${url}/v2/scrape/${jobId}/interact`, { method: 'DELETE', headers: auth(owner.keys[0]) })));
      assert.deepEqual(answers.map((a) => a.status).sort(), [200, 404]);
    }
    assert.equal(server.state.charges.length, 20);
  });
});

test('routes: unknown path 404 JSON, wrong method 405 with Allow, missing key 401, bad UUID 400', async () => {
  await withServer(async (url) => {
    const expectations: [string, RequestInit, number, string?][] = [
      ['/v1/anything', { method: 'GET' }, 404],
      ['/v2/scrape', { method: 'GET' }, 405, 'POST'],
      ['/v2/scrape/3f2a1c4e-8b7d-4e6f-9a0b-1c2d3e4f5a6b/interact', { method: 'PUT' }, 405, 'POST, DELETE'],
      ['/v2/scrape/3f2a1c4e-8b7d-4e6f-9a0b-1c2d3e4f5a6b/interact', { method: 'DELETE' }, 401],
      ['/v2/scrape/not-a-uuid/interact', { method: 'DELETE', headers: auth(owner.keys[0]) }, 400],
      ['/v2/scrape', { method: 'POST', headers: auth(owner.keys[0]), body: '{"url": 5}' }, 400],
      ['/v2/scrape', { method: 'POST', headers: auth(owner.keys[0]), body: '{' }, 400],
    ];
    for (const [path, init, status, allow] of expectations) {
      const response = await fetch(url + path, init);
      assert.equal(response.status, status, `${init.method} ${path}`);
      assert.equal(response.headers.get('content-type'), 'application/json');
      const body = await response.json();
      assert.equal(body.success, false);
      assert.equal(typeof body.error, 'string');
      if (allow) assert.equal(response.headers.get('allow'), allow);
    }
  });
});

test('rate limit: 429 with Retry-After once a team is over its limit', async () => {
  const server = await createReferenceServer({ rateLimit: { limit: 5, windowMs: 60_000 } });
  try {
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let i = 0; i < 7; i++) {
      const response = await fetch(`${server.url}/v2/scrape/3f2a1c4e-8b7d-4e6f-9a0b-1c2d3e4f5a6b/interact`, { method: 'DELETE', headers: auth(owner.keys[0]) });
      statuses.push(response.status);
      if (response.status === 429) retryAfter = response.headers.get('retry-after');
    }
    assert.deepEqual(statuses, [404, 404, 404, 404, 404, 429, 429]);
    assert.equal(retryAfter, '60');
  } finally {
    await server.close();
  }
});

test('request log: one line per request, never a key', async () => {
  const lines: string[] = [];
  const server = await createReferenceServer({ log: (line) => lines.push(line) });
  try {
    const jobId = await provision(server.url);
    await fetch(`${server.url}/v2/scrape/${jobId}/interact`, { method: 'DELETE', headers: auth(foreign.keys[0]) });
    await fetch(`${server.url}/v2/scrape/${jobId}/interact`, { method: 'DELETE', headers: { Authorization: `Basic ${owner.keys[0]}` } });
    assert.equal(lines.length, 4);
    assert.match(lines[2], /^DELETE \/v2\/scrape\/\S+\/interact 403 [\d.]+ms team=team-foreign$/);
    for (const key of [...owner.keys, ...foreign.keys]) assert.ok(!lines.join('\n').includes(key));
  } finally {
    await server.close();
  }
});
