/**
 * Fuzzes the reference over raw TCP (so that anything can be sent, not only what an HTTP client
 * accepts): generated and mutated jobIds, methods, headers (some very long) and bodies (invalid
 * JSON, wrong types, very large) against all three routes. No answer may be a 5xx, every answer
 * is JSON, every failure matches schemas/error.json, and the process keeps serving.
 */

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { test } from 'node:test';
import { createReferenceServer, loadTeams } from '../reference/server';
import { schemaErrors } from '../src/checks/schemas';

const REQUESTS = 5_000;
const CONCURRENCY = 32;
const [owner, foreign] = loadTeams();

/** Deterministic generator, so that a failure can be replayed with the printed seed. */
function generator(seed: number) {
  let state = seed >>> 0;
  const next = () => (state = (state * 1664525 + 1013904223) >>> 0) / 2 ** 32;
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)];
  const chars = (alphabet: string, length: number) => Array.from({ length }, () => alphabet[int(alphabet.length)]).join('');
  return { next, int, pick, chars };
}

type Gen = ReturnType<typeof generator>;

function jobId(g: Gen, known: string[]): string {
  const uuid = known.length && g.next() < 0.3 ? g.pick(known) : randomUUID();
  switch (g.int(9)) {
    case 0:
      return uuid;
    case 1:
      return uuid.toUpperCase();
    case 2: {
      const i = g.int(uuid.length);
      return uuid.slice(0, i) + g.chars('0123456789abcdefxyz-%/.', 1) + uuid.slice(i + 1);
    }
    case 3: {
      const i = g.int(uuid.length);
      return uuid.slice(0, i) + uuid.slice(i + 1);
    }
    case 4:
      return uuid + g.chars('0a-%', 1 + g.int(3));
    case 5:
      return g.chars('abcdefghijklmnopqrstuvwxyz0123456789-_.~', g.int(5000));
    case 6:
      return g.pick([
        '',
        '..',
        '.',
        '%',
        '%%',
        '%2F',
        '..%2F..%2Fetc',
        '%00',
        '%ZZ',
        '%E0%A4%A',
        '%C0%AF',
        'null',
        'undefined',
        '[object Object]',
        '-1',
        '0',
        encodeURIComponent('ü'.repeat(50)),
      ]);
    case 7:
      return encodeURIComponent(uuid);
    default:
      return g.chars('%0123456789ABCDEFabcdef', 1 + g.int(60));
  }
}

function authorization(g: Gen): string | undefined {
  switch (g.int(8)) {
    case 0:
      return undefined;
    case 1:
      return `Bearer ${owner.keys[0]}`;
    case 2:
      return `bearer ${owner.keys[0]}`;
    case 3:
      return `Bearer ${foreign.keys[0]}`;
    case 4:
      return g.pick(['Bearer', 'Bearer ', 'Basic abc', 'Token x', '', '   ', 'Bearer a b', `Bearer\t${owner.keys[0]}`]);
    case 5:
      return `Bearer ${g.chars('abcdef0123456789-', 1 + g.int(20_000))}`;
    case 6:
      return g.chars("!#$%&'*+-.^_`|~abcXYZ019 ", g.int(200));
    default:
      return `Bearer ${owner.keys[0]}`;
  }
}

function body(g: Gen): string | undefined {
  switch (g.int(10)) {
    case 0:
      return undefined;
    case 1:
      return '';
    case 2:
      return JSON.stringify({ url: 'https://example.com' });
    case 3:
      return JSON.stringify({
        code: 'console.log(1)',
        language: g.pick(['node', 'python', 'bash', 'ruby', 5, null]),
        timeout: g.pick([1, 30, 300, 0, 301, 1.5, '30', -1]),
      });
    case 4:
      return JSON.stringify(g.pick([{ code: 5 }, { prompt: '' }, { code: 'a', prompt: 'b' }, { url: [] }, { url: null }, [], null, 'string', 123, true, {}]));
    case 5:
      return g.pick(['{', '}', '{"url":', 'not json', '\u0000\u0001', '{"url": "x"} trailing', '\uFFFF']);
    case 6:
      return '['.repeat(5000) + ']'.repeat(5000);
    case 7:
      return g.next() < 0.1 ? JSON.stringify({ url: 'x'.repeat(1_200_000) }) : JSON.stringify({ url: 'x'.repeat(g.int(50_000)) });
    case 8:
      return JSON.stringify({ code: 'x'.repeat(g.int(100_000) + 1) });
    default:
      return g.chars('{}[]":,0123456789abc \n', g.int(300));
  }
}

interface Answer {
  status: number;
  contentType?: string;
  body: string;
}

function send(port: number, raw: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')));
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      const head = text.slice(0, split).split('\r\n');
      const status = Number(head[0].split(' ')[1]);
      const contentType = head
        .find((line) => /^content-type:/i.test(line))
        ?.split(':')[1]
        .trim();
      resolve({ status, contentType, body: Buffer.from(text.slice(split + 4), 'latin1').toString('utf8') });
    });
    socket.write(raw);
    socket.end();
  });
}

function request(g: Gen, known: string[]): { label: string; raw: Buffer; method: string } {
  const method = g.next() < 0.85 ? g.pick(['DELETE', 'DELETE', 'POST']) : g.pick(['GET', 'PUT', 'PATCH', 'OPTIONS', 'delete']);
  const route = g.int(10);
  const path =
    route === 0
      ? '/v2/scrape'
      : route === 1
        ? g.pick(['/v2/scrape/', '/v2', '/', '/v2/scrape/x/interact/extra', '/v2/scrape?x=1'])
        : `/v2/scrape/${jobId(g, known)}/interact${g.next() < 0.1 ? '?q=%' : ''}`;
  const auth = authorization(g);
  const payload = body(g);
  const headers = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close'];
  if (auth !== undefined) headers.push(`Authorization: ${auth}`);
  if (g.next() < 0.1) headers.push(`X-Padding: ${'p'.repeat(g.int(40_000))}`);
  if (payload !== undefined)
    headers.push(
      `Content-Type: ${g.pick(['application/json', 'text/plain', 'application/x-www-form-urlencoded'])}`,
      `Content-Length: ${Buffer.byteLength(payload)}`,
    );
  const raw = Buffer.concat([Buffer.from(`${headers.join('\r\n')}\r\n\r\n`, 'latin1'), Buffer.from(payload ?? '', 'utf8')]);
  return { label: `${method} ${path.slice(0, 80)} auth=${auth?.slice(0, 30)} body=${payload?.slice(0, 40)}`, raw, method };
}

test(`fuzz: ${REQUESTS} generated requests get no 5xx, JSON everywhere and valid error bodies`, async () => {
  const seed = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);
  const g = generator(seed);
  const server = await createReferenceServer({ rateLimit: { limit: 1_000_000, windowMs: 1000 } });
  const problems: string[] = [];
  const statuses: Record<number, number> = {};
  try {
    let sent = 0;
    const lane = async () => {
      while (sent < REQUESTS && problems.length < 20) {
        sent += 1;
        const known = [...server.state.jobs.keys()].slice(-50);
        const { label, raw } = request(g, known);
        const answer = await send(server.port, raw);
        statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
        if (!(answer.status >= 200 && answer.status < 500)) problems.push(`${answer.status} for ${label}`);
        if (answer.contentType !== 'application/json') problems.push(`Content-Type ${answer.contentType} for ${label}`);
        let parsed: unknown;
        try {
          parsed = JSON.parse(answer.body);
        } catch {
          problems.push(`non-JSON body for ${label}`);
          continue;
        }
        if (answer.status >= 400) {
          const errors = schemaErrors(parsed, 'error');
          if (errors.length) problems.push(`${answer.status} body ${answer.body.slice(0, 100)} breaks the error schema (${errors.join('; ')}) for ${label}`);
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, lane));
    const alive = await fetch(`${server.url}/v2/scrape`, { method: 'GET' });
    assert.equal(alive.status, 405, 'the server still answers after the fuzz run');
    assert.deepEqual(problems, [], `seed ${seed} (replay with FUZZ_SEED=${seed}); statuses ${JSON.stringify(statuses)}`);
    assert.ok(sent >= REQUESTS, `sent ${sent}`);
    console.log(`fuzz seed ${seed}: ${sent} requests, statuses ${JSON.stringify(statuses)}`);
  } finally {
    await server.close();
  }
});
