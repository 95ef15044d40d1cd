/**
 * npm run bench:strict-limit: the whole command against a target that allows only 10 stop/interact
 * requests per minute per team and sends no Retry-After (the hosted service's free plan). Counts,
 * from the server's side, the requests the run sends to the rate-limited endpoints, and records
 * them with the wall time, the verdict and the run's own cost lines in docs/bench.json and
 * docs/performance.md. Options: `--burst-team`, a third team's key (BURST_API_KEY), so that the
 * burst runs beside the other tests; `--production`, a target that bills whole credits and takes
 * any scheme word, as the hosted service does, run with its known-deviations file; `--cap N`, a cap
 * of N live sessions per team; `--sequence-seconds N`, the sequences rule's SEQUENCE_SECONDS (60 by
 * default), to measure what its search adds to the run; `--free-plan`, the hosted service as it is
 * today on its free plan (its words on 429, 10 scrapes a minute on their own limiter, a cap of 2
 * concurrent jobs shared with scrapes in progress, its provisioning race), with the production file;
 * `--window-ms N`, the free plan's window scaled down to N ms; `--limit N` and `--job-cap N`, a paid
 * plan's requests a window and concurrent jobs.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createReferenceServer, loadTeams } from '../reference/server';
import { isolatedEnv, ROOT, runCommand } from '../selftest/matrix';
import { FREE_PLAN, onPlan } from '../selftest/production';
import { capsSessions, faultyVariants } from '../selftest/variants';
import type { Summary } from '../src/report/verdict';
import { renderPerformance } from './performance';

const option = (name: string) => process.argv.includes(name);
const behaviourOf = (name: string) => faultyVariants.find((variant) => variant.name === name)!.options.behaviour!;

(async () => {
  const lines: string[] = [];
  const freePlan = option('--free-plan');
  const number = (name: string, fallback: number) => (option(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : fallback);
  const windowMs = number('--window-ms', FREE_PLAN.windowMs);
  // A paid plan: more requests a window (`--limit`, scrapes alike) and more concurrent jobs (`--job-cap`).
  const plan = {
    ...FREE_PLAN,
    windowMs,
    limit: number('--limit', FREE_PLAN.limit),
    scrapeLimit: number('--limit', FREE_PLAN.scrapeLimit),
    jobCap: number('--job-cap', FREE_PLAN.jobCap),
  };
  const production = option('--production') || freePlan;
  const cap = option('--cap') ? Number(process.argv[process.argv.indexOf('--cap') + 1]) : undefined;
  // The sequences rule's time budget: its default (60 s) unless given, to measure what it adds to the run.
  const sequenceSeconds = option('--sequence-seconds') ? process.argv[process.argv.indexOf('--sequence-seconds') + 1] : '';
  const server = await createReferenceServer({
    rateLimit: { limit: 10, windowMs: 60_000 },
    log: (line) => lines.push(line),
    behaviour: freePlan
      ? onPlan(plan).behaviour
      : (base, state) => ({
          ...(production ? { ...behaviourOf('billing-whole-credits')(base, state), ...behaviourOf('any-scheme-accepted')(base, state) } : {}),
          ...(cap ? capsSessions(cap, false).behaviour!(base, state) : {}),
          error: (status, message, headers) => base.error(status, message, status === 429 ? {} : headers),
        }),
  });
  const [owner, foreign, burst] = loadTeams();
  const burstTeam = option('--burst-team');
  const reports = mkdtempSync(path.join(os.tmpdir(), 'strict-'));
  const started = performance.now();
  const { code, log } = await runCommand(
    process.execPath,
    [path.join(ROOT, 'bin', 'stop-session-conformance.js'), 'run', '--no-allure'],
    isolatedEnv({
      BASE_URL: server.url,
      API_KEY: owner.keys[0],
      FOREIGN_API_KEY: foreign.keys[0],
      BURST_REQUESTS: '30',
      SEQUENCE_SECONDS: sequenceSeconds,
      SEQUENCE_BUDGET: '',
      ...(burstTeam ? { BURST_API_KEY: burst.keys[0] } : {}),
      REPORTS_DIR: reports,
      ...(production ? { KNOWN_DEVIATIONS: path.join(ROOT, 'fixtures', 'known-deviations', 'firecrawl-production.json') } : {}),
    }),
  );
  const minutes = +((performance.now() - started) / 60_000).toFixed(1);
  await server.close();
  const limited = lines.filter((line) => /^(POST|DELETE) \/v2\/scrape\/[^/ ]*\/interact /.test(line));
  const figures = {
    exitCode: code,
    minutes,
    rateLimitedRequests: limited.length,
    throttled: limited.filter((line) => / 429 /.test(line)).length,
    scrapes: lines.filter((line) => line.startsWith('POST /v2/scrape ')).length,
    sessionsLeftRunning: server.activeSessions().length,
    ...summaryFigures(path.join(reports, 'conformance-summary.json')),
  };
  console.log(
    log
      .split('\n')
      .filter((line) => /Verdict|^\s*(FAIL|ERROR)\b|Error|COST|floor:|SESSION CAP/.test(line))
      .join('\n'),
  );
  console.log(JSON.stringify(figures, null, 2));
  const file = path.join(ROOT, 'docs', 'bench.json');
  let bench: Record<string, unknown> = {};
  try {
    bench = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    // first run
  }
  bench[
    [
      'strictLimit',
      burstTeam && 'BurstTeam',
      freePlan
        ? `${plan.limit === FREE_PLAN.limit ? 'FreePlan' : `Plan${plan.limit}`}${windowMs === 60_000 ? '' : `Per${windowMs}ms`}`
        : production && 'Production',
      cap && `Cap${cap}`,
      sequenceSeconds && `Sequences${sequenceSeconds}s`,
    ]
      .filter(Boolean)
      .join('')
  ] = figures;
  writeFileSync(file, JSON.stringify(bench, null, 2));
  writeFileSync(path.join(ROOT, 'docs', 'performance.md'), renderPerformance(bench));
  process.exit(code);
})();

/** The run's verdict and its own cost lines, from its summary. */
function summaryFigures(file: string) {
  try {
    const summary = JSON.parse(readFileSync(file, 'utf8')) as Summary;
    return { verdict: summary.verdict, cost: summary.cost, sessionCap: summary.sessionCap?.cap };
  } catch {
    return { verdict: 'none' };
  }
}
