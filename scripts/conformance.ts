/**
 * npm run conformance [-- <playwright test options, e.g. --shard=1/3>]
 *
 * Validates the configuration, runs the suite, builds the Allure HTML report and exits with
 * 0 (every rule passes; known deviations allowed), 1 (conformance failures) or
 * 2 (configuration error, unreachable target, or a run that could not produce a verdict).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { checkReachable, ConfigurationError, readSettings } from '../tests/support/config';
import { buildAllureReport, REPORT } from './allure-report';

const root = path.join(__dirname, '..');
const reports = path.join(root, 'reports');
const bin = (name: string) => path.join(root, 'node_modules', '.bin', name);

async function main(): Promise<number> {
  try {
    const settings = readSettings();
    if (settings.baseURL) await checkReachable(settings.baseURL, settings.requestTimeoutMs);
  } catch (error) {
    if (!(error instanceof ConfigurationError)) throw error;
    console.error(error.message);
    return 2;
  }

  for (const stale of ['allure-results', 'allure-report', 'test-results', 'junit.xml', 'conformance-summary.json']) {
    rmSync(path.join(reports, stale), { recursive: true, force: true });
  }
  spawnSync(bin('playwright'), ['test', ...process.argv.slice(2)], { cwd: root, stdio: 'inherit' });

  const summaryFile = path.join(reports, 'conformance-summary.json');
  if (!existsSync(summaryFile)) {
    console.error('The run ended without a conformance summary: see the errors above.');
    return 2;
  }
  const { verdict } = JSON.parse(readFileSync(summaryFile, 'utf8')) as { verdict: 'pass' | 'fail' | 'error' };

  if (existsSync(path.join(reports, 'allure-results'))) {
    console.log(
      buildAllureReport([path.join(reports, 'allure-results')])
        ? `Allure report: ${path.relative(process.cwd(), REPORT)} (npm run report to serve it)`
        : 'The Allure report could not be generated.',
    );
  }
  console.log(`JUnit XML: reports/junit.xml; summary: reports/conformance-summary.json`);
  return verdict === 'pass' ? 0 : verdict === 'fail' ? 1 : 2;
}

main().then(
  (code) => process.exit(code),
  (error: Error) => {
    console.error(error.message);
    process.exit(2);
  },
);
