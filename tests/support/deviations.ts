/**
 * Known deviations of a target: a file the target's team keeps, one entry per deviating check.
 *
 *   { "deviations": [{ "test": "billing/short-hold", "check": "credits",
 *                      "message": "creditsBilled [0-9]+ must", "reason": "..." }] }
 *
 * `test` is a stable test id and `check` one of its checks (tests/support/rules.ts); `message`,
 * optional, is a regular expression the failure message must match. Only that failure of that
 * check is accepted: anything else failing in the test still fails the run.
 */
import { readFileSync } from 'node:fs';
import { entryOf, isTestId, type TestId } from './rules';

export interface KnownDeviation {
  test: TestId;
  check: string;
  message?: RegExp;
  reason: string;
}

export function readKnownDeviations(file: string): KnownDeviation[] {
  let parsed: { deviations?: unknown };
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`${file} is not valid JSON (${(error as Error).message}).`);
  }
  if (!Array.isArray(parsed?.deviations)) throw new Error(`${file} must hold {"deviations": [{"test", "check", "reason"}]}.`);
  const problems: string[] = [];
  const deviations: KnownDeviation[] = [];
  const seen = new Set<string>();
  parsed.deviations.forEach((entry: Record<string, unknown>, index: number) => {
    const where = `entry ${index + 1} (${JSON.stringify(entry?.test ?? null)})`;
    if (typeof entry?.test !== 'string' || !isTestId(entry.test)) {
      problems.push(`${where}: "test" must be the id of a test of this suite, such as "billing/short-hold"; no test has this id.`);
      return;
    }
    const checks = entryOf(entry.test).checks;
    if (typeof entry.check !== 'string' || !checks.includes(entry.check)) {
      problems.push(`${where}: "check" must be one of the test's checks (${checks.join(', ')}), got ${JSON.stringify(entry.check ?? null)}.`);
      return;
    }
    if (typeof entry.reason !== 'string' || entry.reason.trim().length < 10) {
      problems.push(`${where}: "reason" must say why, with numbers where there are some.`);
      return;
    }
    let message: RegExp | undefined;
    if (entry.message !== undefined) {
      try {
        message = new RegExp(String(entry.message));
      } catch {
        problems.push(`${where}: "message" is not a valid regular expression.`);
        return;
      }
    }
    const key = `${entry.test} ${entry.check}`;
    if (seen.has(key)) problems.push(`${where}: ${key} is declared twice.`);
    seen.add(key);
    deviations.push({ test: entry.test, check: entry.check, message, reason: entry.reason });
  });
  if (problems.length) throw new Error(`${file}:\n    ${problems.join('\n    ')}`);
  return deviations;
}
