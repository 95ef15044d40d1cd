/**
 * Playwright's `expect` with `toMatchSchema(name)`, against the JSON Schemas under schemas/. Apart
 * from schemas.ts, so that the command (which validates too, in its cleanup) never loads Playwright.
 */
import { expect as baseExpect } from '@playwright/test';
import { redact } from '../http/redact';
import { type SchemaName, schemaErrors } from './schemas';
import { oneOf } from './words';

const playwrightExpect = baseExpect.extend({
  // The value judged is the one received, the allowed set the one expected (toContain reads the other way round).
  toBeOneOf(received: unknown, expected: readonly unknown[]) {
    const pass = expected.some((value) => Object.is(value, received));
    return {
      pass,
      name: 'toBeOneOf',
      message: () =>
        `expect(received).${pass ? 'not.' : ''}toBeOneOf(expected)\n\nExpected: ${pass ? 'not ' : ''}one of ${oneOf(expected)}\nReceived: ${redact(JSON.stringify(received) ?? String(received))}`,
    };
  },
  toMatchSchema(received: any, name: SchemaName) {
    const errors = schemaErrors(received, name);
    const pass = errors.length === 0;
    return {
      pass,
      name: 'toMatchSchema',
      message: () =>
        pass
          ? `Expected the body not to match schemas/${name}.json`
          : `Expected the body to match schemas/${name}.json:\n${errors.map((error) => `  ${error}`).join('\n')}\nReceived: ${redact(JSON.stringify(received) ?? String(received)).slice(0, 1000)}`,
    };
  },
});

/** Thrown by a plain comparison that does not hold: the checks then run again with Playwright's expect. */
class NotQuick extends Error {}
const notQuick = (): never => {
  throw new NotQuick();
};
const isNumber = (value: unknown): value is number => typeof value === 'number';

/**
 * Plain forms of the matchers the suite's checks use, none more lenient than Playwright's own;
 * any other matcher, or a failing one, sends the checks back to Playwright's expect.
 */
function plainMatchers(actual: any) {
  return {
    toBe: (expected: unknown) => void (Object.is(actual, expected) || notQuick()),
    not: { toBe: (expected: unknown) => void (!Object.is(actual, expected) || notQuick()) },
    toBeGreaterThanOrEqual: (expected: number) => void ((isNumber(actual) && isNumber(expected) && actual >= expected) || notQuick()),
    toBeLessThanOrEqual: (expected: number) => void ((isNumber(actual) && isNumber(expected) && actual <= expected) || notQuick()),
    toBeLessThan: (expected: number) => void ((isNumber(actual) && isNumber(expected) && actual < expected) || notQuick()),
    toBeUndefined: () => void (actual === undefined || notQuick()),
    toBeOneOf: (expected: readonly unknown[]) => void (expected.some((value) => Object.is(value, actual)) || notQuick()),
    toContain: (expected: unknown) =>
      void (
        (Array.isArray(actual) ? actual.indexOf(expected) !== -1 : typeof actual === 'string' && typeof expected === 'string' && actual.includes(expected)) ||
        notQuick()
      ),
    toEqual: (expected: unknown) => void ((Array.isArray(expected) && expected.length === 0 && Array.isArray(actual) && actual.length === 0) || notQuick()),
    toMatchSchema: (name: SchemaName) => void (schemaErrors(actual, name).length === 0 || notQuick()),
  };
}

let plain = false;

export const expect = new Proxy(playwrightExpect, {
  apply: (target, self, args: Parameters<typeof playwrightExpect>) =>
    plain ? new Proxy(plainMatchers(args[0]), { get: (matchers, name) => (matchers as any)[name] ?? notQuick() }) : Reflect.apply(target, self, args),
});

/**
 * Runs synchronous checks with plain comparisons first and, only when one does not hold, again with
 * Playwright's expect, for its verdict and message: each of Playwright's assertions records a step
 * with a stack, and the sequences rule checks thousands of answers a run. selftest/suite.test.ts
 * holds the plain forms to Playwright's outcomes.
 */
export function checkQuickly(checks: () => void): void {
  plain = true;
  try {
    checks();
    return;
  } catch {
    // Anything thrown (a comparison that failed, a matcher without a plain form, an error of the checks): Playwright's verdict decides.
  } finally {
    plain = false;
  }
  checks();
}
