/**
 * Known deviations of a target: a file the target's team keeps.
 *
 *   { "billing": { "rule": { "creditsPerMinute": 2, "creditStep": 1, "rounding": "up", "minimumCredits": 2 },
 *                  "reason": "..." },
 *     "deviations": [{ "test": "authentication/basic-scheme", "check": "refused",
 *                      "message": "answered 200", "reason": "..." }] }
 *
 * `clock` states that durations come from the target's own clock, in steps of `resolutionMs` (the
 * hosted service's browser backend counts whole seconds): a duration check then accepts the measured
 * interval widened by one step on each side, and every proof that needs a duration holds long
 * enough to be decided at that resolution.
 *
 * `billing` states the target's billing rule instead of the specification's: every credits check
 * (billing/*, sequences/random-histories) then computes the charge the rule gives for the measured
 * duration, and a charge outside it still fails. Each entry of `deviations` names a stable test id
 * and one of its checks (src/config/rules.ts); `message`, optional, is a regular expression the
 * failure message must match. Only that failure of that check is accepted.
 */
import { readFileSync } from 'node:fs';
import { entryOf, isTestId, type TestId } from './rules';

export interface KnownDeviation {
  test: TestId;
  check: string;
  message?: RegExp;
  reason: string;
}

/**
 * A billing rule, enough to compute the charge for any duration: the duration in minutes, rounded
 * to whole `durationUnitMs` when given, times `creditsPerMinute`, rounded to a multiple of
 * `creditStep` when given, and at least `minimumCredits`. Both roundings go as `rounding` says.
 * The hosted service's: { creditsPerMinute: 2, creditStep: 1, rounding: "up", minimumCredits: 2 }.
 */
export interface BillingRule {
  creditsPerMinute: number;
  durationUnitMs?: number;
  creditStep?: number;
  rounding: 'up' | 'down' | 'nearest';
  minimumCredits?: number;
}

export interface DeclaredBilling {
  rule: BillingRule;
  reason: string;
}

/** The target takes the key after any scheme word (`Basic <key>` acts as `Bearer <key>`). */
export interface DeclaredSchemeWord {
  schemeWord: 'ignored';
  reason: string;
}

/** Durations come from the target's clock, which counts in steps of `resolutionMs`. */
export interface DeclaredClock {
  resolutionMs: number;
  reason: string;
}

export interface KnownDeviations {
  deviations: KnownDeviation[];
  billing?: DeclaredBilling;
  authentication?: DeclaredSchemeWord;
  clock?: DeclaredClock;
}

/** The checks a declared scheme word decides: an entry for them would excuse what the declaration checks. */
const SCHEME_CHECKS = ['authentication/basic-scheme refused', 'authentication/token-scheme refused'];

const ROUNDINGS = ['up', 'down', 'nearest'];

function readBillingRule(value: unknown, problems: string[]): DeclaredBilling | undefined {
  if (value === undefined) return undefined;
  const { rule, reason } = (value ?? {}) as { rule?: Record<string, unknown>; reason?: unknown };
  const positive = (name: string, optional: boolean) => {
    const number = rule?.[name];
    if (number === undefined && optional) return;
    if (typeof number !== 'number' || !(number > 0))
      problems.push(`billing.rule.${name} must be a number above 0${optional ? ' when given' : ''} (got ${JSON.stringify(number ?? null)}).`);
  };
  positive('creditsPerMinute', false);
  positive('durationUnitMs', true);
  positive('creditStep', true);
  if (rule?.minimumCredits !== undefined && !(typeof rule.minimumCredits === 'number' && rule.minimumCredits >= 0))
    problems.push('billing.rule.minimumCredits must be a number of at least 0 when given.');
  if (!ROUNDINGS.includes(rule?.rounding as string))
    problems.push(`billing.rule.rounding must be one of ${ROUNDINGS.join(', ')} (got ${JSON.stringify(rule?.rounding ?? null)}).`);
  const unknown = Object.keys(rule ?? {}).filter((key) => !['creditsPerMinute', 'durationUnitMs', 'creditStep', 'rounding', 'minimumCredits'].includes(key));
  if (unknown.length) problems.push(`billing.rule has fields this suite does not know: ${unknown.join(', ')}.`);
  if (typeof reason !== 'string' || reason.trim().length < 10) problems.push('billing.reason must say why, with numbers where there are some.');
  return { rule: rule as unknown as BillingRule, reason: reason as string };
}

function readClock(value: unknown, problems: string[]): DeclaredClock | undefined {
  if (value === undefined) return undefined;
  const { resolutionMs, reason, ...rest } = (value ?? {}) as Record<string, unknown>;
  if (!(typeof resolutionMs === 'number' && Number.isInteger(resolutionMs) && resolutionMs >= 1 && resolutionMs <= 60_000)) {
    problems.push(`clock.resolutionMs must be a whole number of milliseconds from 1 to 60000 (got ${JSON.stringify(resolutionMs ?? null)}).`);
  }
  if (Object.keys(rest).length) problems.push(`clock has fields this suite does not know: ${Object.keys(rest).join(', ')}.`);
  if (typeof reason !== 'string' || reason.trim().length < 10) problems.push('clock.reason must say why, with numbers where there are some.');
  return { resolutionMs: resolutionMs as number, reason: reason as string };
}

export function readKnownDeviations(file: string): KnownDeviations {
  let parsed: { deviations?: unknown; billing?: unknown; authentication?: unknown; clock?: unknown };
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`${file} is not valid JSON (${(error as Error).message}).`);
  }
  if (
    !Array.isArray(parsed?.deviations ?? []) ||
    (parsed?.deviations === undefined && parsed?.billing === undefined && parsed?.authentication === undefined && parsed?.clock === undefined)
  ) {
    throw new Error(
      `${file} must hold {"billing": {"rule", "reason"}}, {"clock": {"resolutionMs", "reason"}}, {"authentication": {"schemeWord", "reason"}} or {"deviations": [{"test", "check", "reason"}]}.`,
    );
  }
  const problems: string[] = [];
  const billing = readBillingRule(parsed.billing, problems);
  const clock = readClock(parsed.clock, problems);
  const authentication = parsed.authentication as DeclaredSchemeWord | undefined;
  if (
    authentication !== undefined &&
    (authentication?.schemeWord !== 'ignored' || typeof authentication.reason !== 'string' || authentication.reason.trim().length < 10)
  ) {
    problems.push('authentication must be {"schemeWord": "ignored", "reason": "..."}: the key is taken after any scheme word.');
  }
  const deviations: KnownDeviation[] = [];
  const seen = new Set<string>();
  ((parsed.deviations ?? []) as Record<string, unknown>[]).forEach((entry, index) => {
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
    if (authentication && SCHEME_CHECKS.includes(`${entry.test} ${entry.check}`)) {
      problems.push(`${where}: the declared scheme word decides this check; an entry for it would excuse an answer the declaration does not give.`);
      return;
    }
    if (billing && entry.check === 'credits') {
      problems.push(
        `${where}: the credits of every billing check follow the declared billing rule; an entry for them would excuse a charge the rule does not give.`,
      );
      return;
    }
    const key = `${entry.test} ${entry.check}`;
    if (seen.has(key)) problems.push(`${where}: ${key} is declared twice.`);
    seen.add(key);
    deviations.push({ test: entry.test, check: entry.check, message, reason: entry.reason });
  });
  if (problems.length) throw new Error(`${file}:\n    ${problems.join('\n    ')}`);
  return { deviations, billing, authentication, clock };
}
