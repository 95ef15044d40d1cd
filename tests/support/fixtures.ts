/**
 * Fixtures of the conformance suite: the target and its identities, an `api` that sends one
 * request (timed, 429-tolerant, attached to the report with keys redacted), sessions
 * provisioned through the public flow and always stopped afterwards, and known deviations.
 */
import { test as base, type APIRequestContext, type TestInfo } from '@playwright/test';
import { randomBytes } from 'node:crypto';
import { displayName, label } from 'allure-js-commons';
import { readKnownDeviations, readSettings, type Settings } from './config';
import { redact, redactAuthorization, registerSecret } from './redact';
import { expect } from './schemas';
import { sendTimed, sleep } from './exchange';
import { loadTeams } from '../../reference/server';

export { expect };

export interface Target {
  baseURL: string;
  /** True when the target is a reference the suite started itself: its keys are those of fixtures/teams.json. */
  embedded: boolean;
  /** Required when not embedded. Never put keys in project `use` options: reporters print the config. */
  apiKey?: string;
  foreignApiKey?: string;
}

export interface Identity {
  name: string;
  /** The full `Authorization` value, or undefined to send no such header. */
  authorization?: string;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type JsonBody = Record<string, any> | undefined;

export interface Exchange {
  method: string;
  path: string;
  status: number;
  headers: Record<string, string>;
  text: string;
  /** Parsed JSON body, or undefined when the body is not JSON. */
  body: JsonBody;
  /** performance.now() just before the final attempt was sent and just after its whole answer arrived. */
  sentAt: number;
  receivedAt: number;
  attempts: number;
}

export interface SendOptions {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  as: Identity;
  data?: unknown;
  /** Back off and resend on 429 (default true); the burst turns it off. */
  retryOn429?: boolean;
  /** Attach the exchange to the report (default true); the burst attaches one summary instead. */
  attach?: boolean;
  /** Send with `sendTimed` instead of Playwright's request API: for the exchanges that bound a session's duration. */
  timed?: boolean;
}

export interface Session {
  jobId: string;
  /** The interact call that created the session. */
  created: Exchange;
}

export class SuiteError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SuiteError';
    this.stack = `${this.name}: ${message}`;
  }
}

export function targetFromEnv(): Target {
  const settings = readSettings();
  if (settings.baseURL) {
    return { baseURL: settings.baseURL, apiKey: settings.apiKey!, foreignApiKey: settings.foreignApiKey!, embedded: false };
  }
  const embeddedURL = process.env.CONFORMANCE_EMBEDDED_URL;
  if (!embeddedURL) throw new SuiteError('No target: the embedded reference was not started (run through playwright.config.ts).');
  return { baseURL: embeddedURL, embedded: true };
}

function keysOf(target: Target): { apiKey: string; foreignApiKey: string } {
  if (!target.embedded) return { apiKey: target.apiKey!, foreignApiKey: target.foreignApiKey! };
  const [owner, foreign] = loadTeams();
  return { apiKey: owner.keys[0], foreignApiKey: foreign.keys[0] };
}

export const stopPath = (jobId: string) => `/v2/scrape/${jobId}/interact`;

function retryAfterMs(value: string | undefined): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/**
 * Exponential back-off when no Retry-After is given: 1 s, 2 s, 4 s, capped at 8 s, ±20 % jitter. The
 * low cap keeps a waiting request from missing the start of the next rate-limit window.
 */
export function backoffMs(attempt: number, retryAfter: string | undefined): number {
  return retryAfterMs(retryAfter) ?? Math.min(1000 * 2 ** (attempt - 1), 8_000) * (0.8 + Math.random() * 0.4);
}

export function createApi(request: APIRequestContext, target: Target, settings: Settings, testInfo: TestInfo) {
  const stopped = new Set<string>();
  return {
    /** Jobs whose session this test stopped with a 200. */
    stopped,
    async send({ method, path, as, data, retryOn429 = true, attach: attachIt = true, timed = false }: SendOptions): Promise<Exchange> {
      const headers: Record<string, string> = as.authorization === undefined ? {} : { Authorization: as.authorization };
      const deadline = performance.now() + settings.backoffBudgetMs;
      for (let attempts = 1; ; attempts++) {
        let sentAt = performance.now();
        let receivedAt: number, status: number, responseHeaders: Record<string, string>, text: string;
        try {
          if (timed) {
            ({ sentAt, receivedAt, status, headers: responseHeaders, text } = await sendTimed(target.baseURL + path, method, headers, data, settings.requestTimeoutMs));
          } else {
            const response = await request.fetch(target.baseURL + path, {
              method,
              headers,
              data,
              timeout: settings.requestTimeoutMs,
              failOnStatusCode: false,
              maxRedirects: 0,
            });
            receivedAt = performance.now();
            status = response.status();
            responseHeaders = response.headers();
            text = await response.text();
          }
        } catch (error) {
          // Playwright's call log lists request headers verbatim: keep only its first line, redacted.
          throw new SuiteError(`${method} ${path} as ${as.name} failed: ${redact(String((error as Error).message).split('\n')[0])}`);
        }
        let body: JsonBody;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        const exchange: Exchange = { method, path, status, headers: responseHeaders, text, body, sentAt, receivedAt, attempts };
        if (status === 429 && retryOn429) {
          const wait = backoffMs(attempts, responseHeaders['retry-after']);
          if (performance.now() + wait <= deadline) {
            await sleep(wait);
            continue;
          }
          await attach(testInfo, exchange, as, data);
          throw new SuiteError(
            `${method} ${path} as ${as.name} still answered 429 after ${attempts} attempts: the back-off budget ` +
              `(BACKOFF_BUDGET_MS=${settings.backoffBudgetMs}) is used up. Raise it, or run fewer workers against this target.`,
          );
        }
        if (method === 'DELETE' && status === 200) stopped.add(path);
        if (attachIt) await attach(testInfo, exchange, as, data);
        return exchange;
      }
    },
  };
}

export type Api = ReturnType<typeof createApi>;

async function attach(testInfo: TestInfo, exchange: Exchange, as: Identity, data: unknown): Promise<void> {
  const record = {
    request: {
      method: exchange.method,
      path: exchange.path,
      identity: as.name,
      headers: as.authorization === undefined ? {} : { Authorization: redactAuthorization(as.authorization) },
      body: data,
    },
    response: { status: exchange.status, headers: exchange.headers, body: exchange.body ?? exchange.text },
    timing: { durationMs: +(exchange.receivedAt - exchange.sentAt).toFixed(2), attempts: exchange.attempts },
  };
  await testInfo.attach(`${exchange.method} ${exchange.path} as ${as.name} → ${exchange.status}`, {
    body: redact(JSON.stringify(record, null, 2)),
    contentType: 'application/json',
  });
}

type Identities = Record<'owner' | 'foreign' | 'noKey' | 'emptyToken' | 'garbage' | 'unknownKey' | 'basicScheme' | 'tokenScheme' | 'lowerCaseBearer', Identity>;

export const test = base.extend<
  { api: Api; provision: () => Promise<Session>; session: Session; knownDeviation: void },
  { target: Target; settings: Settings; identities: Identities; knownDeviations: Map<string, string> }
>({
  target: [async ({}, use) => use(targetFromEnv()), { scope: 'worker', option: true }],

  settings: [async ({}, use) => use(readSettings()), { scope: 'worker' }],

  knownDeviations: [
    async ({ settings }, use) => use(settings.knownDeviationsFile ? readKnownDeviations(settings.knownDeviationsFile) : new Map()),
    { scope: 'worker' },
  ],

  identities: [
    async ({ target }, use) => {
      const { apiKey, foreignApiKey } = keysOf(target);
      registerSecret(apiKey, 'API_KEY');
      registerSecret(foreignApiKey, 'FOREIGN_API_KEY');
      await use({
        owner: { name: 'owner team', authorization: `Bearer ${apiKey}` },
        foreign: { name: 'foreign team', authorization: `Bearer ${foreignApiKey}` },
        noKey: { name: 'no Authorization header' },
        emptyToken: { name: 'Bearer with no token', authorization: 'Bearer ' },
        garbage: { name: 'garbage credential', authorization: 'garbage%%not-a-credential' },
        unknownKey: { name: 'unknown well-formed key', authorization: `Bearer fc-${randomBytes(16).toString('hex')}` },
        basicScheme: { name: "owner's key under Basic", authorization: `Basic ${apiKey}` },
        tokenScheme: { name: "owner's key under Token", authorization: `Token ${apiKey}` },
        lowerCaseBearer: { name: "owner's key under lower-case bearer", authorization: `bearer ${apiKey}` },
      });
    },
    { scope: 'worker' },
  ],

  api: async ({ request, target, settings, identities }, use, testInfo) => {
    void identities; // registers the keys for redaction before any request
    await use(createApi(request, target, settings, testInfo));
  },

  provision: async ({ api, identities, settings }, use) => {
    const sessions: Session[] = [];
    await use(async () => {
      // Timed like the interact that follows, so that the interact is not the first timed exchange
      // of its worker (the first one is a few milliseconds slower).
      const scrape = await api.send({ method: 'POST', path: '/v2/scrape', as: identities.owner, data: { url: settings.scrapeUrl }, timed: true });
      expect(scrape.status, 'provisioning: POST /v2/scrape must answer 200').toBe(200);
      expect(scrape.body, 'provisioning: POST /v2/scrape').toMatchSchema('scrape-result');
      const jobId: string = scrape.body!.data.metadata.scrapeId;
      const created = await api.send({
        method: 'POST',
        path: stopPath(jobId),
        as: identities.owner,
        data: { code: 'console.log("conformance session")', language: 'node' },
        timed: true,
      });
      expect(created.status, 'provisioning: POST /v2/scrape/{jobId}/interact must answer 200').toBe(200);
      expect(created.body, 'provisioning: POST /v2/scrape/{jobId}/interact').toMatchSchema('interact-result');
      const session = { jobId, created };
      sessions.push(session);
      return session;
    });
    const leaked: string[] = [];
    for (const { jobId } of sessions) {
      if (api.stopped.has(stopPath(jobId))) continue;
      const stop = await api.send({ method: 'DELETE', path: stopPath(jobId), as: identities.owner });
      if (stop.status !== 200 && stop.status !== 404) leaked.push(`${jobId} (stop answered ${stop.status})`);
    }
    if (leaked.length) throw new SuiteError(`Could not stop ${leaked.length} session(s) this test provisioned: ${leaked.join(', ')}`);
  },

  session: async ({ provision }, use) => use(await provision()),

  knownDeviation: [
    async ({ knownDeviations }, use, testInfo) => {
      const reason = knownDeviations.get(testInfo.title);
      if (reason) {
        testInfo.annotations.push({ type: 'known-deviation', description: reason });
        await label('knownDeviation', reason);
        await displayName(`[known deviation] ${testInfo.title}`);
        testInfo.fail(true, `Known deviation of this target: ${reason}`);
      }
      await use();
    },
    { auto: true },
  ],
});
