/**
 * Settings of a run: the one place that reads the environment (and `.env`). Validated as a whole,
 * so that a bad configuration gives one message listing every problem instead of failing tests.
 * Each process reads them once (`loadSettings`); fixtures, reporters and scripts take them from here.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import dotenv from 'dotenv';
import {
  type DeclaredBilling,
  type DeclaredClock,
  type DeclaredSchemeWord,
  type KnownDeviation,
  type KnownDeviations,
  readKnownDeviations,
} from './deviations';
import { parseRate, type Rate } from './rates';

export interface Settings {
  /** The target's address without /v2; for the embedded reference, the address it was started on. */
  baseURL?: string;
  /** True when the suite started the reference itself: its keys are those of fixtures/teams.json. */
  embedded: boolean;
  apiKey?: string;
  foreignApiKey?: string;
  /** A third team's key: the rate-limit burst drains its limiter instead of the owner's, beside the other tests. */
  burstApiKey?: string;
  scrapeUrl: string;
  burstRequests: number;
  burstSeconds: number;
  burstConcurrency: number;
  /** Answers within one second that no plan allows: a burst that reaches it without a 429 proves there is no limit. */
  burstProofRate: number;
  billingHoldsMs: number[];
  /** The hold of the billing test past a minute: across a minute boundary against a remote target, short against the embedded reference. */
  billingMinuteHoldMs: number;
  /** Scrape-to-interact gap of the short billing check: a clock started at the scrape is off by this much. */
  scrapeGapMs: number;
  requestTimeoutMs: number;
  backoffBudgetMs: number;
  durationToleranceMs: number;
  creditTolerance: number;
  maxBodyBytes: number;
  testTimeoutMs: number;
  runTimeoutMs: number;
  knownDeviationsFile?: string;
  knownDeviations: KnownDeviation[];
  /** The target's billing rule, declared in its known-deviations file instead of the specification's. */
  declaredBilling?: DeclaredBilling;
  /** Declared in the same file: the target takes the key after any scheme word. */
  declaredSchemeWord?: DeclaredSchemeWord;
  /** Declared in the same file: durations come from the target's clock, in steps of its resolution. */
  declaredClock?: DeclaredClock;
  strict: boolean;
  /** Known deviations leave reproductions too (REPRODUCE_DEVIATIONS=1). */
  reproduceDeviations: boolean;
  reportsDir: string;
  /** Seeds of the sequences rule, each running SEQUENCE_RUNS histories; random when unset. */
  sequenceSeeds?: number[];
  /** Most random histories per seed: Infinity (no cap) against a remote target unless given. */
  sequenceRuns: number;
  /** Most requests to stop and interact the sequences rule sends in all: Infinity against a remote target unless given. */
  sequenceBudget: number;
  /** How long the sequences rule searches, shrinking included. */
  sequenceSeconds: number;
  /** The target's cap on each team's live sessions, when stated up front; otherwise the run learns it. */
  sessionCap?: number;
  /** Each team's rate limit on stop and interact, when stated up front; otherwise the run learns it. */
  rateLimit?: Rate;
  /** Hold the owner team's credit counter to the settlements the run saw (where the target has one). */
  accountCheck: boolean;
  /** How long the account check waits for charges the target queues to land. */
  accountSettleMs: number;
  /** The rules the command chose (--rule, --skip-rule); undefined for all. */
  selectedRules?: string[];
  /** Most browser sessions the run opens, every team's together. */
  sessionBudget: number;
  /** Most credits the run may spend at the target's price, where the user set one: the session budget shrinks to fit. */
  creditBudget?: number;
  /** Where the sessions of the budget are kept when several processes share it (the command's --shards). */
  budgetFolder?: string;
}

export class ConfigurationError extends Error {
  constructor(readonly problems: string[]) {
    super(`Configuration error:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
    this.name = 'ConfigurationError';
    this.stack = this.message;
  }
}

/** Every setting, for --help and the README: variable, flag of the command, default, meaning. */
export const SETTINGS_TABLE: { env: string; flag?: string; default: string; meaning: string }[] = [
  {
    env: 'BASE_URL',
    flag: '--base-url',
    default: 'embedded reference',
    meaning: 'Address of the target, without /v2. Unset: the embedded reference is started on an ephemeral port.',
  },
  { env: 'API_KEY', default: 'fixture key', meaning: 'Key of the team that owns the sessions the suite creates (required with BASE_URL).' },
  { env: 'FOREIGN_API_KEY', default: 'fixture key', meaning: 'Key of another team (required with BASE_URL, must differ).' },
  {
    env: 'BURST_API_KEY',
    default: 'fixture key; none with BASE_URL',
    meaning:
      "Key of a third team (optional, must differ). The burst then drains that team's limit and runs beside the other tests; without it, it drains the owner's and runs alone, last. Only for a target that limits per team.",
  },
  { env: 'KNOWN_DEVIATIONS', flag: '--known-deviations', default: 'none', meaning: 'Known-deviations file of the target.' },
  { env: 'STRICT', flag: '--strict', default: '0', meaning: 'With 1, a test that cannot be verified fails the gate.' },
  {
    env: 'REPRODUCE_DEVIATIONS',
    default: '0',
    meaning:
      "With 1, a test that ends as a known deviation leaves a reproduction too (reports/reproductions/), as a failed test does: it shows the deviation against the specification's checks.",
  },
  { env: 'REPORTS_DIR', flag: '--reports', default: 'reports', meaning: 'Folder of the reports and the ledger, relative to the working directory.' },
  { env: 'SCRAPE_URL', default: 'https://example.com', meaning: 'Page scraped to provision sessions.' },
  {
    env: 'BURST_REQUESTS',
    default: '2000',
    meaning:
      'Most requests the rate-limit burst sends; it stops at its first 429 (once a stop of a live session was throttled too). More than twice what the target allows in one window, so that a burst split by a window boundary is still limited.',
  },
  { env: 'BURST_SECONDS', default: '10', meaning: 'Longest time the rate-limit burst sends.' },
  { env: 'BURST_CONCURRENCY', default: '200', meaning: 'Requests in flight at once during the burst (at most BURST_REQUESTS).' },
  {
    env: 'BURST_PROOF_RATE',
    default: '400',
    meaning:
      'Answers within one second that no plan of the target allows. A burst that reaches it without a 429 fails (the target does not rate-limit); one that stays below it without a 429 is an error of the run (the client was too slow to tell).',
  },
  { env: 'BILLING_HOLDS_MS', default: '1250,2500,3750', meaning: 'The three hold times of the billing rule (different, none a whole second).' },
  {
    env: 'BILLING_MINUTE_HOLD_MS',
    default: '61250; 3250 embedded',
    meaning:
      'The hold of billing/past-a-minute (not a whole second): across a minute boundary, where billing by the started minute or a rate off after the first minute shows. Beside the other tests, so a run against a remote target barely grows. The embedded reference keeps it short, and the test says so.',
  },
  {
    env: 'SCRAPE_GAP_MS',
    default: '2000',
    meaning: 'Pause between scrape and interact in the short billing check: at 2 s or more, a clock started at the scrape shows in the credits alone.',
  },
  { env: 'REQUEST_TIMEOUT_MS', default: '30000', meaning: 'Total deadline of one request, body included.' },
  { env: 'MAX_BODY_BYTES', default: '1048576', meaning: 'Largest answer body read, after decompression.' },
  {
    env: 'BACKOFF_BUDGET_MS',
    default: '300000',
    meaning:
      "How long one request may keep retrying after 429; once one waited it in vain, the team's other requests on that limit give up (its stops after 5 s more) until one gets through.",
  },
  { env: 'DURATION_TOLERANCE_MS', default: '20', meaning: 'Widening of the measured interval on each side.' },
  { env: 'TEST_TIMEOUT_MS', default: '30000 embedded; derived from the budget otherwise', meaning: 'Timeout of one test.' },
  { env: 'RUN_TIMEOUT_MS', default: '600000 embedded; 3600000 otherwise', meaning: 'Timeout of the whole run.' },
  {
    env: 'SEQUENCE_SEED',
    default: 'random',
    meaning: 'Seed of the sequences rule (several, comma-separated, run one after the other); replays a printed counterexample.',
  },
  {
    env: 'SEQUENCE_SECONDS',
    default: '10 embedded (its budget of requests ends it first); 60 otherwise',
    meaning:
      'How long the sequences rule searches (shrinking included), at the pace the target allows: short histories over one session systematically, then random ones.',
  },
  { env: 'SEQUENCE_RUNS', default: '50 embedded; no cap otherwise', meaning: 'Most random histories the sequences rule runs per seed.' },
  {
    env: 'SEQUENCE_BUDGET',
    default: '300 embedded; no cap otherwise',
    meaning: 'Most requests to stop and interact the sequences rule sends in all, shrinking included.',
  },
  {
    env: 'SESSION_CAP',
    default: 'learnt',
    meaning:
      "The target's cap on each team's live browser sessions, when known. Unset: the run learns it when an interact that would open a session is refused with 429 twice in a row while the team's rate limit has room.",
  },
  {
    env: 'RATE_LIMIT',
    default: 'learnt',
    meaning:
      "Each team's rate limit on stop and interact, when known (`10/min` on the hosted service's free plan, `100/min`, `5/s`). Unset: the run learns it from the first 429 that is not a cap's, and from then on its workers share a schedule under it.",
  },
  {
    env: 'ACCOUNT_CHECK',
    default: '1',
    meaning:
      "With 0, the owner team's credit counter (GET /v2/team/credit-usage) is not read. With 1, where the target answers it, the run reads it before its first scrape and after its last settlement and checks that the account was charged exactly the settlements and scrapes the run saw. Turn it off when someone else uses that team during the run.",
  },
  {
    env: 'ACCOUNT_SETTLE_MS',
    default: '5000 embedded; 60000 otherwise',
    meaning: 'How long the account check waits for charges the target queues to land on the account.',
  },
  {
    env: 'SESSION_BUDGET',
    flag: '--session-budget',
    default: '40; 200 embedded',
    meaning:
      "Most browser sessions the run opens, every team's together: each is a scrape job and a real browser on the target. The rules' own tests come first; the sequences rule searches with what is left. A test that cannot get a session is not verifiable, and says which budget would verify it.",
  },
  {
    env: 'CREDIT_BUDGET',
    flag: '--credit-budget',
    default: 'none',
    meaning:
      "Most credits the run may spend at the target's price (its declared billing rule, or the specification's; a scrape at its stated price, else 1): the session budget shrinks until the predicted cost fits.",
  },
  { env: 'ALLOW_INSECURE_HTTP', default: '0', meaning: 'With 1, allow plain http to a host other than loopback (keys travel in clear).' },
];

/** Set by the command to the rules `--rule` and `--skip-rule` chose; read here only. */
export const SELECTED_RULES_VARIABLE = 'CONFORMANCE_RULES';

/** Set by the command for its shards, which share one session budget; read here only. */
export const BUDGET_FOLDER_VARIABLE = 'CONFORMANCE_BUDGET_FOLDER';

/** Set by the embedded reference's global setup; read here only. */
export const EMBEDDED_URL_VARIABLE = 'CONFORMANCE_EMBEDDED_URL';

let loaded: Settings | undefined;

/** The settings of this process, read once. */
export function loadSettings(): Settings {
  if (!process.env.CONFORMANCE_IGNORE_DOTENV) dotenv.config({ quiet: true });
  return (loaded ??= readSettings(process.env));
}

/** For entry points: a configuration error ends the process with one message and exit code 2. */
export function loadSettingsOrExit(): Settings {
  try {
    return loadSettings();
  } catch (error) {
    if (!(error instanceof ConfigurationError)) throw error;
    console.error(error.message);
    process.exit(2);
  }
}

/** Reads values of the environment, collecting every problem instead of stopping at the first. */
function reader(env: NodeJS.ProcessEnv, problems: string[]) {
  return {
    integer(name: string, fallback: number, min = 1): number {
      const raw = env[name];
      if (raw === undefined || raw === '') return fallback;
      const value = Number(raw);
      if (!Number.isInteger(value) || value < min) problems.push(`${name} must be an integer of at least ${min} (got "${raw}").`);
      return value;
    },
    flag(name: string): boolean {
      const raw = env[name] ?? '';
      if (!['', '0', '1', 'true', 'false'].includes(raw)) problems.push(`${name} must be 1 or 0 (got "${raw}").`);
      return raw === '1' || raw === 'true';
    },
  };
}

export function readSettings(env: NodeJS.ProcessEnv): Settings {
  const problems: string[] = [];
  const { integer, flag } = reader(env, problems);
  const target = readTarget(env, problems, flag('ALLOW_INSECURE_HTTP'));
  const external = !target.embedded;

  const scrapeUrl = env.SCRAPE_URL || 'https://example.com';
  if (!/^https?:\/\/\S+$/.test(scrapeUrl)) problems.push(`SCRAPE_URL must be an http(s) URL (got "${scrapeUrl}").`);
  const burstRequests = integer('BURST_REQUESTS', 2000, 2);
  const requestTimeoutMs = integer('REQUEST_TIMEOUT_MS', 30_000);
  const backoffBudgetMs = integer('BACKOFF_BUDGET_MS', 300_000, 0);
  const billing = readBilling(env, problems, external);
  // billing/past-a-minute adds its own hold to its timeout.
  const longestHold = Math.max(...billing.billingHoldsMs.filter(Number.isFinite), 0);

  const knownDeviationsFile = env.KNOWN_DEVIATIONS ? path.resolve(env.KNOWN_DEVIATIONS) : undefined;
  const sequenceSeeds = env.SEQUENCE_SEED ? env.SEQUENCE_SEED.split(',').map((part) => Number(part.trim())) : undefined;
  if (sequenceSeeds?.some((seed) => !Number.isInteger(seed)))
    problems.push(`SEQUENCE_SEED must be an integer, or several separated by commas (got "${env.SEQUENCE_SEED}").`);

  const read = knownDeviationsFile ? readDeviationsFile(knownDeviationsFile, env.KNOWN_DEVIATIONS!, problems) : undefined;
  const declared = {
    knownDeviations: read?.deviations ?? [],
    declaredBilling: read?.billing,
    declaredSchemeWord: read?.authentication,
    declaredClock: read?.clock,
  };
  const settings: Settings = {
    ...target,
    ...billing,
    scrapeUrl,
    burstRequests,
    burstSeconds: integer('BURST_SECONDS', 10),
    burstConcurrency: integer('BURST_CONCURRENCY', Math.min(burstRequests, 200)),
    burstProofRate: integer('BURST_PROOF_RATE', 400),
    requestTimeoutMs,
    backoffBudgetMs,
    creditTolerance: 0.005,
    maxBodyBytes: integer('MAX_BODY_BYTES', 1024 * 1024, 1024),
    testTimeoutMs: integer('TEST_TIMEOUT_MS', external ? longestHold + 6 * backoffBudgetMs + 4 * requestTimeoutMs : 30_000),
    runTimeoutMs: integer('RUN_TIMEOUT_MS', external ? 3_600_000 : 600_000),
    knownDeviationsFile,
    ...declared,
    strict: flag('STRICT'),
    reproduceDeviations: flag('REPRODUCE_DEVIATIONS'),
    reportsDir: path.resolve(env.REPORTS_DIR || 'reports'),
    sequenceSeeds,
    sequenceRuns: integer('SEQUENCE_RUNS', external ? Infinity : 50),
    sequenceBudget: integer('SEQUENCE_BUDGET', external ? Infinity : 300, 10),
    sequenceSeconds: integer('SEQUENCE_SECONDS', external ? 60 : 10),
    sessionCap: env.SESSION_CAP ? integer('SESSION_CAP', 0, 1) : undefined,
    rateLimit: readRateLimit(env.RATE_LIMIT, problems),
    accountCheck: env.ACCOUNT_CHECK === undefined || env.ACCOUNT_CHECK === '' ? true : flag('ACCOUNT_CHECK'),
    accountSettleMs: integer('ACCOUNT_SETTLE_MS', external ? 60_000 : 5_000, 0),
    selectedRules: env[SELECTED_RULES_VARIABLE] ? env[SELECTED_RULES_VARIABLE].split(',') : undefined,
    sessionBudget: integer('SESSION_BUDGET', external ? 40 : 200, 0),
    creditBudget: readCredits(env.CREDIT_BUDGET, problems),
    budgetFolder: env[BUDGET_FOLDER_VARIABLE] || undefined,
  };
  if (problems.length) throw new ConfigurationError(problems);
  return settings;
}

/** The target and its keys: an external BASE_URL with two or three teams' keys, or the embedded reference with none. */
function readTarget(
  env: NodeJS.ProcessEnv,
  problems: string[],
  allowInsecureHttp: boolean,
): Pick<Settings, 'baseURL' | 'embedded' | 'apiKey' | 'foreignApiKey' | 'burstApiKey'> {
  const external = env.BASE_URL ? normaliseBaseURL(env.BASE_URL, allowInsecureHttp, problems) : undefined;
  const apiKey = env.API_KEY || undefined;
  const foreignApiKey = env.FOREIGN_API_KEY || undefined;
  const burstApiKey = env.BURST_API_KEY || undefined;
  if (env.BASE_URL) {
    if (!apiKey) problems.push("BASE_URL is set but API_KEY (the owner team's key) is not.");
    if (!foreignApiKey) problems.push("BASE_URL is set but FOREIGN_API_KEY (another team's key) is not.");
  } else if (apiKey || foreignApiKey || burstApiKey) {
    problems.push(
      'API_KEY, FOREIGN_API_KEY or BURST_API_KEY is set without BASE_URL: set BASE_URL to test that target, or unset the keys to test the embedded reference.',
    );
  }
  if (apiKey && apiKey === foreignApiKey) problems.push('API_KEY and FOREIGN_API_KEY are the same key: the foreign key must belong to another team.');
  if (burstApiKey && (burstApiKey === apiKey || burstApiKey === foreignApiKey))
    problems.push('BURST_API_KEY is the same key as API_KEY or FOREIGN_API_KEY: it must belong to a third team.');
  for (const [name, key] of [
    ['API_KEY', apiKey],
    ['FOREIGN_API_KEY', foreignApiKey],
    ['BURST_API_KEY', burstApiKey],
  ] as const) {
    if (key && /\s/.test(key)) problems.push(`${name} contains white space.`);
    if (key && key.length < 8) problems.push(`${name} is shorter than 8 characters: is it really a key?`);
  }
  return { baseURL: external ?? (env[EMBEDDED_URL_VARIABLE] || undefined), embedded: !env.BASE_URL, apiKey, foreignApiKey, burstApiKey };
}

/** The billing rule's holds, scrape gap and tolerance, consistent with one another. */
function readBilling(
  env: NodeJS.ProcessEnv,
  problems: string[],
  external: boolean,
): Pick<Settings, 'billingHoldsMs' | 'billingMinuteHoldMs' | 'scrapeGapMs' | 'durationToleranceMs'> {
  const { integer } = reader(env, problems);
  const durationToleranceMs = integer('DURATION_TOLERANCE_MS', 20, 0);
  const scrapeGapMs = integer('SCRAPE_GAP_MS', 2000, 0);
  const billingHoldsMs = (env.BILLING_HOLDS_MS || '1250,2500,3750').split(',').map((part) => Number(part.trim()));
  if (billingHoldsMs.length !== 3 || billingHoldsMs.some((ms) => !Number.isInteger(ms) || ms < 1 || ms % 1000 === 0) || new Set(billingHoldsMs).size !== 3) {
    problems.push(`BILLING_HOLDS_MS must be three different whole numbers of milliseconds, none a whole second (got "${env.BILLING_HOLDS_MS}").`);
  }
  const billingMinuteHoldMs = integer('BILLING_MINUTE_HOLD_MS', external ? 61_250 : 3_250);
  if (billingMinuteHoldMs % 1000 === 0) problems.push(`BILLING_MINUTE_HOLD_MS must not be a whole second (got ${billingMinuteHoldMs}).`);
  if (scrapeGapMs <= 2 * durationToleranceMs && scrapeGapMs !== 0) {
    problems.push(`SCRAPE_GAP_MS (${scrapeGapMs}) must be more than twice DURATION_TOLERANCE_MS (${durationToleranceMs}), or 0 to leave it out.`);
  }
  return { billingHoldsMs, billingMinuteHoldMs, scrapeGapMs, durationToleranceMs };
}

/** The settings with another known-deviations file's declarations in place of KNOWN_DEVIATIONS (the kit's variant matrix). */
export function withKnownDeviations(settings: Settings, file: string): Settings {
  const read = readKnownDeviations(file);
  return {
    ...settings,
    knownDeviationsFile: file,
    knownDeviations: read.deviations,
    declaredBilling: read.billing,
    declaredSchemeWord: read.authentication,
    declaredClock: read.clock,
  };
}

function readDeviationsFile(file: string, given: string, problems: string[]): KnownDeviations | undefined {
  if (!existsSync(file)) {
    problems.push(`KNOWN_DEVIATIONS names a file that does not exist: ${given}`);
    return undefined;
  }
  try {
    return readKnownDeviations(file);
  } catch (error) {
    problems.push(`KNOWN_DEVIATIONS: ${(error as Error).message}`);
    return undefined;
  }
}

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

function normaliseBaseURL(raw: string, allowInsecureHttp: boolean, problems: string[]): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    problems.push(`BASE_URL is not a valid URL: "${raw}".`);
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') problems.push(`BASE_URL must use http or https (got "${url.protocol}").`);
  if (url.protocol === 'http:' && !LOOPBACK.test(url.hostname) && !allowInsecureHttp) {
    problems.push(
      `BASE_URL uses plain http to ${url.hostname}: the keys would travel in clear. Use https, or set ALLOW_INSECURE_HTTP=1 for a network you trust.`,
    );
  }
  if (url.username || url.password) problems.push('BASE_URL must not carry credentials: use API_KEY.');
  if (url.search || url.hash) problems.push('BASE_URL must not have a query or fragment.');
  const base = url.origin + url.pathname.replace(/\/+$/, '');
  if (/\/v2$/.test(base)) problems.push('BASE_URL must not end with /v2: the suite adds the version segment itself.');
  return base;
}

function readRateLimit(value: string | undefined, problems: string[]): Rate | undefined {
  if (!value) return undefined;
  const rate = parseRate(value);
  if (!rate) problems.push(`RATE_LIMIT must be requests over a window, such as 10/min, 100/min, 5/s or 20/10s (got "${value}").`);
  return rate && { ...rate, from: 'stated: RATE_LIMIT' };
}

function readCredits(value: string | undefined, problems: string[]): number | undefined {
  if (!value) return undefined;
  const credits = Number(value);
  if (!Number.isFinite(credits) || credits <= 0) problems.push(`CREDIT_BUDGET must be a positive number of credits (got "${value}").`);
  return credits;
}
