/**
 * The matchers the named checks use, written plainly: the run and its standalone reproduction judge
 * with this one `expect`, none more lenient than Playwright's (selftest/suite.test.ts holds them to
 * Playwright's verdicts). A failed matcher throws with the check's message, what it expected and
 * what it got, as Playwright words them.
 */
import { redact } from '../http/redact';
import { type SchemaName, schemaErrors } from './schemas';
import { oneOf } from './words';

const shown = (value: unknown) =>
  typeof value === 'string' ? JSON.stringify(value) : value instanceof RegExp ? String(value) : (JSON.stringify(value) ?? String(value));
const isNumber = (value: unknown): value is number => typeof value === 'number';
const compared = (actual: unknown, expected: unknown) => isNumber(actual) && isNumber(expected);

function equal(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || !a || !b) return false;
  // Only plain objects and arrays are compared by their keys: a Date, Map or RegExp never equals another here.
  const kind = Object.prototype.toString.call(a);
  if (kind !== Object.prototype.toString.call(b) || (kind !== '[object Object]' && kind !== '[object Array]')) return false;
  const [ka, kb] = [Object.keys(a), Object.keys(b)];
  return ka.length === kb.length && ka.every((key) => equal((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]));
}

function matchers(actual: any, message: string | undefined, negated: boolean) {
  /** `expectedText`: how the expectation reads ("< 500", "one of [200, 404]"), where not the value itself. */
  /** `valid` false: values the matcher cannot compare, a failure whatever the negation (as Playwright's matcher errors). */
  const judge = (pass: boolean, name: string, expected: unknown, expectedText = shown(expected), detail?: string, valid = true) => {
    if (valid && pass !== negated) return;
    const text =
      `${message ? `${message}\n\n` : ''}expect(received).${negated ? 'not.' : ''}${name}(expected)\n\n` +
      `Expected: ${negated ? 'not ' : ''}${expectedText}\nReceived: ${redact(shown(actual)).slice(0, 1000)}${detail ? `\n${detail}` : ''}`;
    throw Object.assign(new Error(text), { matcherResult: { expected, actual } });
  };
  return {
    toBe: (expected: unknown) => judge(Object.is(actual, expected), 'toBe', expected),
    toEqual: (expected: unknown) => judge(equal(actual, expected), 'toEqual', expected),
    toBeUndefined: () => judge(actual === undefined, 'toBeUndefined', undefined, 'undefined'),
    toBeGreaterThan: (expected: number) => judge(actual > expected, 'toBeGreaterThan', expected, `> ${expected}`, undefined, compared(actual, expected)),
    toBeGreaterThanOrEqual: (expected: number) =>
      judge(actual >= expected, 'toBeGreaterThanOrEqual', expected, `>= ${expected}`, undefined, compared(actual, expected)),
    toBeLessThanOrEqual: (expected: number) =>
      judge(actual <= expected, 'toBeLessThanOrEqual', expected, `<= ${expected}`, undefined, compared(actual, expected)),
    toBeLessThan: (expected: number) => judge(actual < expected, 'toBeLessThan', expected, `< ${expected}`, undefined, compared(actual, expected)),
    // The value judged is the one received, the allowed set the one expected (toContain reads the other way round).
    toBeOneOf: (expected: readonly unknown[]) =>
      judge(
        expected.some((item) => Object.is(item, actual)),
        'toBeOneOf',
        expected,
        `one of ${oneOf(expected)}`,
      ),
    toContain: (expected: unknown) =>
      judge(
        Array.isArray(actual) ? actual.indexOf(expected) !== -1 : String(actual).includes(String(expected)),
        'toContain',
        expected,
        undefined,
        undefined,
        Array.isArray(actual) || (typeof actual === 'string' && typeof expected === 'string'),
      ),
    toMatch: (expected: RegExp | string) =>
      judge(
        typeof expected === 'string' ? String(actual).includes(expected) : new RegExp(expected).test(String(actual)),
        'toMatch',
        expected,
        undefined,
        undefined,
        typeof actual === 'string',
      ),
    toMatchSchema: (name: SchemaName) => {
      const errors = schemaErrors(actual, name);
      judge(
        errors.length === 0,
        'toMatchSchema',
        `schemas/${name}.json`,
        `a body that matches schemas/${name}.json`,
        errors.map((error) => `  ${error}`).join('\n'),
      );
    },
  };
}

export function expect(actual: unknown, message?: string) {
  return { ...matchers(actual, message, false), not: matchers(actual, message, true) };
}
