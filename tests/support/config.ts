/**
 * Settings of a conformance run, read from the environment (and `.env`), validated as a whole
 * so that a bad configuration gives one clear message instead of a cascade of failing tests.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import dotenv from 'dotenv';
import { sendTimed } from './exchange';

if (!process.env.CONFORMANCE_IGNORE_DOTENV) dotenv.config({ quiet: true });

export interface Settings {
  /** Undefined: the embedded reference is the target. */
  baseURL?: string;
  apiKey?: string;
  foreignApiKey?: string;
  scrapeUrl: string;
  burstRequests: number;
  burstConcurrency: number;
  billingHoldsMs: number[];
  requestTimeoutMs: number;
  backoffBudgetMs: number;
  durationToleranceMs: number;
  creditTolerance: number;
  testTimeoutMs: number;
  knownDeviationsFile?: string;
}

export class ConfigurationError extends Error {
  constructor(problems: string[]) {
    super(`Configuration error:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
    this.name = 'ConfigurationError';
    this.stack = this.message;
  }
}

/** readSettings for entry points: a configuration error ends the process with one message and exit code 2. */
export function readSettingsOrExit(env: NodeJS.ProcessEnv = process.env): Settings {
  try {
    return readSettings(env);
  } catch (error) {
    if (!(error instanceof ConfigurationError)) throw error;
    console.error(error.message);
    process.exit(2);
  }
}

export function readSettings(env: NodeJS.ProcessEnv = process.env): Settings {
  const problems: string[] = [];
  const integer = (name: string, fallback: number, min = 1): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min) problems.push(`${name} must be an integer of at least ${min} (got "${raw}").`);
    return value;
  };

  const baseURL = env.BASE_URL ? normaliseBaseURL(env.BASE_URL, problems) : undefined;
  const apiKey = env.API_KEY || undefined;
  const foreignApiKey = env.FOREIGN_API_KEY || undefined;
  if (baseURL) {
    if (!apiKey) problems.push('BASE_URL is set but API_KEY (the owner team\'s key) is not.');
    if (!foreignApiKey) problems.push('BASE_URL is set but FOREIGN_API_KEY (another team\'s key) is not.');
  } else if (!env.BASE_URL && (apiKey || foreignApiKey)) {
    problems.push('API_KEY or FOREIGN_API_KEY is set without BASE_URL: set BASE_URL to test that target, or unset the keys to test the embedded reference.');
  }
  if (apiKey && apiKey === foreignApiKey) problems.push('API_KEY and FOREIGN_API_KEY are the same key: the foreign key must belong to another team.');
  for (const [name, key] of [['API_KEY', apiKey], ['FOREIGN_API_KEY', foreignApiKey]] as const) {
    if (key && /\s/.test(key)) problems.push(`${name} contains white space.`);
  }

  const scrapeUrl = env.SCRAPE_URL || 'https://example.com';
  if (!/^https?:\/\/\S+$/.test(scrapeUrl)) problems.push(`SCRAPE_URL must be an http(s) URL (got "${scrapeUrl}").`);

  const burstRequests = integer('BURST_REQUESTS', 200, 2);
  const burstConcurrency = integer('BURST_CONCURRENCY', burstRequests);
  const requestTimeoutMs = integer('REQUEST_TIMEOUT_MS', 30_000);
  const backoffBudgetMs = integer('BACKOFF_BUDGET_MS', 300_000, 0);
  const durationToleranceMs = integer('DURATION_TOLERANCE_MS', 20, 0);

  const billingHoldsMs = (env.BILLING_HOLDS_MS || '1250,2500,3750').split(',').map((part) => Number(part.trim()));
  if (billingHoldsMs.length !== 3 || billingHoldsMs.some((ms) => !Number.isInteger(ms) || ms < 1 || ms % 1000 === 0) || new Set(billingHoldsMs).size !== 3) {
    problems.push(`BILLING_HOLDS_MS must be three different whole numbers of milliseconds, none a whole second (got "${env.BILLING_HOLDS_MS}").`);
  }

  const longestHold = Math.max(...billingHoldsMs.filter(Number.isFinite), 0);
  const testTimeoutMs = integer('TEST_TIMEOUT_MS', baseURL ? longestHold + 6 * backoffBudgetMs + 4 * requestTimeoutMs : 30_000);

  let knownDeviationsFile: string | undefined;
  if (env.KNOWN_DEVIATIONS) {
    knownDeviationsFile = path.resolve(env.KNOWN_DEVIATIONS);
    if (!existsSync(knownDeviationsFile)) problems.push(`KNOWN_DEVIATIONS names a file that does not exist: ${env.KNOWN_DEVIATIONS}`);
    else {
      try {
        readKnownDeviations(knownDeviationsFile);
      } catch (error) {
        problems.push(`KNOWN_DEVIATIONS: ${(error as Error).message}`);
      }
    }
  }

  if (problems.length) throw new ConfigurationError(problems);
  return {
    baseURL,
    apiKey,
    foreignApiKey,
    scrapeUrl,
    burstRequests,
    burstConcurrency,
    billingHoldsMs,
    requestTimeoutMs,
    backoffBudgetMs,
    durationToleranceMs,
    creditTolerance: 0.005,
    testTimeoutMs,
    knownDeviationsFile,
  };
}

function normaliseBaseURL(raw: string, problems: string[]): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    problems.push(`BASE_URL is not a valid URL: "${raw}".`);
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') problems.push(`BASE_URL must use http or https (got "${url.protocol}").`);
  if (url.username || url.password) problems.push('BASE_URL must not carry credentials: use API_KEY.');
  if (url.search || url.hash) problems.push('BASE_URL must not have a query or fragment.');
  const base = url.origin + url.pathname.replace(/\/+$/, '');
  if (/\/v2$/.test(base)) problems.push('BASE_URL must not end with /v2: the suite adds the version segment itself.');
  return base;
}

export interface KnownDeviation {
  test: string;
  reason: string;
}

export function readKnownDeviations(file: string): Map<string, string> {
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as { deviations?: KnownDeviation[] };
  if (!Array.isArray(parsed.deviations)) throw new Error(`${file} must hold {"deviations": [{"test", "reason"}]}.`);
  const deviations = new Map<string, string>();
  for (const entry of parsed.deviations) {
    if (typeof entry?.test !== 'string' || typeof entry.reason !== 'string' || !entry.reason.trim()) {
      throw new Error(`${file}: every deviation needs a "test" title and a "reason".`);
    }
    deviations.set(entry.test, entry.reason);
  }
  return deviations;
}

/** Any HTTP answer proves the target reachable; a refused connection or a timeout does not. */
export async function checkReachable(baseURL: string, timeoutMs: number): Promise<void> {
  try {
    await sendTimed(`${baseURL}/v2/scrape`, 'OPTIONS', {}, undefined, Math.min(timeoutMs, 10_000));
  } catch (error) {
    throw new ConfigurationError([`The target ${baseURL} is unreachable (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}).`]);
  }
}
