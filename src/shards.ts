/** `--shards N`: the suite in N processes side by side, then the burst alone, then one verdict. */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { RULE_IDS, type RuleId } from './config/rules';
import type { Settings } from './config/settings';
import { removeRunFolder, takeReportsFolder } from './coordination/run-folder';
import { ledgerFile } from './domain/ledger';
import { junitXml } from './playwright/summary-reporter';
import { buildAllureReport } from './report/allure-report';
import { EXIT_CODES, mergeSummaries, renderSummary, type Summary } from './report/verdict';

const ROOT = path.join(__dirname, '..');

export const SHARD_FOLDERS = Array.from({ length: 16 }, (_, index) => `shard-${index + 1}`);

/** The folders of a sharded run under a reports folder (--shards), that exist. */
export const shardFolders = (reportsDir: string) =>
  [...SHARD_FOLDERS, 'rate-limit'].map((folder) => path.join(reportsDir, folder)).filter((folder) => existsSync(folder));
/** A folder's ledger and the one an earlier run left. */
export const ledgerFiles = (folder: string) => [ledgerFile(folder), ledgerFile(folder).replace(/\.jsonl$/, '.previous.jsonl')];

/**
 * `--shards N`: N runs of the suite side by side, each with every selected rule but rate-limit
 * (`<reports>/shard-<i>`); then rate-limit alone (`<reports>/rate-limit`), since its burst drains a
 * team's limit and the quiet spell that keeps its sends apart holds within one run; then one
 * verdict (`<reports>/conformance-summary.json`, `junit.xml`) and one Allure report of them all.
 */
export async function runShards(total: number, common: string[], selected: RuleId[], positionals: string[], settings: Settings): Promise<number> {
  const rest = (selected.length ? selected : RULE_IDS).filter((id) => id !== 'rate-limit');
  // The whole folder is this run's while it lasts: another run or a cleanup must not take its shards' sessions.
  mkdirSync(settings.reportsDir, { recursive: true });
  const release = takeReportsFolder(settings.reportsDir);
  let interrupted: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals) => (interrupted ??= signal);
  process.on('SIGINT', onSignal).on('SIGTERM', onSignal);
  const child = (args: string[], log?: string) =>
    new Promise<number>((resolve) => {
      const out = log ? openSync(log, 'w') : 'inherit';
      const run = spawn(
        process.execPath,
        [path.join(ROOT, 'bin', 'stop-session-conformance.js'), 'run', ...common, ...args, ...(positionals.length ? ['--', ...positionals] : [])],
        { stdio: ['ignore', out, out] },
      );
      const forward = () => run.kill('SIGTERM');
      process.on('SIGINT', forward).on('SIGTERM', forward);
      run.on('close', (code) => {
        process.off('SIGINT', forward).off('SIGTERM', forward);
        resolve(code ?? EXIT_CODES.error);
      });
    });
  try {
    return await shardsThenBurst(total, rest, selected, settings, child, () => interrupted);
  } finally {
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
    release();
    removeRunFolder(settings.reportsDir);
  }
}

/** The stages of --shards: the shards side by side, the burst alone, one verdict and one report. */
async function shardsThenBurst(
  total: number,
  rest: RuleId[],
  selected: RuleId[],
  settings: Settings,
  child: (args: string[], log?: string) => Promise<number>,
  interrupted: () => NodeJS.Signals | undefined,
): Promise<number> {
  const folders: string[] = [];
  const codes: number[] = [];
  if (rest.length) {
    const shardDirs = SHARD_FOLDERS.slice(0, total).map((folder) => path.join(settings.reportsDir, folder));
    for (const folder of shardDirs) mkdirSync(folder, { recursive: true });
    console.log(
      `Running ${total} shards side by side (rules ${rest.join(', ')}); their output goes to ${path.relative(process.cwd(), settings.reportsDir) || '.'}/shard-<i>/run.log.`,
    );
    const shardCodes = await Promise.all(
      shardDirs.map((folder, index) =>
        child([...rest.flatMap((id) => ['--rule', id]), `--shard=${index + 1}/${total}`, '--reports', folder, '--no-allure'], path.join(folder, 'run.log')),
      ),
    );
    for (const [index, code] of shardCodes.entries())
      console.log(`  shard ${index + 1}/${total}: exit ${code} (${path.relative(process.cwd(), path.join(shardDirs[index], 'run.log'))})`);
    folders.push(...shardDirs);
    codes.push(...shardCodes);
  }
  if ((!selected.length || selected.includes('rate-limit')) && !interrupted()) {
    const folder = path.join(settings.reportsDir, 'rate-limit');
    console.log('Rule rate-limit, alone, after the shards:');
    codes.push(await child(['--rule', 'rate-limit', '--reports', folder, '--no-allure']));
    folders.push(folder);
  }
  const summaries = folders.map((folder) => path.join(folder, 'conformance-summary.json')).filter((file) => existsSync(file));
  if (!summaries.length) {
    console.error('No shard wrote a conformance summary: see the errors above.');
    return EXIT_CODES.error;
  }
  const merged = mergeSummaries(summaries.map((file) => JSON.parse(readFileSync(file, 'utf8')) as Summary));
  writeFileSync(path.join(settings.reportsDir, 'conformance-summary.json'), JSON.stringify(merged, null, 2));
  writeFileSync(path.join(settings.reportsDir, 'junit.xml'), junitXml(merged, new Map()));
  console.log(renderSummary(merged));
  const results = folders.map((folder) => path.join(folder, 'allure-results')).filter((dir) => existsSync(dir));
  if (results.length) {
    const report = buildAllureReport(results, settings.reportsDir);
    console.log(report ? `Allure report: ${path.relative(process.cwd(), report)}` : 'The Allure report could not be generated.');
  }
  // A process that ended in an error (2, or a crash), or a run stopped by a signal, is an error, unless a failure was found.
  if (interrupted())
    console.error(`${interrupted()}: the run was stopped${selected.includes('rate-limit') || !selected.length ? ' before the rate-limit rule' : ''}.`);
  const crashed = !!interrupted() || codes.some((code) => ![EXIT_CODES.pass, EXIT_CODES.fail, EXIT_CODES.incomplete].includes(code));
  return crashed && merged.exitCode !== EXIT_CODES.fail ? EXIT_CODES.error : merged.exitCode;
}
