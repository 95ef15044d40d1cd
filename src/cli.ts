/**
 * The kit's command (`npx stop-session-conformance`, or `npm run conformance` in a clone).
 *
 *   [run] [options] [-- <playwright options>]   run the suite, write the reports, exit with the verdict
 *   reference [--port N]                         serve the reference implementation
 *   cleanup                                      stop the sessions a killed run left in the ledger
 *   verdict <summary.json...>                    merge the summaries of shards into one verdict
 *   replay [reports folder] [--any-target]       run a run's reproductions again: FIXED, STILL FAILING, COULD NOT TELL
 *
 * Exit codes: 0 pass, 1 fail, 2 error of the run or of the configuration, 3 incomplete.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { RULE_IDS, RULES, type RuleId } from './config/rules';
import { BUDGET_FOLDER_VARIABLE, ConfigurationError, loadSettings, SELECTED_RULES_VARIABLE, SETTINGS_TABLE, type Settings } from './config/settings';
import { channel, removeRunFolder, reportsFolderInUse } from './coordination/run-folder';
import { describePrediction, predict } from './domain/budget';
import { stopOpenSessions } from './domain/cleanup';
import { Ledger, ledgerFile } from './domain/ledger';
import { TEAMS_FILE } from './domain/target';
import { COMMAND_PIPE_VARIABLE, endingFile } from './playwright/global-setup';
import { replay, reproductionsIn } from './replay';
import { buildAllureReport } from './report/allure-report';
import { EXIT_CODES, mergeSummaries, renderSummary, type Summary } from './report/verdict';
import { REPRODUCTIONS } from './reproduction/plan';
import { ledgerFiles, runShards, SHARD_FOLDERS, shardFolders } from './shards';

const ROOT = path.join(__dirname, '..');
const NAME = 'stop-session-conformance';
/** When the command began, for the line that says where its time went. */
const COMMAND_STARTED = Date.now();
/** Where earlier versions of the kit kept the run's channels, inside the reports folder. */
const OLD_CHANNELS = ['.limits', '.backoff', '.quiet', '.sessions', '.cost', '.account', '.hang', '.ending', '.run.lock'];

function help(): string {
  const width = Math.max(...SETTINGS_TABLE.map((s) => s.env.length + (s.flag ? s.flag.length + 3 : 0)));
  const settings = SETTINGS_TABLE.map((s) => `  ${`${s.env}${s.flag ? ` / ${s.flag}` : ''}`.padEnd(width + 2)} ${s.meaning} Default: ${s.default}.`);
  return [
    `Usage: ${NAME} [run] [options] [-- <playwright test options>]`,
    `       ${NAME} reference [--port <port>]       serve the reference implementation (default port 3002)`,
    `       ${NAME} cleanup                         stop the sessions a killed run left in <reports>/ledger.jsonl`,
    `       ${NAME} verdict <summary.json...>       merge the summaries of shards into one verdict`,
    `       ${NAME} replay [folder] [--any-target]  run the reproductions of a run's failures against the target configured now (--any-target: even if they were made against another)`,
    '',
    'Options of run (each also read from its environment variable, or from .env):',
    '  --grep <regexp>, --grep-invert <regexp>, --shard <i/n>   passed to Playwright',
    '  --shards <n>                        n runs side by side (every rule but rate-limit), then rate-limit alone; one verdict and one report',
    '  --no-allure                         skip the Allure HTML report (its results are still written)',
    '  --dry-run                           print what the run would spend at most (sessions, scrapes, credits, requests) and exit 0, sending nothing',
    `  --rule <id>, --skip-rule <id>       run only, or all but, these rules (${RULE_IDS.join(', ')})`,
    '  -h, --help                          this text',
    '',
    'Settings (environment variable / flag, meaning, default). Keys are read from the environment only, never from flags:',
    ...settings,
    '',
    'Exit codes: 0 pass, 1 fail, 2 error of the run or the configuration, 3 incomplete (some tests did not run).',
  ].join('\n');
}

/** One message listing every problem, and exit code 2. */
function configurationError(problems: string | string[]): number {
  console.error(new ConfigurationError([problems].flat()).message);
  return 2;
}

/**
 * Reads the settings as the run will (flags first become their environment variables); their
 * problems join those of the flags, so that one message lists them all.
 */
function settingsWith(env: Record<string, string | undefined>, problems: string[]): Settings | undefined {
  for (const [name, value] of Object.entries(env)) if (value !== undefined) process.env[name] = value;
  try {
    return loadSettings();
  } catch (error) {
    if (!(error instanceof ConfigurationError)) throw error;
    problems.push(...error.problems);
    return undefined;
  }
}

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * A command's flags, read without stopping at the first problem, so that one message lists them
 * all. A value given with a flag is never repeated: it may be a key. An unknown flag's value reads
 * as an argument, so commands check their arguments only once the flags read well.
 */
function readFlags<T extends Options>(argv: string[], options: T) {
  const { values, positionals, tokens } = parseArgs({ args: argv, options, strict: false, allowPositionals: true, tokens: true });
  const problems: string[] = [];
  const keyFlags: string[] = [];
  for (const token of tokens) {
    if (token.kind !== 'option') continue;
    const known = options[token.name];
    if (!known && /key/i.test(token.name)) keyFlags.push(token.rawName);
    else if (!known) problems.push(unknownFlag(token.name, token.rawName, Object.keys(options)));
    else if (known.type === 'string' && token.value === undefined) problems.push(`${token.rawName} needs a value`);
    else if (known.type === 'boolean' && token.inlineValue) problems.push(`${token.rawName} takes no value`);
    else continue;
    delete values[token.name];
  }
  if (keyFlags.length)
    problems.push(
      `${[...new Set(keyFlags)].join(', ')}: keys are read from the environment only (API_KEY, FOREIGN_API_KEY, BURST_API_KEY, or .env), never from flags`,
    );
  return { values: values as ReturnType<typeof parseArgs<{ options: T; allowPositionals: true }>>['values'], positionals, problems };
}

function unknownFlag(name: string, rawName: string, known: string[]): string {
  const [nearest] = [...known, 'help'].map((option) => ({ option, edits: distance(name.toLowerCase(), option) })).sort((a, b) => a.edits - b.edits);
  // Only when close: about one edit in three characters.
  return nearest && nearest.edits <= Math.max(1, Math.floor(name.length / 3))
    ? `unknown option ${rawName}; did you mean --${nearest.option}?`
    : `unknown option ${rawName}: see --help`;
}

/** Edits from one word to another: a character inserted, deleted or replaced, or two neighbours swapped. */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (__, j) => (i && j ? 0 : i + j)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

const RUN_OPTIONS = {
  'base-url': { type: 'string' },
  'known-deviations': { type: 'string' },
  strict: { type: 'boolean' },
  reports: { type: 'string' },
  grep: { type: 'string' },
  'grep-invert': { type: 'string' },
  shard: { type: 'string' },
  shards: { type: 'string' },
  'no-allure': { type: 'boolean' },
  'dry-run': { type: 'boolean' },
  'session-budget': { type: 'string' },
  'credit-budget': { type: 'string' },
  rule: { type: 'string', multiple: true },
  'skip-rule': { type: 'string', multiple: true },
} as const;

type RunValues = ReturnType<typeof readFlags<typeof RUN_OPTIONS>>['values'];

async function run(argv: string[]): Promise<number> {
  const { values, positionals, problems } = readFlags(argv, RUN_OPTIONS);
  const unknownRules = [...(values.rule ?? []), ...(values['skip-rule'] ?? [])].filter((id) => !RULE_IDS.includes(id as RuleId));
  if (unknownRules.length) problems.push(`no rule has the id ${unknownRules.join(', ')}; the rules are ${RULE_IDS.join(', ')}`);
  if (values.shard && !/^\d+\/\d+$/.test(values.shard)) problems.push(`--shard must look like 1/3 (got "${values.shard}")`);
  const shards = Number(values.shards ?? 1);
  if (!Number.isInteger(shards) || shards < 1 || shards > 16) problems.push(`--shards must be a whole number from 1 to 16 (got "${values.shards}")`);
  if (shards > 1 && values.shard) problems.push('--shards runs every shard itself: leave --shard out');
  // The rules chosen are part of the settings: they decide what the run will spend.
  if (selectedRules(values).length) process.env[SELECTED_RULES_VARIABLE] = selectedRules(values).join(',');
  else delete process.env[SELECTED_RULES_VARIABLE];
  const settings = settingsWith(
    {
      BASE_URL: values['base-url'],
      KNOWN_DEVIATIONS: values['known-deviations'],
      STRICT: values.strict ? '1' : undefined,
      REPORTS_DIR: values.reports && path.resolve(values.reports),
      SESSION_BUDGET: values['session-budget'],
      CREDIT_BUDGET: values['credit-budget'],
    },
    problems,
  );
  if (!settings || problems.length) return configurationError(problems);
  console.log(describePrediction(predict(settings), settings));
  // A dry run says what the run would spend, and sends nothing.
  if (values['dry-run']) return 0;
  // Checked here too: the ledger of a folder another run writes to is that run's, not leftovers.
  const busy = reportsFolderInUse(settings.reportsDir);
  if (busy) return configurationError(busy);
  // The shards of an earlier run are deleted below: not while their ledgers hold sessions that may still run.
  const leftInShards = shardFolders(settings.reportsDir)
    .flatMap((folder) => ledgerFiles(folder))
    .flatMap((file) => new Ledger(file).open().filter((entry) => !entry.embedded));
  if (leftInShards.length)
    return configurationError(
      `the shards of an earlier run left ${leftInShards.length} session(s) open in their ledgers under ${settings.reportsDir}: run \`${NAME} cleanup\` first`,
    );
  process.env.REPORTS_DIR = settings.reportsDir;
  if (settings.knownDeviationsFile) process.env.KNOWN_DEVIATIONS = settings.knownDeviationsFile;
  // What an earlier run wrote, and the channels earlier versions of the kit kept in the reports folder.
  for (const stale of [
    'allure-results',
    'allure-report',
    'test-results',
    'junit.xml',
    'conformance-summary.json',
    'rate-limit',
    REPRODUCTIONS,
    ...SHARD_FOLDERS,
    ...OLD_CHANNELS,
  ]) {
    rmSync(path.join(settings.reportsDir, stale), { recursive: true, force: true });
  }
  if (shards > 1) {
    const common = [
      ...(values['base-url'] ? ['--base-url', values['base-url']] : []),
      ...(settings.knownDeviationsFile ? ['--known-deviations', settings.knownDeviationsFile] : []),
      ...(values.strict ? ['--strict'] : []),
      // The session budget is the whole run's: the shards and the burst's run after them take from one folder.
      '--session-budget',
      String(predict(settings).budget),
      ...(values.grep ? ['--grep', values.grep] : []),
      ...(values['grep-invert'] ? ['--grep-invert', values['grep-invert']] : []),
    ];
    const shared = path.join(channel(settings.reportsDir, 'budget'), 'shards');
    rmSync(shared, { recursive: true, force: true });
    Object.assign(process.env, { [BUDGET_FOLDER_VARIABLE]: shared, CREDIT_BUDGET: '' });
    const code = await runShards(shards, common, selectedRules(values), positionals, settings);
    rmSync(shared, { recursive: true, force: true });
    nextStep(settings.reportsDir);
    return code;
  }
  const signalled = await runPlaywright(playwrightArguments(values, positionals), settings);
  const ended = Date.now();
  try {
    const code = await finish(settings, signalled, !values['no-allure']);
    console.log(phases(settings.reportsDir, ended));
    nextStep(settings.reportsDir);
    return code;
  } finally {
    removeRunFolder(settings.reportsDir);
  }
}

/** After a run that left reproductions: how to run them again once the target is fixed. */
function nextStep(reportsDir: string): void {
  if (!reproductionsIn(reportsDir).length) return;
  const folder =
    reportsDir === path.resolve('reports')
      ? ''
      : ` ${path.relative(process.cwd(), reportsDir).startsWith('..') ? reportsDir : path.relative(process.cwd(), reportsDir)}`;
  console.log(
    `After a fix: npx ${NAME} replay${folder} (npm run replay${folder && ` --${folder}`} in a clone) runs these reproductions again against the target configured now.`,
  );
}

/** The rules --rule and --skip-rule select; empty for all. */
function selectedRules(values: RunValues): RuleId[] {
  const skipped = values['skip-rule'] ?? [];
  return values.rule?.length ? (values.rule as RuleId[]) : skipped.length ? RULE_IDS.filter((id) => !skipped.includes(id)) : [];
}

function playwrightArguments(values: RunValues, positionals: string[]): string[] {
  const selected = selectedRules(values);
  return [
    require.resolve('@playwright/test/cli'),
    'test',
    '-c',
    path.join(ROOT, 'playwright.config.ts'),
    ...(values.grep ? ['--grep', values.grep] : []),
    ...(values['grep-invert'] ? ['--grep-invert', values['grep-invert']] : []),
    ...(values.shard ? [`--shard=${values.shard}`] : []),
    ...selected.map((id) => path.join(ROOT, 'tests', RULES[id].file)),
    ...positionals,
  ];
}

/**
 * Where the command's time went: start (the command, Playwright, the global setup), workers (their
 * start and fixtures, until the first test), tests (to the last test's end: the Allure report's
 * duration), teardown (the global teardown and the verdict, until Playwright exited), reports (the
 * Allure report, the stops the run left, the command's end).
 */
function phases(reportsDir: string, playwrightEnded: number): string {
  const now = Date.now();
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  let summary: Summary | undefined;
  try {
    summary = JSON.parse(readFileSync(path.join(reportsDir, 'conformance-summary.json'), 'utf8'));
  } catch {
    return `Took ${seconds(now - COMMAND_STARTED)}.`;
  }
  const began = summary!.startedAt ?? COMMAND_STARTED;
  const first = summary!.firstTestStartedAt ?? began;
  const last = first + (summary!.testsMs ?? 0);
  return `Took ${seconds(now - COMMAND_STARTED)}: start ${seconds(began - COMMAND_STARTED)}, workers ${seconds(first - began)}, tests ${seconds(last - first)} (first test's start to last test's end, as Allure counts), teardown ${seconds(playwrightEnded - last)}, reports ${seconds(now - playwrightEnded)}.`;
}

/** After Playwright: stops what the run left, builds the Allure report, and returns the exit code. */
async function finish(settings: Settings, signalled: string | undefined, allure: boolean): Promise<number> {
  // Even after a hang: a stop the target left unanswered may be the one that ended a session, or a teardown may not have reached it.
  const leftOpen = await stopOpenSessions(new Ledger(ledgerFile(settings.reportsDir)), settings, (entry) => !entry.embedded);
  if (leftOpen.stopped.length) console.log(`Stopped ${leftOpen.stopped.length} session(s) the run left:\n  ${leftOpen.stopped.join('\n  ')}`);
  if (leftOpen.failed.length)
    console.error(`Could not stop ${leftOpen.failed.length} session(s):\n  ${leftOpen.failed.join('\n  ')}\nRun \`${NAME} cleanup\` to try again.`);

  const summaryFile = path.join(settings.reportsDir, 'conformance-summary.json');
  if (!existsSync(summaryFile)) {
    console.error(
      signalled ? `The run was stopped (${signalled}) before it wrote a verdict.` : 'The run ended without a conformance summary: see the errors above.',
    );
    return EXIT_CODES.error;
  }
  const summary = JSON.parse(readFileSync(summaryFile, 'utf8')) as Summary;
  if (allure && existsSync(path.join(settings.reportsDir, 'allure-results'))) {
    const report = buildAllureReport([path.join(settings.reportsDir, 'allure-results')], settings.reportsDir);
    console.log(report ? `Allure report: ${path.relative(process.cwd(), report)}` : 'The Allure report could not be generated.');
  }
  console.log(`JUnit: ${path.relative(process.cwd(), path.join(settings.reportsDir, 'junit.xml'))}; summary: ${path.relative(process.cwd(), summaryFile)}`);
  // A run stopped early, or one that leaves a session running, cannot pass: failures found stay failures.
  if ((signalled || leftOpen.failed.length) && summary.exitCode !== EXIT_CODES.fail) return EXIT_CODES.error;
  return summary.exitCode;
}

/** NODE_OPTIONS that preload the code cache of Playwright's bundles (src/code-cache.cjs) into its processes. */
function withCodeCache(options = ''): string {
  const preload = `--require ${JSON.stringify(path.join(__dirname, 'code-cache.cjs'))}`;
  return options.includes(preload) ? options : `${options} ${preload}`.trim();
}

/**
 * Runs Playwright in its own process group, so that a Ctrl-C reaches it once (from here, never
 * twice, which would skip its teardown). SIGINT and SIGTERM are forwarded, both as SIGINT: the one
 * signal on which Playwright runs its teardowns and reporters (SIGTERM would end it at once, its
 * workers left to stop their sessions unseen). Its teardown is awaited; past RUN_TIMEOUT_MS and a
 * minute's grace it is ended. Returns the signal that stopped the run, if one did.
 */
function runPlaywright(args: string[], settings: Settings): Promise<string | undefined> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, {
      // fd 3: a pipe that closes when this process ends, however it ends; the run then winds down (global-setup.ts).
      stdio: ['inherit', 'inherit', 'inherit', 'pipe'],
      detached: true,
      // A worker Playwright starts as the run stops may never get its stop (Playwright 1.65 sends it before the fork): killed after 15 s without a heartbeat, not 300.
      env: { PWTEST_CHILD_PROCESS_TIMEOUT: '15000', ...process.env, [COMMAND_PIPE_VARIABLE]: '3', NODE_OPTIONS: withCodeCache(process.env.NODE_OPTIONS) },
    });
    let signalled: string | undefined;
    const forward = (signal: NodeJS.Signals) => {
      if (signalled) return;
      signalled = signal;
      console.error(`\n${signal}: stopping the run; waiting for its teardown to stop the sessions it created…`);
      child.kill('SIGINT');
    };
    // A request the target left unanswered (client.ts): the run ends now, its teardown stopping what it opened, instead of meeting the same silence test after test.
    const hang = channel(settings.reportsDir, 'hang');
    const ending = endingFile(settings.reportsDir);
    rmSync(hang, { force: true });
    rmSync(ending, { force: true });
    const watch = setInterval(() => {
      if (signalled || !existsSync(hang) || existsSync(ending)) return;
      clearInterval(watch);
      signalled = 'the target stopped answering';
      console.error(
        `\nThe target stopped answering: ${readFileSync(hang, 'utf8')}\nEnding the run, an error of the run (exit 2; 1 if a failure was found): its teardown stops the sessions it created…`,
      );
      child.kill('SIGINT');
    }, 250);
    const onInt = () => forward('SIGINT');
    const onTerm = () => forward('SIGTERM');
    process.on('SIGINT', onInt);
    process.on('SIGTERM', onTerm);
    const hardStop = setTimeout(() => {
      console.error(`The run went past RUN_TIMEOUT_MS (${settings.runTimeoutMs} ms) and a minute's grace: ending it.`);
      forward('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 30_000).unref();
    }, settings.runTimeoutMs + 60_000);
    hardStop.unref();
    child.on('exit', () => {
      clearTimeout(hardStop);
      clearInterval(watch);
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
      resolve(signalled);
    });
  });
}

async function cleanup(argv: string[]): Promise<number> {
  const { positionals, problems } = readFlags(argv, {});
  if (positionals.length && !problems.length) problems.push('cleanup takes no argument: it reads REPORTS_DIR and the keys from the environment');
  const settings = settingsWith({}, problems);
  if (!settings || problems.length) return configurationError(problems);
  const busy = reportsFolderInUse(settings.reportsDir);
  if (busy) return configurationError(`${busy} Its sessions are still its own: run the cleanup once it has ended.`);
  // A fresh back-off budget: what the run learnt of the target's limiter may no longer hold.
  rmSync(channel(settings.reportsDir, 'backoff'), { recursive: true, force: true });
  // The run's own ledger, and those of its shards (--shards).
  const shards = shardFolders(settings.reportsDir);
  const running = shards.map(reportsFolderInUse).find(Boolean);
  if (running) return configurationError(`${running} Its sessions are still its own: run the cleanup once it has ended.`);
  const files = [settings.reportsDir, ...shards].flatMap(ledgerFiles);
  let code = 0;
  for (const file of files) {
    const open = new Ledger(file).open();
    const embedded = open.filter((entry) => entry.embedded).length;
    if (embedded) console.log(`${file}: ${embedded} session(s) of an embedded reference ended with its process; nothing to stop.`);
    const { stopped, failed } = await stopOpenSessions(new Ledger(file), settings, (entry) => !entry.embedded);
    if (!open.length) console.log(`${file}: no session left open.`);
    for (const line of stopped) console.log(`stopped  ${line}`);
    for (const line of failed) console.log(`FAILED   ${line}`);
    if (failed.length) code = 2;
  }
  removeRunFolder(settings.reportsDir);
  return code;
}

function verdict(argv: string[]): number {
  const { values, positionals, problems } = readFlags(argv, { out: { type: 'string' } });
  if (!positionals.length) problems.push('verdict needs the conformance-summary.json of every shard');
  const missing = positionals.filter((file) => !existsSync(file));
  if (missing.length) problems.push(`no such summary: ${missing.join(', ')}`);
  if (problems.length) return configurationError(problems);
  const merged = mergeSummaries(positionals.map((file) => JSON.parse(readFileSync(file, 'utf8')) as Summary));
  const out = path.resolve(values.out ?? path.join(loadSettings().reportsDir, 'conformance-summary.merged.json'));
  mkdirSync(path.dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify(merged, null, 2));
  console.log(renderSummary(merged));
  console.log(`Merged summary: ${path.relative(process.cwd(), out)}`);
  return merged.exitCode;
}

async function reference(argv: string[]): Promise<number> {
  const { values, positionals, problems } = readFlags(argv, { port: { type: 'string' } });
  const port = Number(values.port ?? process.env.PORT ?? 3002);
  if (!Number.isInteger(port) || port < 0 || port > 65535) problems.push(`--port (or PORT) must be a port number (got "${values.port ?? process.env.PORT}")`);
  if (positionals.length && !problems.length) problems.push('reference takes no argument but --port');
  if (problems.length) return configurationError(problems);
  const { createReferenceServer } = await import('../reference/server');
  const server = await createReferenceServer({ port, log: (line) => console.log(`${new Date().toISOString()} ${line}`) });
  // Where the keys are, as installed: a project that installed the kit finds them under its node_modules.
  console.log(`Reference server listening on ${server.url} (teams and keys: ${realpathSync(TEAMS_FILE)})`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await server.close();
  return 0;
}

function replayCommand(argv: string[]): Promise<number> | number {
  const { values, positionals, problems } = readFlags(argv, { 'any-target': { type: 'boolean' } });
  if (positionals.length > 1 && !problems.length) problems.push('replay takes one reports folder at most');
  const settings = settingsWith({}, problems);
  if (!settings || problems.length) return configurationError(problems);
  return replay(settings, positionals[0], values['any-target'] ?? false);
}

async function main(argv: string[]): Promise<number> {
  if (argv.includes('-h') || argv.includes('--help')) {
    console.log(help());
    return 0;
  }
  const [command, ...rest] = argv;
  if (command === 'reference') return reference(rest);
  if (command === 'cleanup') return cleanup(rest);
  if (command === 'verdict') return verdict(rest);
  if (command === 'replay') return replayCommand(rest);
  return run(command === 'run' ? rest : argv);
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: Error) => {
    console.error(error.message);
    process.exit(2);
  },
);
