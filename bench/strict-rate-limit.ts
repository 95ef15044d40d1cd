/**
 * How long the suite takes against a target that allows only 10 stop/interact requests per
 * minute per team and sends no Retry-After (the hosted service's free plan), and that it passes.
 * Usage: npm run bench:strict-limit
 */
import path from 'node:path';
import { createReferenceServer, loadTeams } from '../reference/server';
import { isolatedEnv, ROOT, runCommand } from '../selftest/matrix';

(async () => {
  const server = await createReferenceServer({
    rateLimit: { limit: 10, windowMs: 60_000 },
    behaviour: (base) => ({ error: (status, message, headers) => base.error(status, message, status === 429 ? {} : headers) }),
  });
  const [owner, foreign] = loadTeams();
  const started = performance.now();
  const { code, log } = await runCommand(
    path.join(ROOT, 'node_modules', '.bin', 'playwright'),
    ['test', '--reporter=line'],
    isolatedEnv({ BASE_URL: server.url, API_KEY: owner.keys[0], FOREIGN_API_KEY: foreign.keys[0], BURST_REQUESTS: '30' }),
  );
  const minutes = (performance.now() - started) / 60_000;
  await server.close();
  console.log(log.split('\n').filter((line) => /passed|failed|Verdict|FAIL|✘|Error/.test(line)).join('\n'));
  console.log(`10 requests/minute, no Retry-After: exit ${code} in ${minutes.toFixed(1)} min; ${server.activeSessions().length} sessions left running`);
  process.exit(code);
})();
