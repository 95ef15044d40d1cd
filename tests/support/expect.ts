/**
 * Playwright's `expect` with `toMatchSchema(name)`, against the JSON Schemas under schemas/. Apart
 * from schemas.ts, so that the command (which validates too, in its cleanup) never loads Playwright.
 */
import { expect as baseExpect } from '@playwright/test';
import { redact } from './redact';
import { schemaErrors, type SchemaName } from './schemas';

export const expect = baseExpect.extend({
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
