/**
 * Opens the Allure report that `npm run conformance` wrote (reports/allure-report/index.html,
 * one self-contained file) in headless Chromium, from disk as a person opens a CI artifact,
 * and checks that it shows the rules, their statuses and the known-deviation category.
 * Runs after conformance.test.ts, whose last full run declared known deviations.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { ROOT } from './matrix';
import { RULES } from '../tests/support/rules';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const report = path.join(ROOT, 'reports', 'allure-report', 'index.html');

test('the Allure report shows every rule, its status and the known deviations in a real browser', { skip: !existsSync(CHROMIUM) && `no Chromium at ${CHROMIUM}: install it with "apt-get install -y chromium" (as root) or set CHROMIUM_PATH` }, async () => {
  assert.ok(existsSync(report), 'run conformance.test.ts first: it writes the report');
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    await page.goto(`file://${report}`);
    const features = Object.values(RULES).map((rule) => rule.title);
    // Grouped by feature (allurerc.mjs): one row per rule.
    for (const title of features) await page.getByText(title, { exact: false }).first().waitFor({ timeout: 20_000 });
    const text = await page.locator('body').innerText();
    assert.match(text, /passed/i, 'statuses are shown');
    await page.screenshot({ path: path.join(ROOT, 'reports', 'allure-report.png'), fullPage: false });

    const results = JSON.stringify(readdirSync(path.join(ROOT, 'reports', 'allure-results')).filter((f) => f.endsWith('-result.json')).map((f) => readFileSync(path.join(ROOT, 'reports', 'allure-results', f), 'utf8')));
    assert.match(results, /knownDeviation/, 'the last run declared deviations');
    await page.getByText('Categories', { exact: false }).first().click();
    await page.getByText('Known deviation', { exact: false }).first().click();
    await page.getByText('[known deviation]', { exact: false }).first().waitFor({ timeout: 20_000 });
    await page.screenshot({ path: path.join(ROOT, 'reports', 'allure-report-categories.png') });
  } finally {
    await browser.close();
  }
});
