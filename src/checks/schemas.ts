/**
 * The JSON Schemas of schemas/, for the run and, bundled inside it, for a reproduction (which has no
 * kit beside it to read them from). `expect(body).toMatchSchema(name)` is in expect.ts.
 */
import type Ajv2020 from 'ajv/dist/2020';
import error from '../../schemas/error.json';
import interactResult from '../../schemas/interact-result.json';
import scrapeResult from '../../schemas/scrape-result.json';
import stopResult from '../../schemas/stop-result.json';

export type SchemaName = 'stop-result' | 'error' | 'scrape-result' | 'interact-result';

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
  for (const schema of [error, interactResult, scrapeResult, stopResult]) loaded.addSchema(schema);
  return loaded;
}

export function schemaErrors(body: unknown, name: SchemaName): string[] {
  const validate = schemas().getSchema(`${name}.json`);
  if (!validate) throw new Error(`No schema named ${name} in schemas/`);
  if (validate(body)) return [];
  return (validate.errors ?? []).map(
    (problem) =>
      `${problem.instancePath || '(root)'} ${problem.message}${problem.params && 'allowedValue' in problem.params ? ` (${JSON.stringify(problem.params.allowedValue)})` : ''}`,
  );
}
