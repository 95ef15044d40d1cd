/**
 * npm run allure-report [-- <allure-results folders...>]   (default: reports/allure-results)
 *
 * Builds the single-file Allure report in reports/allure-report/index.html. Allure's single-file
 * page sometimes asks for its data before the end of the page has defined it, then fetches
 * `widgets/*.json` from disk, which the browser refuses, and shows an empty report (about one
 * opening in six in headless Chromium here). Declaring the data store at the top of the page
 * makes the page wait for its embedded data instead.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const root = path.join(__dirname, '..');
export const REPORT = path.join(root, 'reports', 'allure-report', 'index.html');
const EARLY_DATA_STORE = '<script>window.allureReportData = window.allureReportData || {};</script>';

export function buildAllureReport(resultsDirs: string[]): boolean {
  const allure = spawnSync(
    path.join(root, 'node_modules', '.bin', 'allure'),
    ['generate', ...resultsDirs, '-o', path.dirname(REPORT), '-c', path.join(root, 'allurerc.mjs')],
    { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  if (allure.status !== 0) return false;
  // npm test checks that the store is in place, so a new Allure page layout cannot drop it unnoticed.
  writeFileSync(REPORT, readFileSync(REPORT, 'utf8').replace(/<head[^>]*>/, (head) => `${head}\n    ${EARLY_DATA_STORE}`));
  return true;
}

if (require.main === module) {
  const dirs = process.argv.slice(2);
  if (!buildAllureReport(dirs.length ? dirs : [path.join(root, 'reports', 'allure-results')])) {
    console.error('The Allure report could not be generated.');
    process.exit(1);
  }
  console.log(`Allure report: ${path.relative(process.cwd(), REPORT)}`);
}
