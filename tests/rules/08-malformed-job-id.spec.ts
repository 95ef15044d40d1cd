import { spec, type TestId } from '../../src/config/rules';
import { malformedStop } from '../../src/domain/malformed';
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
  test(`a stop whose jobId is ${name} answers 4xx, never 5xx`, spec(id), async ({ api, sessions, identities, settings, check }) =>
    malformedStop({ api, sessions, settings, check }, identities[who], jobId, id),
  );
