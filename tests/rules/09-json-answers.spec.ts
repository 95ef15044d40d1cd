import { randomUUID } from 'node:crypto';
import { test, expect, stopPath, type Exchange } from '../support/fixtures';
import { rule } from '../support/rules';
import { JSON_CONTENT_TYPE, summary } from '../support/exchange';

function expectJsonError(exchange: Exchange) {
  expect(exchange.status, summary(exchange)).toBeGreaterThanOrEqual(400);
  expect(exchange.headers['content-type'], `Content-Type of the ${exchange.status} answer`).toMatch(JSON_CONTENT_TYPE);
  expect(exchange.body).toMatchSchema('error');
}

test('a 404 answer is application/json with success false and a short single-line error', rule('json-answers', 'must'), async ({ api, identities }) => {
  const stop = await api.send({ method: 'DELETE', path: stopPath(randomUUID()), as: identities.owner });
  expect(stop.status, summary(stop)).toBe(404);
  expectJsonError(stop);
});

test('a 403 answer is application/json with success false and a short single-line error', rule('json-answers', 'must'), async ({ api, session, identities }) => {
  const stop = await api.send({ method: 'DELETE', path: stopPath(session.jobId), as: identities.foreign });
  expect(stop.status, summary(stop)).toBe(403);
  expectJsonError(stop);
});

test('the refusal of a request without a key is application/json with success false and a short single-line error', rule('json-answers', 'inferred'), async ({ api, identities }) => {
  expectJsonError(await api.send({ method: 'DELETE', path: stopPath(randomUUID()), as: identities.noKey }));
});

test('the refusal of an unknown key is application/json with success false and a short single-line error', rule('json-answers', 'inferred'), async ({ api, identities }) => {
  expectJsonError(await api.send({ method: 'DELETE', path: stopPath(randomUUID()), as: identities.unknownKey }));
});

test('the refusal of a malformed jobId is application/json with success false and a short single-line error', rule('json-answers', 'inferred'), async ({ api, identities }) => {
  expectJsonError(await api.send({ method: 'DELETE', path: stopPath('not-a-uuid'), as: identities.owner }));
});
