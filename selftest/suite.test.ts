/**
 * The suite's own shape: titles are unique (known deviations are keyed by them), every test
 * carries a rule and a level and sits in its rule's file, every shipped known-deviations
 * file names only tests that exist, and the timed exchanges bracket what the server did.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { isolatedEnv, ROOT, runCommand } from './matrix';
import { RULES, type RuleId } from '../tests/support/rules';
import { readKnownDeviations } from '../tests/support/config';
import { sendTimed } from '../tests/support/exchange';

async function listTests() {
  const { code, log } = await runCommand(path.join(ROOT, 'node_modules', '.bin', 'playwright'), ['test', '--list', '--reporter=json'], isolatedEnv({}));
  assert.equal(code, 0, log);
  const report = JSON.parse(log.slice(log.indexOf('{')));
  const tests: { title: string; file: string; rule?: string; level?: string; tags: string[] }[] = [];
  const visit = (suite: any) => {
    for (const spec of suite.specs ?? []) {
      const annotations: { type: string; description: string }[] = spec.tests[0].annotations;
      const label = (type: string) => annotations.find((a) => a.type === type)?.description;
      tests.push({ title: spec.title, file: spec.file, rule: label('allure.label.rule'), level: label('allure.label.level'), tags: spec.tags });
    }
    (suite.suites ?? []).forEach(visit);
  };
  report.suites.forEach(visit);
  return tests;
}

test('every test has a unique title, a rule, a level tag, and sits in its rule\'s spec file', async () => {
  const tests = await listTests();
  assert.ok(tests.length >= 30, `${tests.length} tests`);
  assert.equal(new Set(tests.map((t) => t.title)).size, tests.length, 'titles are unique');
  for (const t of tests) {
    assert.ok(t.rule && t.rule in RULES, `${t.title}: rule ${t.rule}`);
    assert.ok(['must', 'should', 'inferred'].includes(t.level!), `${t.title}: level ${t.level}`);
    assert.deepEqual(t.tags, [t.level], `${t.title}: tagged @${t.level}`);
    assert.equal(t.file, RULES[t.rule as RuleId].file, `${t.title} is in ${RULES[t.rule as RuleId].file}`);
  }
  assert.deepEqual(new Set(tests.map((t) => t.rule)), new Set(Object.keys(RULES)), 'every rule has tests');
});

test('every shipped known-deviations file names existing tests, each with a reason', async () => {
  const titles = new Set((await listTests()).map((t) => t.title));
  const dir = path.join(ROOT, 'fixtures', 'known-deviations');
  for (const file of readdirSync(dir)) {
    const deviations = readKnownDeviations(path.join(dir, file));
    assert.ok(deviations.size > 0, file);
    for (const [title, reason] of deviations) {
      assert.ok(titles.has(title), `${file}: no test is titled "${title}"`);
      assert.ok(reason.length > 20, `${file}: "${title}" needs a reason`);
    }
  }
});

test('a timed exchange starts after its connection is open and brackets the server\'s whole handling of the request', async () => {
  const seen: { connectedAt?: number; arrivedAt?: number; answeredAt?: number; body?: string; host?: string } = {};
  const server = http.createServer((request, response) => {
    seen.arrivedAt = performance.now();
    seen.host = request.headers.host;
    const chunks: Buffer[] = [];
    request.on('data', (chunk) => chunks.push(chunk)).on('end', () => {
      seen.body = Buffer.concat(chunks).toString();
      setTimeout(() => {
        response.setHeader('content-type', 'application/json');
        response.setHeader('retry-after', '1');
        response.end('{"success":true}', () => (seen.answeredAt = performance.now()));
      }, 30);
    });
  });
  server.on('connection', () => (seen.connectedAt = performance.now()));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  try {
    const answer = await sendTimed(`http://127.0.0.1:${port}/v2/x?y=1`, 'POST', { authorization: 'Bearer k' }, { code: 'x' }, 5_000);
    assert.equal(answer.status, 200);
    assert.equal(answer.text, '{"success":true}');
    assert.equal(answer.headers['retry-after'], '1');
    assert.equal(seen.body, '{"code":"x"}');
    assert.equal(seen.host, `127.0.0.1:${port}`);
    assert.ok(seen.connectedAt! < answer.sentAt, 'the connection is opened before the clock starts');
    assert.ok(answer.sentAt <= seen.arrivedAt!, 'sentAt is before the server saw the request');
    assert.ok(seen.answeredAt! <= answer.receivedAt, 'receivedAt is after the server finished its answer');
    assert.ok(answer.receivedAt - answer.sentAt >= 30, 'the window holds the server\'s 30 ms');
  } finally {
    server.close();
  }
});

test('a timed exchange with a target that never answers fails after the request timeout', async () => {
  const server = http.createServer(() => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const started = performance.now();
  try {
    await assert.rejects(sendTimed(`http://127.0.0.1:${port}/`, 'DELETE', {}, undefined, 300), /Timeout 300ms exceeded/);
    assert.ok(performance.now() - started < 2_000);
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
