/**
 * The suite's own shape: every test carries a stable id of the catalogue and only its level as a
 * tag, sits in its rule's spec file, and every id of the catalogue has its test; shipped
 * known-deviations files name existing checks; no import cycle, no import of the reference from
 * the suite, and no spec reads the environment; the checks' expect judges as Playwright's does.
 */

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { readKnownDeviations } from '../src/config/deviations';
import { entryOf, filesOf, ruleOf, TEST_IDS, type TestId, testIdOf } from '../src/config/rules';
import { isolatedEnv, PLAYWRIGHT, ROOT, runCommand } from './matrix';
import { tempDir } from './temp';

async function listTests() {
  const { code, log } = await runCommand(PLAYWRIGHT, ['test', '--list', '--reporter=json'], isolatedEnv({}));
  assert.equal(code, 0, log);
  const report = JSON.parse(log.slice(log.indexOf('{')));
  const tests: { title: string; file: string; id?: TestId; tags: string[] }[] = [];
  const visit = (suite: any) => {
    for (const spec of suite.specs ?? []) tests.push({ title: spec.title, file: spec.file, id: testIdOf(spec.tests[0].annotations), tags: spec.tags });
    (suite.suites ?? []).forEach(visit);
  };
  report.suites.forEach(visit);
  return tests;
}

test("every test has a catalogue id, only its level as a tag, and sits in its rule's spec file; every id has its test", async () => {
  const tests = await listTests();
  for (const t of tests) {
    assert.ok(t.id, `${t.title}: no test id`);
    assert.deepEqual(t.tags, [entryOf(t.id!).level], `${t.id}: tagged with its level only`);
    // A test that judges the whole run, or comes last of all, is in its rule's last file, every other in its rule's own file.
    const files = filesOf(ruleOf(t.id!));
    const { runWide, last } = entryOf(t.id!);
    assert.equal(t.file, path.basename(runWide || last ? files[1] : files[0]), `${t.id} is in ${t.file}`);
  }
  assert.deepEqual(tests.map((t) => t.id).sort(), [...TEST_IDS].sort(), 'one test per catalogue id, and no other');
  assert.equal(new Set(tests.map((t) => t.title)).size, tests.length, 'titles are unique');
});

test('every shipped known-deviations file names existing tests and checks, each with a reason', () => {
  const dir = path.join(ROOT, 'fixtures', 'known-deviations');
  for (const file of readdirSync(dir)) {
    const { deviations, billing } = readKnownDeviations(path.join(dir, file));
    assert.ok(deviations.length > 0 || billing, file);
    for (const deviation of deviations) assert.ok(entryOf(deviation.test).checks.includes(deviation.check));
  }
});

test('the code is as the formatter writes it, and the linter finds nothing (biome.json)', async () => {
  const { code, log } = await runCommand(path.join(ROOT, 'node_modules', '.bin', 'biome'), ['ci', '--colors=off', '--error-on-warnings', '.'], isolatedEnv({}));
  assert.equal(code, 0, log);
});

test('the layout holds: no import cycle, the suite never imports the reference, no spec reads the environment', async () => {
  const { code, log } = await runCommand(
    path.join(ROOT, 'node_modules', '.bin', 'depcruise'),
    ['--config', '.dependency-cruiser.cjs', 'src', 'tests', 'reference', 'selftest', 'bench', 'playwright.config.ts'],
    isolatedEnv({}),
  );
  assert.equal(code, 0, log);
  const specs = readdirSync(path.join(ROOT, 'tests', 'rules'));
  for (const spec of specs) assert.doesNotMatch(readFileSync(path.join(ROOT, 'tests', 'rules', spec), 'utf8'), /process\.env/, `${spec} reads process.env`);
});

test("the suite's test is Playwright's without browser fixtures (src/playwright/fixtures.ts falls back to the full one)", async () => {
  const playwright = await import('@playwright/test');
  assert.equal(
    typeof (playwright as { _baseTest?: unknown })._baseTest,
    'function',
    'this Playwright has no _baseTest: each test pays for browser fixtures again',
  );
});

test("Playwright's bundles load from the code cache the command preloads: the first process writes it, the next reads all of it", async () => {
  const dir = tempDir('code-cache-');
  const preload = path.join(ROOT, 'src', 'code-cache.cjs');
  // Playwright's test API and its runner's entry, as a worker loads them; then what the cache did.
  const script =
    "const { test } = require('@playwright/test'); require('playwright/lib/program'); if (typeof test !== 'function') process.exit(3); process.on('exit', () => console.log(JSON.stringify(globalThis[Symbol.for('stop-session-conformance.code-cache')])));";
  const load = async () => {
    const { code, log } = await runCommand(process.execPath, ['--require', preload, '-e', script], {
      ...isolatedEnv({ CONFORMANCE_CODE_CACHE: dir }),
      NODE_OPTIONS: '',
    });
    assert.equal(code, 0, log);
    return JSON.parse(log.trim().split('\n').at(-1)!) as { dir: string; hits: number; misses: number; builtIn: boolean };
  };
  const first = await load();
  assert.equal(first.dir, dir);
  assert.ok(readdirSync(dir).length > 0, 'the first process wrote the cache');
  if (first.builtIn) return; // Node 22 and later: module.enableCompileCache keeps it, with no count of its own
  assert.ok(first.misses >= 3 && first.hits === 0, JSON.stringify(first));
  const second = await load();
  assert.deepEqual([second.hits, second.misses], [first.misses, 0], 'the second process compiled none of them');
});

// src/checks/expect.ts: the one expect of the run and its reproductions, none more lenient than Playwright's.
test("the checks' expect agrees with Playwright's on every matcher the named checks use, and says what it expected", async () => {
  const { expect } = await import('../src/checks/expect');
  const { expect: playwright } = await import('@playwright/test');
  const stop = { success: true, sessionDurationMs: 1250, creditsBilled: 0.041667 };
  const GLOBAL = /json/g;
  const cases: [string, (e: (actual: unknown, message?: string) => any) => void][] = [
    ['toBe', (e) => e(200).toBe(200)],
    ['toBe, another value', (e) => e(404).toBe(200)],
    ['toBe, NaN', (e) => e(NaN).toBe(NaN)],
    ['toBe, 0 and -0', (e) => e(-0).toBe(0)],
    ['toBe, an equal object', (e) => e({}).toBe({})],
    ['not.toBe', (e) => e(undefined).not.toBe(true)],
    ['not.toBe, the same', (e) => e(true).not.toBe(true)],
    ['>=', (e) => e(3).toBeGreaterThanOrEqual(3)],
    ['>=, below', (e) => e(2.9).toBeGreaterThanOrEqual(3)],
    ['>=, a string', (e) => e('5').toBeGreaterThanOrEqual(3)],
    ['>=, a string expected', (e) => e(5).toBeGreaterThanOrEqual('3')],
    ['<=', (e) => e(3).toBeLessThanOrEqual(3)],
    ['<=, above', (e) => e(3.1).toBeLessThanOrEqual(3)],
    ['<=, null', (e) => e(null).toBeLessThanOrEqual(3)],
    ['<=, null expected', (e) => e(5).toBeLessThanOrEqual(null)],
    ['<', (e) => e(499).toBeLessThan(500)],
    ['<, equal', (e) => e(500).toBeLessThan(500)],
    ['<, NaN', (e) => e(NaN).toBeLessThan(500)],
    ['<, undefined expected', (e) => e(5).toBeLessThan(undefined)],
    ['>', (e) => e(1).toBeGreaterThan(0)],
    ['>, equal', (e) => e(0).toBeGreaterThan(0)],
    ['toBeUndefined', (e) => e(undefined).toBeUndefined()],
    ['toBeUndefined, a value', (e) => e('408 ms').toBeUndefined()],
    ['toBeUndefined, null', (e) => e(null).toBeUndefined()],
    ['toContain', (e) => e([200, 404]).toContain(404)],
    ['toContain, missing', (e) => e([200, 404]).toContain(500)],
    ['toContain, NaN', (e) => e([NaN]).toContain(NaN)],
    ['toContain, a string', (e) => e('a 404 answer').toContain('404')],
    ['toContain, "4" in a number', (e) => e(404).toContain(4)],
    ['toContain, a number in a string', (e) => e('a 404 answer').toContain(404)],
    ['toContain, undefined in a string', (e) => e('a 404 answer').toContain(undefined)],
    ['toEqual []', (e) => e([]).toEqual([])],
    ['toEqual [], not empty', (e) => e(['creditsBilled']).toEqual([])],
    ['toEqual [], an object', (e) => e({}).toEqual([])],
    ['toEqual, expecting more', (e) => e([]).toEqual(['creditsBilled'])],
    ['toEqual, an object', (e) => e({ a: 1 }).toEqual({ a: 1 })],
    ['toEqual, another object', (e) => e({ a: 1 }).toEqual({ a: 2 })],
    ['toMatch', (e) => e('application/json; charset=utf-8').toMatch(/^application\/json\s*(;.*)?$/i)],
    ['toMatch, failing', (e) => e('text/html').toMatch(/^application\/json/)],
    ['toMatch, undefined', (e) => e(undefined).toMatch(/json/)],
    ['not.toMatch, undefined', (e) => e(undefined).not.toMatch(/json/)],
    [
      'toMatch, a global pattern twice',
      (e) => {
        e('json').toMatch(GLOBAL);
        e('json').toMatch(GLOBAL);
      },
    ],
    ['not.toContain, a number', (e) => e(404).not.toContain(4)],
    ['not.toBeLessThan, a string', (e) => e('5').not.toBeLessThan(3)],
    ['not.toBeGreaterThan, undefined', (e) => e(undefined).not.toBeGreaterThan(3)],
    ['toEqual, two dates', (e) => e(new Date(1)).toEqual(new Date(2))],
  ];
  const outcome = (run: () => void) => {
    try {
      run();
      return 'pass';
    } catch (error) {
      return `fail: ${(error as Error).message}`;
    }
  };
  const verdict = (run: () => void) => outcome(run).split(':')[0];
  for (const [name, check] of cases)
    assert.equal(
      verdict(() => check(expect)),
      verdict(() => check(playwright as any)),
      name,
    );
  // Its own matchers, which Playwright has not: the value judged is the one received, the allowed set the one expected.
  assert.equal(
    verdict(() => expect(404).toBeOneOf([200, 404])),
    'pass',
  );
  assert.equal(
    verdict(() => expect(NaN).toBeOneOf([NaN])),
    'pass',
  );
  assert.equal(
    verdict(() => expect('404').toBeOneOf([200, 404])),
    'fail',
  );
  assert.equal(
    verdict(() => expect(stop).toMatchSchema('stop-result')),
    'pass',
  );
  assert.match(
    outcome(() => expect({ ...stop, success: 'yes' }).toMatchSchema('stop-result')),
    /schemas\/stop-result\.json[\s\S]*success/,
  );
  assert.match(
    outcome(() => expect(404, 'status').toBe(200)),
    /status[\s\S]*Expected: 200[\s\S]*Received: 404/,
  );
  assert.match(
    outcome(() => expect(502, 'status').toBeOneOf([200, 404])),
    /status[\s\S]*Expected: one of \[200, 404\]\nReceived: 502/,
  );
  assert.match(
    outcome(() => expect(500).toBeLessThan(500)),
    /Expected: < 500\nReceived: 500/,
  );
});
