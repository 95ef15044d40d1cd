import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { schemas } from '../src/checks/schemas';

const SCHEMA_DIR = path.join(__dirname, '..', 'schemas');

test('schemas/openapi.yaml is valid OpenAPI 3.1 and its external refs are the schemas the tests use', async () => {
  const { Validator } = await import('@seriousme/openapi-schema-validator');
  const validator = new Validator();
  const schemaFiles = readdirSync(SCHEMA_DIR).filter((file) => file.endsWith('.json'));
  const document = parse(readFileSync(path.join(SCHEMA_DIR, 'openapi.yaml'), 'utf8'));
  for (const file of schemaFiles) await validator.addSpecRef(JSON.parse(readFileSync(path.join(SCHEMA_DIR, file), 'utf8')), `./${file}`);
  const result = await validator.validate(document);
  assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
  assert.equal(validator.version, '3.1');
  const resolved = JSON.stringify(validator.resolveRefs());
  assert.match(resolved, /sessionDurationMs/, 'the stop result schema is inlined through its reference');

  const refs = new Set<string>();
  const visit = (node: unknown) => {
    if (node && typeof node === 'object') {
      for (const [key, value] of Object.entries(node)) {
        if (key === '$ref' && typeof value === 'string' && !value.startsWith('#')) refs.add(value.replace(/^\.\//, ''));
        else visit(value);
      }
    }
  };
  visit(parse(readFileSync(path.join(SCHEMA_DIR, 'openapi.yaml'), 'utf8')));
  assert.deepEqual([...refs].sort(), schemaFiles.sort(), 'every schema file is referenced, and every reference is a schema file');
  for (const file of schemaFiles) {
    const schema = JSON.parse(readFileSync(path.join(SCHEMA_DIR, file), 'utf8'));
    assert.equal(schema.$id, file, `${file} has $id ${file}, the name the OpenAPI document and the tests use`);
    assert.equal(schemas().validateSchema(schema), true, `${file} is a valid JSON Schema 2020-12: ${JSON.stringify(schemas().errors)}`);
    assert.equal(typeof schemas().getSchema(file), 'function', `${file} compiles with the suite's strict ajv`);
  }
});
