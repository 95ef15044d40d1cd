/**
 * npm run bench:strict-limit: the whole suite against a target that allows only 10 stop/interact
 * requests per minute per team and sends no Retry-After (the hosted service's free plan). Counts,
 * from the server's side, the requests the run sends to the rate-limited endpoints, and records
 * them with the wall time in reports/bench.json and docs/performance.md. With `--burst-team`, the
 * run also has a third team's key (BURST_API_KEY), so that the burst runs beside the other tests.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createReferenceServer, loadTeams } from '../reference/server';
import { isolatedEnv, PLAYWRIGHT, ROOT, runCommand } from '../selftest/matrix';
import { renderPerformance } from './performance';

(async () => {
  const lines: string[] = [];
  const server = await createReferenceServer({
    rateLimit: { limit: 10, windowMs: 60_000 },
    log: (line) => lines.push(line),
    behaviour: (base) => ({ error: (status, message, headers) => base.error(status, message, status === 429 ? {} : headers) }),
  });
  const [owner, foreign, burst] = loadTeams();
  const burstTeam = process.argv.includes('--burst-team');
  const started = performance.now();
  const { code, log } = await runCommand(PLAYWRIGHT, ['test', '--reporter=line'], isolatedEnv({
    BASE_URL: server.url, API_KEY: owner.keys[0], FOREIGN_API_KEY: foreign.keys[0], BURST_REQUESTS: '30', ...(burstTeam ? { BURST_API_KEY: burst.keys[0] } : {}), REPORTS_DIR: mkdtempSync(path.join(os.tmpdir(), 'strict-')),
  }));
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
  };
  console.log(log.split('\n').filter((line) => /passed|failed|Verdict|FAIL|✘|Error/.test(line)).join('\n'));
  console.log(JSON.stringify(figures, null, 2));
  const file = path.join(ROOT, 'reports', 'bench.json');
  let bench: Record<string, unknown> = {};
  try {
    bench = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    // first run
  }
  bench[burstTeam ? 'strictLimitBurstTeam' : 'strictLimit'] = figures;
  writeFileSync(file, JSON.stringify(bench, null, 2));
  writeFileSync(path.join(ROOT, 'docs', 'performance.md'), renderPerformance(bench));
  process.exit(code);
})();
