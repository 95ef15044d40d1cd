/**
 * The suite's own shape: titles are unique (known deviations are keyed by them), every test
 * carries a rule and a level and sits in its rule's file, and every shipped known-deviations
 * file names only tests that exist.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { isolatedEnv, ROOT, runCommand } from './matrix';
import { RULES, type RuleId } from '../tests/support/rules';
import { readKnownDeviations } from '../tests/support/config';

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
