/**
 * The suite's own shape: every test carries a stable id of the catalogue and only its level as a
 * tag, sits in its rule's spec file, and every id of the catalogue has its test; shipped
 * known-deviations files name existing checks; no import cycle, no import of the reference from
 * the suite, and no spec reads the environment.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { isolatedEnv, PLAYWRIGHT, ROOT, runCommand } from './matrix';
import { entryOf, RULES, ruleOf, testIdOf, TEST_IDS, type TestId } from '../tests/support/rules';
import { readKnownDeviations } from '../tests/support/deviations';

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

test('every test has a catalogue id, only its level as a tag, and sits in its rule\'s spec file; every id has its test', async () => {
  const tests = await listTests();
  for (const t of tests) {
    assert.ok(t.id, `${t.title}: no test id`);
    assert.deepEqual(t.tags, [entryOf(t.id!).level], `${t.id}: tagged with its level only`);
    assert.equal(t.file, path.basename(RULES[ruleOf(t.id!)].file), `${t.id} is in ${RULES[ruleOf(t.id!)].file}`);
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

test('the layout holds: no import cycle, the suite never imports the reference, no spec reads the environment', async () => {
  const { code, log } = await runCommand(path.join(ROOT, 'node_modules', '.bin', 'depcruise'), ['--config', '.dependency-cruiser.cjs', 'tests', 'scripts', 'reference', 'selftest', 'bench', 'playwright.config.ts'], isolatedEnv({}));
  assert.equal(code, 0, log);
  const specs = readdirSync(path.join(ROOT, 'tests', 'rules'));
  for (const spec of specs) assert.doesNotMatch(readFileSync(path.join(ROOT, 'tests', 'rules', spec), 'utf8'), /process\.env/, `${spec} reads process.env`);
});
