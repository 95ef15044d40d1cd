/** The JSON Schemas under schemas/, compiled once, exposed as `expect(body).toMatchSchema(name)`. */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect as baseExpect } from '@playwright/test';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { redact } from './redact';

export const SCHEMA_DIR = path.join(__dirname, '..', '..', 'schemas');

export const ajv = new Ajv2020({ allErrors: true, strict: true });
addFormats(ajv);
// Compiled on first use (npm test compiles every schema): the test runner only lists tests and
// never validates, so it does not pay for compiling them.
for (const file of readdirSync(SCHEMA_DIR).filter((name) => name.endsWith('.json'))) {
  ajv.addSchema(JSON.parse(readFileSync(path.join(SCHEMA_DIR, file), 'utf8')));
}

export type SchemaName = 'stop-result' | 'error' | 'scrape-result' | 'interact-result';

export function schemaErrors(body: unknown, name: SchemaName): string[] {
  const validate = ajv.getSchema(`${name}.json`);
  if (!validate) throw new Error(`No schema named ${name} in schemas/`);
  if (validate(body)) return [];
  return (validate.errors ?? []).map((error) => `${error.instancePath || '(root)'} ${error.message}${error.params && 'allowedValue' in error.params ? ` (${JSON.stringify(error.params.allowedValue)})` : ''}`);
}

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
