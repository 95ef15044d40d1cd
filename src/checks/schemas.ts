/** The JSON Schemas under schemas/, compiled once (`expect(body).toMatchSchema(name)` is in expect.ts). */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type Ajv2020 from 'ajv/dist/2020';

export const SCHEMA_DIR = path.join(__dirname, '..', '..', 'schemas');

let loaded: Ajv2020 | undefined;

/**
 * The schemas, loaded on first use and each compiled on its first validation (npm test compiles
 * every one): the runner only lists tests, and a worker that never validates never pays for ajv.
 */
export function schemas(): Ajv2020 {
  if (loaded) return loaded;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { default: Ajv } = require('ajv/dist/2020') as typeof import('ajv/dist/2020');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { default: addFormats } = require('ajv-formats') as typeof import('ajv-formats');
  // The schemas are checked against the JSON Schema meta-schema by the kit's own tests (selftest/openapi.test.ts), not in every worker.
  loaded = new Ajv({ allErrors: true, strict: true, validateSchema: false });
  addFormats(loaded);
  for (const file of readdirSync(SCHEMA_DIR).filter((name) => name.endsWith('.json'))) {
    loaded.addSchema(JSON.parse(readFileSync(path.join(SCHEMA_DIR, file), 'utf8')));
  }
  return loaded;
}

export type SchemaName = 'stop-result' | 'error' | 'scrape-result' | 'interact-result';

export function schemaErrors(body: unknown, name: SchemaName): string[] {
  const validate = schemas().getSchema(`${name}.json`);
  if (!validate) throw new Error(`No schema named ${name} in schemas/`);
  if (validate(body)) return [];
  return (validate.errors ?? []).map((error) => `${error.instancePath || '(root)'} ${error.message}${error.params && 'allowedValue' in error.params ? ` (${JSON.stringify(error.params.allowedValue)})` : ''}`);
}
