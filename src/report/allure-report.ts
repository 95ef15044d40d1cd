/**
 * Builds the single-file Allure report, `<reports>/allure-report/index.html`, from one or more
 * results folders (one per shard), keeping the history of earlier runs in `<reports>/allure-history.jsonl`.
 *
 * Allure's single-file page sometimes asks for its data before the end of the page has defined
 * it, then fetches `widgets/*.json` from disk, which the browser refuses, and shows an empty
 * report (about one opening in six in headless Chromium here). Declaring the data store at the
 * top of the page makes the page wait for its embedded data instead.
 *
 * The page must not call out when someone opens it: Allure 3 adds Google Analytics to every report
 * with no switch (allure-framework/allure3#476), so its loader and its gtag() calls are removed, and
 * a Content-Security-Policy lets the page load nothing but what it carries (and its own folder's files).
 *
 *   npm run allure-report -- [<allure-results folders...>]   (default: reports/allure-results)
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');
const EARLY_DATA_STORE = '<script>window.allureReportData = window.allureReportData || {};</script>';
/** Scripts from another host, and inline scripts that call gtag(): what Allure adds for its analytics. */
const ANALYTICS = /<script\b[^>]*?\ssrc="(?:https?:)?\/\/[^"]*"[^>]*><\/script>|<script>[^<]*\bgtag\([^<]*<\/script>/g;
/** Whatever a later Allure adds, the browser loads nothing from another host. */
const LOCAL_ONLY = `<meta http-equiv="Content-Security-Policy" content="default-src 'self' data: blob: 'unsafe-inline' 'unsafe-eval'">`;

/** Returns the report's path, or undefined when Allure could not build it. */
export function buildAllureReport(resultsDirs: string[], reportsDir: string): string | undefined {
  const allure = path.join(path.dirname(require.resolve('allure')), '..', 'cli.js');
  const output = path.join(reportsDir, 'allure-report');
  const generated = spawnSync(process.execPath, [allure, 'generate', ...resultsDirs, '-o', output, '-c', path.join(ROOT, 'allurerc.mjs')], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, ALLURE_HISTORY_PATH: path.join(reportsDir, 'allure-history.jsonl') },
  });
  if (generated.status !== 0) return undefined;
  const report = path.join(output, 'index.html');
  // npm test checks that the store and the policy are in place and that the page asks no other host
  // for anything, so a new Allure page layout or injection cannot slip by unnoticed.
  const page = readFileSync(report, 'utf8')
    .replace(ANALYTICS, '')
    .replace(/<head[^>]*>/, (head) => `${head}\n    ${EARLY_DATA_STORE}\n    ${LOCAL_ONLY}`);
  writeFileSync(report, page);
  return report;
}

if (require.main === module) {
  const reportsDir = path.resolve(process.env.REPORTS_DIR || 'reports');
  const dirs = process.argv.slice(2);
  const report = buildAllureReport(dirs.length ? dirs.map((dir) => path.resolve(dir)) : [path.join(reportsDir, 'allure-results')], reportsDir);
  if (!report) {
    console.error('The Allure report could not be generated.');
    process.exit(1);
  }
  console.log(`Allure report: ${path.relative(process.cwd(), report)}`);
}
