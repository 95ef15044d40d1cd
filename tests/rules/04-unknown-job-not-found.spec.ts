import { randomUUID } from 'node:crypto';
import { test, expect, stopPath } from '../support/fixtures';
import { rule } from '../support/rules';
import { summary } from '../support/exchange';

test('a stop of a random job id that was never provisioned answers 404 with an error body', rule('unknown-job', 'must'), async ({ api, identities }) => {
  const stop = await test.step('the owner stops a fresh random UUID', () =>
    api.send({ method: 'DELETE', path: stopPath(randomUUID()), as: identities.owner }),
  );
  expect(stop.status, summary(stop)).toBe(404);
  expect(stop.body).toMatchSchema('error');
});

test('a stop of a scrape job that never had a browser session answers 404 with an error body', rule('unknown-job', 'must'), async ({ api, identities, settings }) => {
  const scrape = await test.step('the owner creates a scrape job without a session', () =>
    api.send({ method: 'POST', path: '/v2/scrape', as: identities.owner, data: { url: settings.scrapeUrl } }),
  );
  expect(scrape.status, `provisioning: ${summary(scrape)}`).toBe(200);
  expect(scrape.body).toMatchSchema('scrape-result');
  const stop = await test.step('the owner stops that job\'s (absent) session', () =>
    api.send({ method: 'DELETE', path: stopPath(scrape.body!.data.metadata.scrapeId), as: identities.owner }),
  );
  expect(stop.status, summary(stop)).toBe(404);
  expect(stop.body).toMatchSchema('error');
});
