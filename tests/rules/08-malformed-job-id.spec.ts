import { test, expect, stopPath } from '../support/fixtures';
import { rule } from '../support/rules';
import { summary } from '../support/exchange';

const malformed = [
  { name: 'not a UUID', jobId: 'not-a-uuid' },
  { name: 'a UUID with one character too many', jobId: '3f2a1c4e-8b7d-4e6f-9a0b-1c2d3e4f5a6b7' },
  { name: 'very long (4096 characters)', jobId: 'a'.repeat(4096) },
  { name: 'path-like (percent-encoded slashes and dots)', jobId: '..%2F..%2Fv2%2Fscrape' },
  { name: 'a broken percent-encoding', jobId: '%E0%A4%A' },
  { name: 'a percent-encoded NUL byte', jobId: '%00' },
  { name: 'the text "undefined"', jobId: 'undefined' },
];

for (const { name, jobId } of malformed) {
  test(`a stop whose jobId is ${name} answers 4xx, never 5xx`, rule('malformed-job-id', 'inferred'), async ({ api, identities }) => {
    const stop = await api.send({ method: 'DELETE', path: stopPath(jobId), as: identities.owner });
    expect(stop.status, summary(stop)).toBeGreaterThanOrEqual(400);
    expect(stop.status, summary(stop)).toBeLessThan(500);
  });
}
