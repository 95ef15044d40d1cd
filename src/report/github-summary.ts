/**
 * A conformance summary for GitHub: Markdown for the run page, appended to the file named by
 * GITHUB_STEP_SUMMARY (printed when it is unset), and the step outputs `verdict` and `exit-code`,
 * appended to the file named by GITHUB_OUTPUT. Used by action.yml and the example workflow.
 *
 *   tsx src/report/github-summary.ts [<conformance-summary.json>]   (default: reports/conformance-summary.json)
 *
 * RUN_EXIT_CODE, when set, is the exit code of the run and wins over the summary's: a run can end
 * worse than its summary says (a session it could not stop, a shard that died). REPORT_URL is
 * where the reports can be downloaded.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { describeCost } from '../coordination/cost';
import type { Outcome, Summary, TestRecord } from './verdict';

const VERDICTS = ['pass', 'fail', 'error', 'incomplete']; // by exit code (src/report/verdict.ts)
const LEVELS = ['must', 'should', 'inferred'];
const ICONS: Record<Outcome, string> = { pass: '✅', fail: '❌', error: '⚠️', 'known deviation': '🟡', 'not verifiable': '❔', 'not run': '⏭️' };
const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');

/** A list item: the first line of its message, the rest below it as a block (a multi-line failure, whole), then `after`. */
function item(message: string, after = ''): string {
  const [first, ...rest] = message.split('\n');
  if (!rest.length) return `- ${first}${after ? ` (${after})` : ''}`;
  // A fence longer than any run of backticks in the message, so that none of it ends the block.
  const fence = '`'.repeat(Math.max(3, ...(rest.join('\n').match(/`+/g) ?? []).map((run) => run.length + 1)));
  return [`- ${first}`, `  ${fence}text`, ...rest.map((line) => `  ${line}`), `  ${fence}`, ...(after ? [`  ${after}`] : [])].join('\n');
}

export function githubSummary(summary: Summary | undefined, runExitCode?: number, reportUrl?: string) {
  const exitCode = runExitCode ?? summary?.exitCode ?? 2;
  const verdict = summary && summary.exitCode === exitCode ? summary.verdict : (VERDICTS[exitCode] ?? 'error');
  const lines = [`## Conformance: ${verdict.toUpperCase()} (exit code ${exitCode})`, ''];
  if (!summary) {
    lines.push('The run ended before it wrote a summary: see the log of this step.');
  } else {
    const tests = Object.values(summary.rules).flatMap((rule) => rule.tests);
    lines.push(
      `Target: ${summary.embedded ? 'the embedded reference (a check of the kit, not of an implementation)' : `\`${summary.target}\``}` +
        ` · ${tests.length} tests in ${Object.keys(summary.rules).length} rules · strict: ${summary.strict ? 'yes' : 'no'}`,
      '',
    );
    if (verdict !== summary.verdict) lines.push(`The run exited with code ${exitCode} although its summary says ${summary.verdict}: see the log.`, '');
    lines.push('| Rule | Status | Level | Tests run |', '| --- | --- | --- | --- |');
    for (const [id, rule] of Object.entries(summary.rules)) {
      const ran = rule.tests.filter((test) => test.outcome !== 'not run').length;
      const levels = LEVELS.filter((level) => rule.tests.some((test) => test.level === level)).join(', ');
      lines.push(`| ${cell(rule.title)} (\`${id}\`) | ${ICONS[rule.status]} ${rule.status} | ${levels} | ${ran}/${rule.tests.length} |`);
    }
    const section = (title: string, items: string[]) => items.length && lines.push('', `### ${title}`, '', ...items);
    const reproduced = (test: TestRecord) => (test.reproduction ? `reproduction: \`${test.reproduction}\`${test.curl ? `; \`${test.curl}\`` : ''}` : '');
    const listed = (outcome: Outcome) =>
      tests
        .filter((test) => test.outcome === outcome)
        .map((test: TestRecord) => item(`\`${test.id}\` [@${test.level}]${test.note ? `: ${test.note}` : ''}`, reproduced(test)));
    section('Failures', listed('fail'));
    section('Known deviations', listed('known deviation'));
    section('Not verifiable', listed('not verifiable'));
    section('Errors of the run', [...summary.errors.map((error) => item(error)), ...listed('error')]);
    section(
      'Not run',
      summary.notRun.length ? [item(`${summary.notRun.length} of ${tests.length} tests: ${summary.notRun.map((id) => `\`${id}\``).join(', ')}`)] : [],
    );
    if (summary.sessionCap) section('Session cap', [item(`${summary.sessionCap.cap} live session(s) per team (${summary.sessionCap.how})`)]);
    if (summary.cost)
      section(
        'What the run spent on the target',
        describeCost(summary.cost).map((line) => item(line.trim().replace(/^COST: /, ''))),
      );
  }
  if (reportUrl) lines.push('', `Reports (Allure report, JUnit, summary): [${reportUrl}](${reportUrl})`);
  return { verdict, exitCode, markdown: `${lines.join('\n')}\n` };
}

if (require.main === module) {
  const file = process.argv[2] ?? 'reports/conformance-summary.json';
  const summary = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Summary) : undefined;
  const runExitCode = /^\d+$/.test(process.env.RUN_EXIT_CODE ?? '') ? Number(process.env.RUN_EXIT_CODE) : undefined;
  const { verdict, exitCode, markdown } = githubSummary(summary, runExitCode, process.env.REPORT_URL || undefined);
  if (process.env.GITHUB_STEP_SUMMARY) appendFileSync(process.env.GITHUB_STEP_SUMMARY, markdown);
  else console.log(markdown);
  if (process.env.GITHUB_OUTPUT) appendFileSync(process.env.GITHUB_OUTPUT, `verdict=${verdict}\nexit-code=${exitCode}\n`);
  console.log(`Conformance verdict: ${verdict} (exit code ${exitCode})`);
}
