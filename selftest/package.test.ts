/**
 * The kit where its users are: packed with `npm pack`, installed into a fresh project as a dev
 * dependency, run there with `npx stop-session-conformance`; the GitHub Action's steps run as the
 * runner would run them; the example workflow's order of jobs. The parts are independent and run
 * side by side (the install is shared).
 */

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { parse } from 'yaml';
import { entryOf, RULE_IDS, TEST_IDS } from '../src/config/rules';
import { SETTINGS_TABLE } from '../src/config/settings';
import { githubSummary } from '../src/report/github-summary';
import type { Summary } from '../src/report/verdict';
import { isolatedEnv, ROOT, runCommand } from './matrix';
import { filesContaining, SECRETS } from './secrets';

const NAME = 'stop-session-conformance';
const tempDirs: string[] = [];
const tempDir = (prefix: string) => tempDirs[tempDirs.push(mkdtempSync(path.join(os.tmpdir(), prefix))) - 1];
const readJson = <T = any>(file: string): T => JSON.parse(readFileSync(file, 'utf8'));

/** The environment of a user's shell: no developer target, and nothing of an npm that runs this test. */
function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = isolatedEnv(extra);
  for (const name of Object.keys(env)) if (/^npm_/i.test(name)) delete env[name];
  return { ...env, NPM_CONFIG_UPDATE_NOTIFIER: 'false', NPM_CONFIG_AUDIT: 'false', NPM_CONFIG_FUND: 'false' };
}

/**
 * Packs the kit and installs the tarball into a fresh project, from the npm cache only. Resolving
 * version ranges needs the registry's metadata, which the cache need not hold (`npm ci` installs
 * from the lock without it), so the project gets a lockfile first: the kit's own lock, runtime
 * packages only, which is what the registry resolves as long as the lock is current. Shared by
 * the tests below.
 */
const installed: Promise<string> = (async () => {
  const tmp = tempDir('conformance-package-');
  const packDir = path.join(tmp, 'pack');
  const project = path.join(tmp, 'project');
  mkdirSync(packDir);
  mkdirSync(project);
  const packed = await runCommand('npm', ['pack', '--silent', '--pack-destination', packDir], userEnv());
  assert.equal(packed.code, 0, packed.log);
  const tarball = readdirSync(packDir).find((file) => file.endsWith('.tgz'));
  assert.ok(tarball, `npm pack wrote no tarball:\n${packed.log}`);
  const kit = readJson(path.join(ROOT, 'package.json'));
  const lock = readJson(path.join(ROOT, 'package-lock.json'));
  const spec = `file:../pack/${tarball}`;
  // What `npm init -y` writes, less what the install ignores.
  const manifest = { name: 'project', version: '1.0.0', license: 'ISC', devDependencies: { [NAME]: spec } };
  writeFileSync(path.join(project, 'package.json'), JSON.stringify(manifest, null, 2));
  const packages: Record<string, object> = {
    '': { name: manifest.name, version: manifest.version, devDependencies: manifest.devDependencies },
    [`node_modules/${NAME}`]: {
      version: kit.version,
      resolved: spec,
      dev: true,
      license: kit.license,
      dependencies: kit.dependencies,
      bin: kit.bin,
      engines: kit.engines,
    },
  };
  for (const [where, entry] of Object.entries<{ dev?: boolean }>(lock.packages)) if (where && !entry.dev) packages[where] = { ...entry, dev: true };
  writeFileSync(
    path.join(project, 'package-lock.json'),
    JSON.stringify({ name: manifest.name, version: manifest.version, lockfileVersion: 3, requires: true, packages }, null, 2),
  );

  const install = await runCommand('npm', ['install', '--offline', '--no-audit', '--no-fund', '--save-dev', path.join(packDir, tarball)], userEnv(), project);
  assert.equal(
    install.code,
    0,
    `${install.log}\n${/ENOTCACHED/.test(install.log) ? 'The npm cache lacks a package of the lock, or its metadata: `npm ci` in the repository, or `npm cache add <name>@<version>`, fetches it.' : ''}`,
  );
  assert.ok(existsSync(path.join(project, 'node_modules', '.bin', NAME)), 'the command is installed');
  return project;
})();
installed.catch(() => {}); // reported by the tests that await it

const npx = async (project: string, args: string[], env: Record<string, string> = {}) => runCommand('npx', [NAME, ...args], userEnv(env), project);

/** Runs GitHub's composite action in action.yml as the runner would (see runAction). */
interface ActionRun {
  steps: { id?: string; name: string; ran: boolean; code?: number; log: string }[];
  outputs: Record<string, string>;
  summary: string;
}

/**
 * Runs the action's `run:` steps with bash as GitHub does (`bash --noprofile --norc -eo pipefail`),
 * after substituting the `${{ }}` expressions it uses: inputs (with their defaults), github.* values
 * defined here, and the outputs of earlier steps. Each step gets its own GITHUB_OUTPUT and
 * GITHUB_STEP_SUMMARY files. `uses:` steps (upload-artifact) are skipped: their outputs are empty.
 * A step runs when every earlier step succeeded, or when it says `if: always()`. `stepEnv` is the
 * calling step's `env:`, which every step of a composite action inherits, under its own `env:`.
 */
async function runAction(actionPath: string, workspace: string, given: Record<string, string>, stepEnv: Record<string, string> = {}): Promise<ActionRun> {
  const action = parse(readFileSync(path.join(actionPath, 'action.yml'), 'utf8'));
  assert.equal(action.runs.using, 'composite');
  for (const name of Object.keys(given)) assert.ok(name in action.inputs, `action.yml has no input ${name}`);
  const inputs: Record<string, string> = Object.fromEntries(
    Object.entries<{ default?: string }>(action.inputs).map(([name, input]) => [name, String(given[name] ?? input.default ?? '')]),
  );
  const github: Record<string, string> = {
    action_path: actionPath,
    workspace,
    server_url: 'https://github.example',
    repository: 'someone/implementation',
    run_id: '4242',
  };
  const stepOutputs: Record<string, Record<string, string>> = {};
  const evaluate = (text: string) =>
    String(text).replace(/\$\{\{\s*(.+?)\s*\}\}/g, (_, expression: string) => {
      let match: RegExpMatchArray | null;
      if ((match = expression.match(/^inputs\.([\w-]+)$/))) return inputs[match[1]] ?? assert.fail(`unknown input in ${expression}`);
      if ((match = expression.match(/^github\.(\w+)$/))) return github[match[1]] ?? assert.fail(`no github.${match[1]} in the simulation`);
      if ((match = expression.match(/^steps\.([\w-]+)\.outputs\.([\w-]+)$/))) return stepOutputs[match[1]]?.[match[2]] ?? '';
      return assert.fail(`an expression the simulation does not evaluate: ${expression}`);
    });
  const run: ActionRun = { steps: [], outputs: {}, summary: '' };
  const scratch = tempDir('conformance-action-');
  let failed = false;
  for (const [index, step] of (action.runs.steps as any[]).entries()) {
    const name = step.name ?? step.id ?? `step ${index + 1}`;
    assert.ok(step.if === undefined || step.if === 'always()', `${name}: a condition the simulation does not evaluate: ${step.if}`);
    // The kit's dependencies are those of the repository, already installed: `npm ci` is skipped to keep this fast.
    const skip = step.uses !== undefined || (failed && step.if !== 'always()') || (step.id === 'install' && existsSync(path.join(actionPath, 'node_modules')));
    if (skip) {
      run.steps.push({ id: step.id, name, ran: false, log: '' });
      continue;
    }
    assert.equal(step.shell, 'bash', `${name}: every run step needs shell: bash`);
    const files = {
      output: path.join(scratch, `output-${index}`),
      summary: path.join(scratch, `summary-${index}`),
      script: path.join(scratch, `step-${index}.sh`),
    };
    for (const file of [files.output, files.summary]) writeFileSync(file, '');
    writeFileSync(files.script, evaluate(step.run));
    const env = userEnv({
      ...stepEnv,
      ...Object.fromEntries(Object.entries<string>(step.env ?? {}).map(([key, value]) => [key, evaluate(value)])),
      CI: 'true',
      GITHUB_ACTIONS: 'true',
      GITHUB_ACTION_PATH: actionPath,
      GITHUB_WORKSPACE: workspace,
      GITHUB_SERVER_URL: github.server_url,
      GITHUB_REPOSITORY: github.repository,
      GITHUB_RUN_ID: github.run_id,
      GITHUB_OUTPUT: files.output,
      GITHUB_STEP_SUMMARY: files.summary,
    });
    const cwd = path.resolve(workspace, evaluate(step['working-directory'] ?? '.'));
    const { code, log } = await runCommand('bash', ['--noprofile', '--norc', '-eo', 'pipefail', files.script], env, cwd);
    stepOutputs[step.id ?? `#${index}`] = Object.fromEntries(
      readFileSync(files.output, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    run.summary += readFileSync(files.summary, 'utf8');
    run.steps.push({ id: step.id, name, ran: true, code, log });
    if (code !== 0) failed = true;
  }
  run.outputs = Object.fromEntries(Object.entries<{ value: string }>(action.outputs).map(([name, output]) => [name, evaluate(output.value)]));
  return run;
}

const logOf = (run: ActionRun) => run.steps.map((step) => `--- ${step.name} (${step.ran ? `exit ${step.code}` : 'skipped'})\n${step.log}`).join('\n');
const stepNamed = (run: ActionRun, pattern: RegExp) => run.steps.find((step) => pattern.test(step.name))!;

/** The Allure report's embedded data: the single-file page declares each data file as d(name, base64). */
function reportData(file: string): Map<string, any> {
  const data = new Map<string, any>();
  for (const [, name, value] of readFileSync(file, 'utf8').matchAll(/\bd\("([^"]+)","([^"]*)"\)/g)) {
    if (name.endsWith('.json')) data.set(name, JSON.parse(Buffer.from(value, 'base64').toString('utf8')));
  }
  return data;
}

describe('the kit as a package and as a GitHub Action', { concurrency: true }, () => {
  // The installed project alone weighs some 150 MB.
  after(() => {
    for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  });

  test('installed with npm, `npx stop-session-conformance` passes the embedded reference, writes its reports in the project, and a second run keeps the Allure history', async () => {
    const project = await installed;
    const reports = path.join(project, 'reports');
    const first = await npx(project, []);
    assert.equal(first.code, 0, first.log.slice(-3000));
    const summary = readJson<Summary>(path.join(reports, 'conformance-summary.json'));
    assert.equal(summary.verdict, 'pass');
    assert.deepEqual(Object.keys(summary.rules), RULE_IDS);
    assert.deepEqual(
      new Set(Object.values(summary.rules).map((rule) => rule.status)),
      new Set(['pass']),
      JSON.stringify(
        Object.values(summary.rules)
          .flatMap((rule) => rule.tests)
          .filter((t) => t.outcome !== 'pass'),
      ),
    );
    assert.equal(readFileSync(path.join(reports, 'junit.xml'), 'utf8').match(/<testcase /g)?.length, TEST_IDS.length, 'one JUnit test case per test');
    assert.ok(existsSync(path.join(reports, 'allure-report', 'index.html')), 'the Allure report');
    assert.ok(!existsSync(path.join(project, 'node_modules', NAME, 'reports')), 'nothing is written inside the installed package');
    assert.deepEqual(filesContaining(reports), [], 'keys in the reports');

    // The second run into the same folder: one rule, and a known-deviations file named relative to the project.
    mkdirSync(path.join(project, 'conformance'));
    writeFileSync(path.join(project, 'conformance', 'deviations.json'), JSON.stringify({ deviations: [] }));
    const second = await npx(project, ['--rule', 'owner-stop', '--known-deviations', 'conformance/deviations.json']);
    assert.equal(second.code, 3, `one rule of ${RULE_IDS.length} is an incomplete run:\n${second.log.slice(-3000)}`);
    const runs = readFileSync(path.join(reports, 'allure-history.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    assert.equal(runs.length, 2, 'allure-history.jsonl holds both runs');
    const data = reportData(path.join(reports, 'allure-report', 'index.html'));
    const result = [...data.entries()].find(
      ([name, tr]) => name.startsWith('data/test-results/') && tr.labels?.some((l: any) => l.name === 'testId' && l.value === 'owner-stop/answers-200'),
    )?.[1];
    assert.ok(result, 'the second report holds owner-stop/answers-200');
    const earlier = runs[0].testResults[result.historyId];
    assert.ok(earlier, 'the first run recorded the test under the same history id');
    assert.ok(earlier.labels.some((l: any) => l.name === 'testId' && l.value === 'owner-stop/answers-200'));
    assert.deepEqual(
      result.history.map((item: any) => [item.id, item.status]),
      [[earlier.id, 'passed']],
      "the second report shows the first run in the test's history",
    );
    assert.ok(data.has(`data/history/${runs[0].uuid}.json`), 'the second report embeds the first run as a history point');
    const dynamics = Object.values<any>(data.get('widgets/charts.json').general).find((chart) => chart.type === 'statusDynamics');
    assert.ok(
      dynamics?.data.some((point: any) => point.id === runs[0].uuid),
      'the trend chart shows the first run',
    );
  });

  test('a bad setting exits 2 with one message and runs no test', async () => {
    const project = await installed;
    const cases = [
      [['--base-url', 'not-a-url'], {}, /BASE_URL is not a valid URL/],
      [[], { BURST_REQUESTS: 'many' }, /BURST_REQUESTS must be an integer/],
    ] as const;
    await Promise.all(
      cases.map(async ([args, env, problem], index) => {
        const reports = `bad-reports-${index}`;
        const run = await npx(project, [...args, '--reports', reports], env);
        assert.equal(run.code, 2, run.log);
        assert.match(run.log, problem);
        assert.equal(run.log.match(/Configuration error/g)?.length, 1, `one message:\n${run.log}`);
        assert.doesNotMatch(run.log, /Running \d+ test|passed|failed/, 'no test ran');
        assert.ok(!existsSync(path.join(project, reports)), 'no reports');
      }),
    );
  });

  test('--help lists every setting with its default', async () => {
    const project = await installed;
    const help = await npx(project, ['--help']);
    assert.equal(help.code, 0, help.log);
    for (const setting of SETTINGS_TABLE) {
      const line = help.log.split('\n').find((text) => text.trimStart().startsWith(`${setting.env} `));
      assert.ok(line, `--help lists ${setting.env}`);
      if (setting.flag) assert.ok(line.includes(setting.flag), `--help gives the flag of ${setting.env}`);
      assert.ok(line.includes(`Default: ${setting.default}.`), `--help gives the default of ${setting.env}: ${line}`);
    }
  });

  test('`npx stop-session-conformance reference` serves the reference', async () => {
    const project = await installed;
    // Its own process group, so that the signal reaches npx and the server it started.
    const child = spawn('npx', [NAME, 'reference', '--port', '0'], { cwd: project, env: userEnv(), detached: true });
    let log = '';
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the reference did not start:\n${log}`)), 30_000);
        const onData = (chunk: Buffer) => {
          log += chunk;
          const match = log.match(/listening on (http:\/\/\S+)/);
          if (match) clearTimeout(timer), resolve(match[1]);
        };
        child.stdout.on('data', onData);
        child.stderr.on('data', onData);
        child.on('close', () => reject(new Error(`the reference exited:\n${log}`)));
      });
      const answer = await fetch(`${url}/v2/scrape/00000000-0000-4000-8000-000000000000/interact`, {
        method: 'DELETE',
        headers: { Authorization: `Bearer ${SECRETS[0]}` },
      });
      assert.equal(answer.status, 404, 'a stop of an unknown job is a 404');
      assert.equal((await answer.json()).success, false);
    } finally {
      process.kill(-child.pid!, 'SIGTERM');
      await exited;
    }
  });

  test('the action, run as GitHub runs it with 2 shards: the burst runs alone after the shards, the job summary has a row per rule, the verdict is an output', async () => {
    const workspace = tempDir('conformance-workspace-');
    mkdirSync(path.join(workspace, 'implementation'));
    const run = await runAction(ROOT, workspace, { shards: '2', 'working-directory': 'implementation' });
    const log = logOf(run);
    assert.deepEqual(
      run.steps.filter((step) => step.ran).map((step) => step.code),
      run.steps.filter((step) => step.ran).map(() => 0),
      log.slice(-5000),
    );
    assert.equal(run.outputs.verdict, 'pass', log.slice(-3000));
    assert.equal(run.outputs['exit-code'], '0');
    const reports = path.join(workspace, 'implementation', 'reports');
    assert.equal(run.outputs['reports-dir'], reports);
    assert.ok(stepNamed(run, /upload/i).ran === false && stepNamed(run, /gate/i).ran, 'upload is skipped here; the gate ran');

    // Shards: every rule but rate-limit; then rate-limit alone, started once every shard had ended.
    const shards = [1, 2].map((i) => readJson<Summary>(path.join(reports, `shard-${i}`, 'conformance-summary.json')));
    const burst = readJson<Summary>(path.join(reports, 'rate-limit', 'conformance-summary.json'));
    for (const shard of shards) assert.equal(shard.rules['rate-limit'].status, 'not run');
    assert.deepEqual(
      new Set(shards.flatMap((shard) => Object.values(shard.rules).flatMap((rule) => rule.tests.filter((t) => t.outcome !== 'not run').map((t) => t.id)))),
      new Set(TEST_IDS.filter((id) => !id.startsWith('rate-limit/'))),
    );
    assert.deepEqual(
      Object.values(burst.rules).flatMap((rule) => rule.tests.filter((t) => t.outcome !== 'not run').map((t) => t.id)),
      TEST_IDS.filter((id) => id.startsWith('rate-limit/')),
    );
    const times = (folder: string) =>
      readdirSync(path.join(reports, folder, 'allure-results'))
        .filter((f) => f.endsWith('-result.json'))
        .map((f) => readJson(path.join(reports, folder, 'allure-results', f)));
    const shardsEnd = Math.max(...['shard-1', 'shard-2'].flatMap(times).map((r) => r.stop));
    const burstStart = Math.min(...times('rate-limit').map((r) => r.start));
    assert.ok(burstStart >= shardsEnd, `the burst started ${shardsEnd - burstStart} ms before the shards ended`);

    // The merged verdict, one Allure report of every results folder, and the job summary.
    const merged = readJson<Summary>(path.join(reports, 'conformance-summary.json'));
    assert.equal(merged.verdict, 'pass');
    assert.equal(merged.notRun.length, 0);
    const report = reportData(path.join(reports, 'allure-report', 'index.html'));
    // Every test of every shard; the account check, a teardown of each shard's run (its own embedded reference, its own account), once a shard.
    const results = [...report]
      .filter(([name]) => name.startsWith('data/test-results/'))
      .map(([, result]) => result.labels?.find((l: { name: string }) => l.name === 'testId')?.value);
    assert.deepEqual([...new Set(results)].sort(), [...TEST_IDS].sort(), 'the Allure report holds every test of every shard');
    assert.equal(
      results.length,
      TEST_IDS.length + TEST_IDS.filter((id) => entryOf(id).runWide).length,
      'each test once, those that judge the whole run once in each of the 2 shards',
    );
    assert.equal(readFileSync(path.join(reports, 'allure-history.jsonl'), 'utf8').trim().split('\n').length, 1, 'the run is in the history beside the reports');
    const rows = run.summary.split('\n').filter((line) => /^\| .*\(`[\w-]+`\) \|/.test(line));
    assert.deepEqual(
      rows.map((row) => row.match(/\(`([\w-]+)`\)/)![1]),
      RULE_IDS,
      'one row per rule',
    );
    // A busy runner may leave a refusal's proof not verifiable ("the exchanges took too long to tell"): an honest outcome, and the row says so.
    const slowOnly = (rule: string) =>
      merged.rules[rule as keyof typeof merged.rules].tests.every(
        (t) => t.outcome === 'pass' || (t.outcome === 'not verifiable' && /took too long to tell/.test(t.note ?? '')),
      );
    for (const row of rows)
      assert.match(
        row,
        slowOnly(row.match(/\(`([\w-]+)`\)/)![1])
          ? /\| (✅ pass|❔ not verifiable) \| (must|should|inferred)(, (must|should|inferred))* \| (?<ran>\d+)\/\k<ran> \|$/
          : /\| ✅ pass \| (must|should|inferred)(, (must|should|inferred))* \| (?<ran>\d+)\/\k<ran> \|$/,
      );
    assert.match(run.summary, /## Conformance: PASS \(exit code 0\)/);
    assert.match(
      run.summary,
      /### What the run spent on the target\n\n- \d+ session\(s\) created and \d+ scrape\(s\), by every team the run used; [\d.]+ credit\(s\) billed/,
    );
    assert.match(run.summary, /embedded reference/);
    assert.match(run.summary, /\(https:\/\/github\.example\/someone\/implementation\/actions\/runs\/4242\)/, 'a link to the run and its artifact');
  });

  test('the action with a bad target: keys stay out of commands and reports, the verdict is error, and the last step fails the job', async () => {
    const workspace = tempDir('conformance-workspace-');
    const run = await runAction(ROOT, workspace, {
      'base-url': 'not-a-url',
      'api-key': SECRETS[0],
      'foreign-api-key': SECRETS[1],
      'burst-api-key': SECRETS[2],
    });
    const log = logOf(run);
    assert.equal(run.outputs.verdict, 'error', log);
    assert.equal(run.outputs['exit-code'], '2');
    assert.equal(stepNamed(run, /gate/i).code, 1, 'the gate fails the job');
    assert.match(stepNamed(run, /run/i).log, /BASE_URL is not a valid URL/);
    assert.match(run.summary, /## Conformance: ERROR \(exit code 2\)/);
    // The runner masks the keys it is told of: the only lines that hold one are those commands.
    assert.deepEqual(
      filesContaining(
        log
          .split('\n')
          .filter((line) => !line.startsWith('::add-mask::'))
          .join('\n'),
      ),
      [],
      'keys in the output',
    );
    assert.deepEqual(filesContaining(run.summary), [], 'keys in the job summary');
    assert.deepEqual(filesContaining(workspace), [], 'keys in the reports');
    const action = readFileSync(path.join(ROOT, 'action.yml'), 'utf8');
    assert.doesNotMatch(
      action.replace(/^\s+IN_(API_KEY|FOREIGN_API_KEY|BURST_API_KEY): \$\{\{ inputs\.(api-key|foreign-api-key|burst-api-key) \}\}$/gm, ''),
      /inputs\.(api-key|foreign-api-key|burst-api-key)/,
      'keys reach the suite through env only',
    );
  });

  test("the action's inputs reach the run as their variables and flags; an empty one leaves the variable to the step's env:, which passes every other setting through", async () => {
    const workspace = tempDir('conformance-workspace-');
    // Values the settings refuse, so that the run names each as it received it and stops before any test.
    const given = {
      'session-cap': '0',
      'account-check': 'maybe',
      strict: 'perhaps',
      'session-budget': 'some',
      'credit-budget': 'lots',
      rules: 'no-such-rule,',
      'skip-rules': 'no-rule-to-skip',
    };
    const run = await runAction(ROOT, workspace, given, { SESSION_CAP: '7', RATE_LIMIT: 'plenty', SEQUENCE_BUDGET: 'x' });
    const log = stepNamed(run, /run the conformance suite/i).log;
    assert.equal(run.outputs['exit-code'], '2', logOf(run));
    assert.equal(log.match(/Configuration error/g)?.length, 1, log);
    assert.match(log, /SESSION_CAP must be an integer of at least 1 \(got "0"\)/, 'an input that is set wins over the env');
    assert.match(log, /RATE_LIMIT must be .* \(got "plenty"\)/, "an empty input leaves the step's env");
    assert.match(log, /SEQUENCE_BUDGET must be an integer of at least 10 \(got "x"\)/, 'a setting without an input comes from the env');
    assert.match(log, /ACCOUNT_CHECK must be 1 or 0 \(got "maybe"\)/);
    assert.match(log, /STRICT must be 1 or 0 \(got "perhaps"\)/);
    assert.match(log, /SESSION_BUDGET [^\n]*"some"/);
    assert.match(log, /CREDIT_BUDGET [^\n]*"lots"/);
    assert.match(log, /no rule has the id no-such-rule, no-rule-to-skip/);

    // rules and grep select the tests: unknown-job's @must tests alone, an incomplete run.
    const selected = await runAction(ROOT, tempDir('conformance-workspace-'), { rules: 'unknown-job', grep: '@must' });
    assert.equal(selected.outputs['exit-code'], '3', logOf(selected));
    const summary = readJson<Summary>(path.join(selected.outputs['reports-dir'], 'conformance-summary.json'));
    const ran = Object.values(summary.rules).flatMap((rule) => rule.tests.filter((t) => t.outcome !== 'not run').map((t) => t.id));
    assert.deepEqual(ran.sort(), ['unknown-job/job-without-session', 'unknown-job/random-uuid']);
  });

  test('the job summary lists failures, known deviations with their reasons, errors of the run and tests not run; a worse exit code of the run wins', () => {
    const rule = (status: string, tests: object[]) => ({ title: `Rule | ${status}`, status, tests });
    const summary = {
      verdict: 'fail',
      exitCode: 1,
      target: 'https://api.example',
      embedded: false,
      strict: false,
      durationMs: 1,
      errors: ['the teardown could not stop 1 session'],
      notRun: ['owner-stop/answers-200'],
      rules: {
        'owner-stop': rule('not run', [{ id: 'owner-stop/answers-200', level: 'must', outcome: 'not run' }]),
        billing: rule('fail', [
          { id: 'billing/long-hold', level: 'must', outcome: 'fail', note: 'creditsBilled 2 must be 0.125' },
          { id: 'billing/short-hold', level: 'must', outcome: 'known deviation', note: 'credits: whole-credit billing' },
        ]),
        'unknown-job': rule('error', [{ id: 'unknown-job/random-uuid', level: 'should', outcome: 'error', note: 'no complete answer within 1000 ms' }]),
      },
    } as unknown as Summary;
    const { verdict, exitCode, markdown } = githubSummary(summary, undefined, 'https://reports.example');
    assert.deepEqual([verdict, exitCode], ['fail', 1]);
    assert.match(markdown, /\| Rule \\\| fail \(`billing`\) \| ❌ fail \| must \| 2\/2 \|/);
    assert.match(markdown, /### Failures\n\n- `billing\/long-hold` \[@must\]: creditsBilled 2 must be 0\.125/);
    assert.match(markdown, /### Known deviations\n\n- `billing\/short-hold` \[@must\]: credits: whole-credit billing/);
    assert.match(markdown, /### Errors of the run\n\n- the teardown could not stop 1 session\n- `unknown-job\/random-uuid` \[@should\]: no complete answer/);
    assert.match(markdown, /### Not run\n\n- 1 of 4 tests: `owner-stop\/answers-200`/);
    assert.match(markdown, /\(https:\/\/reports\.example\)/);
    const passedThenError = githubSummary({ ...summary, verdict: 'pass', exitCode: 0 }, 2);
    assert.deepEqual([passedThenError.verdict, passedThenError.exitCode], ['error', 2]);
    assert.deepEqual([githubSummary(undefined).verdict, githubSummary(undefined).exitCode], ['error', 2]);
  });

  test('the example workflow runs the shards without rate-limit, then the burst alone, then merges, keeps the Allure history and publishes on Pages', () => {
    const workflow = parse(readFileSync(path.join(ROOT, '.github', 'workflows', 'conformance.yml'), 'utf8'));
    const scripts = readJson(path.join(ROOT, 'package.json')).scripts;
    const jobs = Object.entries<any>(workflow.jobs);
    const runs = (job: any) => job.steps.map((step: any) => step.run ?? '').join('\n');
    const uses = (job: any) => job.steps.map((step: any) => step.uses ?? '').join('\n');
    const needs = (job: any) => [job.needs ?? []].flat();
    for (const [, job] of jobs)
      for (const [, script] of runs(job).matchAll(/npm run (\S+)/g)) assert.ok(script in scripts, `npm run ${script} is a script of package.json`);
    const [shardName, shard] = jobs.find(([, job]) => /--skip-rule rate-limit/.test(runs(job)))!;
    assert.match(runs(shard), /--shard[= ]\$\{\{ matrix\.shard \}\}\//);
    assert.ok(shard.strategy.matrix.shard.length > 1);
    const [burstName, burst] = jobs.find(([, job]) => /--rule rate-limit/.test(runs(job)))!;
    assert.ok(needs(burst).includes(shardName), 'the burst runs after the shards');
    assert.ok(!burst.strategy, 'the burst runs in one job');
    const [reportName, report] = jobs.find(([, job]) => /npm run verdict --/.test(runs(job)))!;
    assert.ok(needs(report).includes(shardName) && needs(report).includes(burstName));
    assert.match(JSON.stringify(report.steps), /allure-history\.jsonl/, 'the history is restored and saved');
    assert.match(uses(report), /actions\/upload-pages-artifact@/);
    const [, publish] = jobs.find(([, job]) => /actions\/deploy-pages@/.test(uses(job)))!;
    assert.ok(needs(publish).includes(reportName));
    assert.deepEqual([publish.permissions?.pages, publish.permissions?.['id-token']], ['write', 'write']);
    assert.equal(publish.environment?.name, 'github-pages');
    // After a red run, whatever its outcome, every job that ran the suite keeps what a person needs, and none runs unbounded.
    const kept = (job: any) =>
      job.steps
        .filter((step: any) => /actions\/upload-artifact@/.test(step.uses ?? '') && step.if === 'always()')
        .map((step: any) => step.with.path)
        .join('\n');
    for (const job of [shard, burst])
      for (const file of ['conformance-summary.json', 'junit.xml', 'allure-results', 'reproductions', 'ledger.jsonl'])
        assert.match(kept(job), new RegExp(`reports/${file}`), file);
    for (const file of ['conformance-summary.json', 'allure-report', 'allure-history.jsonl', 'reproductions'])
      assert.match(kept(report), new RegExp(`reports/${file}`), file);
    for (const [name, job] of jobs) assert.ok(job['timeout-minutes'] > 0, `${name} has a time limit`);
  });
});
