/**
 * The matchers the named checks use, without Playwright: a reproduction runs the same checks with
 * this `expect` in place of src/checks/expect.ts (selftest/reproduction.test.ts holds the two to
 * the same verdicts). A failed matcher throws with the check's message, what it expected and what it got.
 */

import { type SchemaName, schemaErrors } from '../checks/schemas';
import { oneOf } from '../checks/words';
import { redact } from '../http/redact';

const shown = (value: unknown) =>
  typeof value === 'string' ? JSON.stringify(value) : value instanceof RegExp ? String(value) : (JSON.stringify(value) ?? String(value));
const isNumber = (value: unknown): value is number => typeof value === 'number';

function equal(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || !a || !b || Array.isArray(a) !== Array.isArray(b)) return false;
  const [ka, kb] = [Object.keys(a), Object.keys(b)];
  return ka.length === kb.length && ka.every((key) => equal((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]));
}

function matchers(actual: any, message: string | undefined, negated: boolean) {
  const judge = (pass: boolean, name: string, expected: unknown, detail?: string) => {
    if (pass !== negated) return;
    const text = `${message ? `${message}\n\n` : ''}expect(received).${negated ? 'not.' : ''}${name}(expected)\n\nExpected: ${negated ? 'not ' : ''}${name === 'toBeOneOf' ? `one of ${oneOf(expected as unknown[])}` : shown(expected)}\nReceived: ${redact(shown(actual)).slice(0, 1000)}${detail ? `\n${detail}` : ''}`;
    throw Object.assign(new Error(text), { matcherResult: { expected, actual } });
  };
  return {
    toBe: (expected: unknown) => judge(Object.is(actual, expected), 'toBe', expected),
    toEqual: (expected: unknown) => judge(equal(actual, expected), 'toEqual', expected),
    toBeUndefined: () => judge(actual === undefined, 'toBeUndefined', undefined),
    toBeGreaterThanOrEqual: (expected: number) => judge(isNumber(actual) && actual >= expected, 'toBeGreaterThanOrEqual', expected),
    toBeLessThanOrEqual: (expected: number) => judge(isNumber(actual) && actual <= expected, 'toBeLessThanOrEqual', expected),
    toBeLessThan: (expected: number) => judge(isNumber(actual) && actual < expected, 'toBeLessThan', expected),
    toBeGreaterThan: (expected: number) => judge(isNumber(actual) && actual > expected, 'toBeGreaterThan', expected),
    toBeOneOf: (expected: readonly unknown[]) =>
      judge(
        expected.some((item) => Object.is(item, actual)),
        'toBeOneOf',
        expected,
      ),
    toContain: (expected: unknown) =>
      judge(
        Array.isArray(actual)
          ? actual.some((item) => Object.is(item, expected))
          : typeof actual === 'string' && typeof expected === 'string' && actual.includes(expected),
        'toContain',
        expected,
      ),
    toMatch: (expected: RegExp | string) =>
      judge(typeof actual === 'string' && (typeof expected === 'string' ? actual.includes(expected) : expected.test(actual)), 'toMatch', expected),
    toMatchSchema: (name: SchemaName) => {
      const errors = schemaErrors(actual, name);
      judge(errors.length === 0, 'toMatchSchema', `schemas/${name}.json`, errors.map((error) => `  ${error}`).join('\n'));
    },
  };
}

export function expect(actual: unknown, message?: string) {
  return { ...matchers(actual, message, false), not: matchers(actual, message, true) };
}
