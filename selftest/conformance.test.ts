/**
 * `npm run conformance` end to end, as a user runs it: against the embedded reference, against
 * an external target with a known-deviations file, and with bad configurations. Checks exit
 * codes, the reports it writes, and that no key reaches any of them. The last test opens the
 * Allure report of the run before it in headless Chromium, from disk as a person opens a CI artifact.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { createReferenceServer } from '../reference/server';
import { RULES } from '../tests/support/rules';
import { isolatedEnv, ROOT, runCommand } from './matrix';
import { filesContaining, SECRETS } from './secrets';
import { faultyVariants, correctVariants } from './variants';

const reports = path.join(ROOT, 'reports');
const conformance = (env: Record<string, string> = {}) => runCommand('npm', ['run', '--silent', 'conformance'], isolatedEnv(env));
const summary = () => JSON.parse(readFileSync(path.join(reports, 'conformance-summary.json'), 'utf8'));
const ruleStatuses = () => Object.fromEntries(Object.entries(summary().rules).map(([id, rule]) => [id, (rule as { status: string }).status]));

test('npm run conformance passes the embedded reference, writes every report and no key', async () => {
  const { code, log } = await conformance();
  assert.equal(code, 0, log.slice(-3000));
  assert.equal(summary().verdict, 'pass');
  assert.deepEqual(new Set(Object.values(ruleStatuses())), new Set(['pass']));
  assert.equal(Object.keys(ruleStatuses()).length, 9);
  for (const file of ['allure-report/index.html', 'junit.xml', 'conformance-summary.json']) assert.ok(existsSync(path.join(reports, file)), file);
  assert.match(readFileSync(path.join(reports, 'allure-report', 'index.html'), 'utf8'), /<head>\s*<script>window\.allureReportData/, 'the report declares its data store first (scripts/allure-report.ts)');
  assert.match(log, /Verdict: PASS/);
  assert.deepEqual(filesContaining(reports), [], 'keys in reports/');
  assert.deepEqual(filesContaining(log), [], 'keys in the output');
});

test('a declared deviation that does not happen fails the run and says so', async () => {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'deviations-')), 'stale.json');
  writeFileSync(file, JSON.stringify({ deviations: [{ test: 'a stop of a random job id that was never provisioned answers 404 with an error body', reason: 'pretend' }] }));
  const { code } = await conformance({ KNOWN_DEVIATIONS: file });
  assert.equal(code, 1);
  const unknownJob = summary().rules['unknown-job'];
  assert.equal(unknownJob.status, 'fail');
  assert.match(JSON.stringify(unknownJob.tests), /declared as a known deviation, but it passes/);
});

test('a target that stops answering mid-run fails the run and its keys still reach no report', async () => {
  // Answers the reachability probe, then never answers again: every request of the suite times out.
  const server = http.createServer((req, res) => void (req.method === 'OPTIONS' && res.end()));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { code, log } = await runCommand('npm', ['run', '--silent', 'conformance', '--', 'tests/rules/01-owner-stop.spec.ts', 'tests/rules/04-unknown-job-not-found.spec.ts'], isolatedEnv({
      BASE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, API_KEY: SECRETS[0], FOREIGN_API_KEY: SECRETS[1], REQUEST_TIMEOUT_MS: '1000', BURST_REQUESTS: '20',
    }));
    assert.equal(code, 1, log.slice(-2000));
    assert.match(log, /Timeout 1000ms exceeded/);
    assert.deepEqual(filesContaining(reports), [], 'keys in reports/');
    assert.deepEqual(filesContaining(log), [], 'keys in the output');
  } finally {
    server.closeAllConnections();
    server.close();
  }
});

test('bad configurations stop before any test with one message and exit code 2', async () => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ BASE_URL: 'http://127.0.0.1:9' }, /API_KEY .*is not/],
    [{ BASE_URL: 'http://127.0.0.1:9', API_KEY: 'same', FOREIGN_API_KEY: 'same' }, /same key/],
    [{ BASE_URL: 'not a url', API_KEY: 'a', FOREIGN_API_KEY: 'b' }, /not a valid URL/],
    [{ BASE_URL: 'http://127.0.0.1:9', API_KEY: 'a', FOREIGN_API_KEY: 'b' }, /unreachable/],
    [{ API_KEY: 'a' }, /without BASE_URL/],
    [{ BURST_REQUESTS: 'many' }, /BURST_REQUESTS must be an integer/],
    [{ KNOWN_DEVIATIONS: 'missing.json' }, /does not exist/],
  ];
  const conformanceRun = ['npm', ['run', '--silent', 'conformance']] as const;
  const plainPlaywright = [path.join(ROOT, 'node_modules', '.bin', 'playwright'), ['test']] as const;
  for (const [index, [env, message]] of cases.entries()) {
    for (const command of index < 4 ? [conformanceRun, plainPlaywright] : [conformanceRun]) {
      const { code, log } = await runCommand(command[0], [...command[1]], isolatedEnv(env));
      assert.equal(code, 2, `${JSON.stringify(env)}: ${log}`);
      assert.match(log, message);
      assert.doesNotMatch(log, /passed|failed|at .*\.ts:\d+/, 'no test ran and no stack trace');
    }
  }
});

test('a target with declared deviations passes as known deviations, and keys it echoes stay out of the reports', async () => {
  const options = (name: string) => [...faultyVariants, ...correctVariants].find((v) => v.name === name)!.options;
  // Bills whole credits, accepts any scheme word (both declared for the hosted service) and quotes credentials in errors.
  const server = await createReferenceServer({
    behaviour: (base, state) => ({
      ...options('billing-whole-credits').behaviour!(base, state),
      ...options('any-scheme-accepted').behaviour!(base, state),
      error: options('echoes-credentials').behaviour!(base, state).error,
      authenticate: (header) => {
        options('echoes-credentials').behaviour!(base, state).authenticate!(header);
        return options('any-scheme-accepted').behaviour!(base, state).authenticate!(header);
      },
    }),
  });
  try {
    const target = { BASE_URL: server.url, API_KEY: SECRETS[0], FOREIGN_API_KEY: SECRETS[1] };
    const undeclared = await conformance(target);
    assert.equal(undeclared.code, 1, 'the same deviations fail the run when they are not declared');
    assert.equal(ruleStatuses().billing, 'fail');
    const declared = await conformance({ ...target, KNOWN_DEVIATIONS: 'fixtures/known-deviations/firecrawl-production.json' });
    assert.equal(declared.code, 0, declared.log.slice(-3000));
    assert.equal(ruleStatuses().billing, 'known deviation');
    assert.equal(ruleStatuses().authentication, 'known deviation');
    assert.match(declared.log, /KNOWN DEVIATION/);
    assert.deepEqual(filesContaining(reports), [], 'keys in reports/');
    assert.deepEqual(filesContaining(declared.log), [], 'keys in the output');

  } finally {
    await server.close();
  }
});

// Runs last: it opens the report of the run above, which declared known deviations.
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

test('the Allure report shows every rule, its status and the known deviations in a real browser', { skip: !existsSync(CHROMIUM) && `no Chromium at ${CHROMIUM}: install it with "apt-get install -y chromium" (as root) or set CHROMIUM_PATH` }, async () => {
  assert.ok(existsSync(path.join(reports, 'allure-report', 'index.html')), 'the run above writes the report');
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const consoleErrors: string[] = [];
    page.on('console', (message) => message.type() === 'error' && consoleErrors.push(message.text().slice(0, 200)));
    await page.goto(`file://${path.join(reports, 'allure-report', 'index.html')}`);
    const features = Object.values(RULES).map((rule) => rule.title);
    // Grouped by feature (allurerc.mjs): one row per rule.
    for (const title of features) {
      await page.getByText(title, { exact: false }).first().waitFor({ timeout: 20_000 }).catch((error: Error) => {
        throw new Error(`${error.message.split('\n')[0]}\nbrowser console errors: ${JSON.stringify(consoleErrors.slice(0, 5))}`);
      });
    }
    const text = await page.locator('body').innerText();
    const total = Object.values(summary().rules as Record<string, { tests: unknown[] }>).reduce((n, rule) => n + rule.tests.length, 0);
    assert.match(text, new RegExp(`Total\\s+${total}\\b`), `the report counts the run's ${total} tests`);
    assert.match(text, /Passed/, 'statuses are shown');
    await page.screenshot({ path: path.join(reports, 'allure-report.png'), fullPage: false });

    const results = JSON.stringify(readdirSync(path.join(reports, 'allure-results')).filter((f) => f.endsWith('-result.json')).map((f) => readFileSync(path.join(reports, 'allure-results', f), 'utf8')));
    assert.match(results, /knownDeviation/, 'the last run declared deviations');
    await page.getByText('Categories', { exact: false }).first().click();
    await page.getByText('Known deviation', { exact: false }).first().click();
    await page.getByText('[known deviation]', { exact: false }).first().waitFor({ timeout: 20_000 });
    await page.screenshot({ path: path.join(reports, 'allure-report-categories.png') });
  } finally {
    await browser.close();
  }
});
