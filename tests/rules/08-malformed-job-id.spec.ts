import { randomUUID } from 'node:crypto';
import { spec, type TestId } from '../../src/config/rules';
import { judge } from '../../src/domain/named-checks';
import { test } from '../../src/playwright/fixtures';

// Asked by both teams: a jobId's syntax is judged before any team's jobs are looked up.
const malformed: { id: TestId; name: string; jobId: string; who: 'owner' | 'foreign' }[] = [
  { id: 'malformed-job-id/not-a-uuid', name: 'not a UUID', jobId: 'not-a-uuid', who: 'owner' },
  { id: 'malformed-job-id/uuid-too-long', name: 'a UUID with one character too many', jobId: '3f2a1c4e-8b7d-4e6f-9a0b-1c2d3e4f5a6b7', who: 'foreign' },
  { id: 'malformed-job-id/very-long', name: 'very long (4096 characters)', jobId: 'a'.repeat(4096), who: 'foreign' },
  { id: 'malformed-job-id/path-like', name: 'path-like (percent-encoded slashes and dots)', jobId: '..%2F..%2Fv2%2Fscrape', who: 'owner' },
  { id: 'malformed-job-id/broken-percent-encoding', name: 'a broken percent-encoding', jobId: '%E0%A4%A', who: 'foreign' },
  { id: 'malformed-job-id/nul-byte', name: 'a percent-encoded NUL byte', jobId: '%00', who: 'owner' },
  { id: 'malformed-job-id/undefined-text', name: 'the text "undefined"', jobId: 'undefined', who: 'foreign' },
];

for (const { id, name, jobId, who } of malformed)
  test(`a stop whose jobId is ${name} answers 4xx, never 5xx`, spec(id), async ({ api, identities, check }) => {
    const as = identities[who];
    const stop = await api.stop(jobId, as).catch(async (error) => {
      // A connection closed on this request alone, while the target answers the next: the target's, not the network's.
      if (!/ECONNRESET|socket hang up/.test(String(error)) || (await api.stop(randomUUID(), as)).status >= 500) throw error;
      return undefined;
    });
    const closed = 'the target closed the connection without answering this stop, though it answers the next: a malformed jobId must get a 4xx answer';
    if (!stop)
      return check('status', () => {
        throw new Error(closed);
      });
    await check('status', judge.clientError(stop));
  });
