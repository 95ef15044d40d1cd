/** The JSON Schemas of schemas/, carried inside a reproduction (which has no kit beside it to read them from). */
import Ajv from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import error from '../../schemas/error.json';
import interactResult from '../../schemas/interact-result.json';
import scrapeResult from '../../schemas/scrape-result.json';
import stopResult from '../../schemas/stop-result.json';

let ajv: Ajv | undefined;

export function schemaErrors(body: unknown, name: string): string[] {
  if (!ajv) {
    ajv = new Ajv({ allErrors: true, strict: true, validateSchema: false });
    addFormats(ajv);
    for (const schema of [error, interactResult, scrapeResult, stopResult]) ajv.addSchema(schema);
  }
  const validate = ajv.getSchema(`${name}.json`);
  if (!validate) throw new Error(`No schema named ${name}`);
  if (validate(body)) return [];
  return (validate.errors ?? []).map((problem) => `${problem.instancePath || '(root)'} ${problem.message}${problem.params && 'allowedValue' in problem.params ? ` (${JSON.stringify(problem.params.allowedValue)})` : ''}`);
}
