/**
 * Reference implementation of the stop operation and of the two provisioning calls,
 * strict to the specification. Everything a variant may change is a method of `Behaviour`;
 * `options.behaviour` overrides some of them and the rest keep the reference's own.
 */

import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { bearerToken } from './auth';
import { creditsFor } from './billing';
import { createRateLimiter, type RateDecision, type RateLimit } from './rate-limit';

export interface Team {
  id: string;
  name: string;
  keys: string[];
}

export interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export interface Job {
  jobId: string;
  teamId: string;
  url: string;
  createdAt: number;
}

export interface Session {
  jobId: string;
  teamId: string;
  startedAt: number;
}

export interface Charge {
  jobId: string;
  teamId: string;
  durationMs: number;
  credits: number;
  /** When it was charged (the state's clock). */
  at: number;
}

/** What a scrape cost its team, as the hosted service prices a basic scrape (one credit, reported as data.metadata.creditsUsed). */
export interface ScrapeCharge {
  teamId: string;
  credits: number;
  at: number;
}

export interface ReferenceState {
  teams: Team[];
  jobs: Map<string, Job>;
  sessions: Map<string, Session>;
  stopped: Map<string, Session>;
  charges: Charge[];
  scrapes: ScrapeCharge[];
  clock: () => number;
}

export interface Behaviour {
  /** The team of an `Authorization` header value, or undefined (401); `connection` is the request's socket (a variant may misuse it). */
  /** `name`: the header's name as the request spelt it. */
  authenticate(authorization: string | undefined, connection?: object, name?: string): Team | undefined;
  /** Rate limiting per `<team id>:scrape` or `<team id>:interact`, or per `addr:<client address>` when unauthenticated. */
  limit(key: string): RateDecision;
  scrape(team: Team, body: unknown): Reply;
  interact(team: Team, jobId: string, body: unknown): Reply;
  stop(team: Team, jobId: string): Reply;
  /** The team's credit counter (GET /v2/team/credit-usage), as the hosted service keeps one. */
  account(team: Team): Reply;
  bill(durationMs: number): number;
  error(status: number, message: string, headers?: Record<string, string>): Reply;
  send(res: http.ServerResponse, reply: Reply): void;
}

export interface ReferenceOptions {
  teams?: Team[];
  rateLimit?: RateLimit;
  /** Milliseconds from a monotonic origin. */
  clock?: () => number;
  port?: number;
  host?: string;
  /** One line per request; never receives a key. */
  log?: (line: string) => void;
  /** Overrides of the reference's behaviour: the base methods and the state are passed in. */
  behaviour?: (base: Behaviour, state: ReferenceState) => Partial<Behaviour>;
}

export interface ReferenceServer {
  url: string;
  port: number;
  state: ReferenceState;
  activeSessions(): Session[];
  creditsBilled(teamId?: string): number;
  close(): Promise<void>;
}

/**
 * 180 requests a second per team: the suite's own run seldom meets it (the sequences rule would
 * otherwise spend seconds waiting), and the burst's default BURST_PROOF_RATE still tells it from
 * none. The burst team's plan is 40 per 4 s: a burst slowed by a busy machine still goes well past
 * it, and a stop sent behind its first wave or after a 429 lands in the window that refused.
 */
export const DEFAULT_RATE_LIMIT = { limit: 180, windowMs: 1000, burstTeam: { limit: 40, windowMs: 4000 } };
export const MAX_BODY_BYTES = 1_000_000;
/** Each team's credits for the period: the counter starts there and every charge takes from it. */
export const PLAN_CREDITS = 100_000;
export const SCRAPE_CREDITS = 1;
export const CREDIT_USAGE_PATH = '/v2/team/credit-usage';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const INTERACT_PATH = /^\/v2\/scrape\/([^/]*)\/interact$/;
const EMPTY = Buffer.alloc(0);

export function loadTeams(file = path.join(__dirname, '..', 'fixtures', 'teams.json')): Team[] {
  return JSON.parse(readFileSync(file, 'utf8')).teams;
}

export function rateLimitFromEnv(env = process.env): RateLimit {
  const limit = Number(env.REFERENCE_RATE_LIMIT ?? DEFAULT_RATE_LIMIT.limit);
  const windowMs = Number(env.REFERENCE_RATE_WINDOW_MS ?? DEFAULT_RATE_LIMIT.windowMs);
  if (!Number.isInteger(limit) || limit < 1 || !Number.isInteger(windowMs) || windowMs < 1) {
    throw new Error('REFERENCE_RATE_LIMIT and REFERENCE_RATE_WINDOW_MS must be positive integers');
  }
  const burstTeam = DEFAULT_RATE_LIMIT.burstTeam;
  return { limit, windowMs, perTeam: { 'team-burst': { limit: Math.min(limit, burstTeam.limit), windowMs: Math.max(windowMs, burstTeam.windowMs) } } };
}

function referenceBehaviour(self: Behaviour, state: ReferenceState, rateLimit: RateLimit): Behaviour {
  const keys = new Map(state.teams.flatMap((team) => team.keys.map((key) => [key, team] as const)));
  const take = createRateLimiter(rateLimit, state.clock);
  return {
    authenticate: (authorization) => {
      const token = bearerToken(authorization);
      return token === undefined ? undefined : keys.get(token);
    },
    limit: take,
    scrape(team, body) {
      const url = (body as { url?: unknown } | null)?.url;
      if (typeof url !== 'string' || url.length === 0) return self.error(400, 'Body must be a JSON object with a string "url".');
      const jobId = randomUUID();
      state.jobs.set(jobId, { jobId, teamId: team.id, url, createdAt: state.clock() });
      state.scrapes.push({ teamId: team.id, credits: SCRAPE_CREDITS, at: state.clock() });
      return { status: 200, body: { success: true, data: { metadata: { scrapeId: jobId, sourceURL: url, creditsUsed: SCRAPE_CREDITS } } } };
    },
    interact(team, jobId, body) {
      const problem = interactBodyProblem(body);
      if (problem) return self.error(400, problem);
      const job = state.jobs.get(jobId);
      if (!job) return self.error(404, 'Job not found.');
      if (job.teamId !== team.id) return self.error(403, 'Forbidden.');
      if (!state.sessions.has(jobId)) state.sessions.set(jobId, { jobId, teamId: team.id, startedAt: state.clock() });
      return { status: 200, body: { success: true, stdout: '', result: '', stderr: '', exitCode: 0, killed: false } };
    },
    stop(team, jobId) {
      const session = state.sessions.get(jobId);
      if (!session) return self.error(404, 'Browser session not found.');
      if (session.teamId !== team.id) return self.error(403, 'Forbidden.');
      state.sessions.delete(jobId);
      state.stopped.set(jobId, session);
      const durationMs = Math.max(0, Math.round(state.clock() - session.startedAt));
      const credits = self.bill(durationMs);
      state.charges.push({ jobId, teamId: team.id, durationMs, credits, at: state.clock() });
      return { status: 200, body: { success: true, sessionDurationMs: durationMs, creditsBilled: credits } };
    },
    account(team) {
      const spent = [...state.charges, ...state.scrapes].filter((charge) => charge.teamId === team.id).reduce((sum, charge) => sum + charge.credits, 0);
      return {
        status: 200,
        body: { success: true, data: { remainingCredits: PLAN_CREDITS - spent, planCredits: PLAN_CREDITS, billingPeriodStart: null, billingPeriodEnd: null } },
      };
    },
    bill: creditsFor,
    error: (status, message, headers) => ({ status, body: { success: false, error: message }, headers }),
    send(res, reply) {
      const payload = JSON.stringify(reply.body);
      res.writeHead(reply.status, {
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(payload),
        ...reply.headers,
      });
      res.end(payload);
    },
  };
}

function interactBodyProblem(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'Body must be a JSON object.';
  const { code, prompt, language, timeout } = body as Record<string, unknown>;
  const given = [code, prompt].filter((value) => value !== undefined);
  if (given.length !== 1) return 'Exactly one of "code" or "prompt" is required.';
  if (typeof given[0] !== 'string' || given[0].length === 0) return '"code" or "prompt" must be a non-empty string.';
  if (language !== undefined && !['node', 'python', 'bash'].includes(language as string)) {
    return '"language" must be one of node, python, bash.';
  }
  if (timeout !== undefined && !(Number.isInteger(timeout) && (timeout as number) >= 1 && (timeout as number) <= 300)) {
    return '"timeout" must be an integer from 1 to 300.';
  }
  return undefined;
}

type Limiter = 'interact' | 'scrape' | 'account';
const limiterKeys = new WeakMap<Team, Record<Limiter, string>>();
function limiterKey(team: Team, group: Limiter): string {
  let keys = limiterKeys.get(team);
  if (!keys) limiterKeys.set(team, (keys = { interact: `${team.id}:interact`, scrape: `${team.id}:scrape`, account: `${team.id}:account` }));
  return keys[group];
}

/** The team each answered request was authenticated as, for the request log. */
const teamOf = new WeakMap<http.ServerResponse, string>();

function logWhenFinished(req: http.IncomingMessage, res: http.ServerResponse, log: (line: string) => void) {
  const started = performance.now();
  res.on('finish', () => {
    log(`${req.method} ${(req.url ?? '').slice(0, 120)} ${res.statusCode} ${(performance.now() - started).toFixed(1)}ms team=${teamOf.get(res) ?? '-'}`);
  });
}

function readBody(req: http.IncomingMessage): Promise<Buffer | 'too large'> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () => resolve(size > MAX_BODY_BYTES ? 'too large' : Buffer.concat(chunks)));
    req.on('error', () => resolve('too large'));
  });
}

/** Route, method, body size, authentication and rate limit, in the hosted service's order; then the operation. */
function route(behaviour: Behaviour, logging: boolean, req: http.IncomingMessage, raw: Buffer | 'too large', res: http.ServerResponse): Reply {
  const url = req.url ?? '/';
  const query = url.indexOf('?');
  const pathname = query < 0 ? url : url.slice(0, query);
  const interact = INTERACT_PATH.exec(pathname);
  const account = pathname === CREDIT_USAGE_PATH;
  const allowed = pathname === '/v2/scrape' ? 'POST' : interact ? 'POST, DELETE' : account ? 'GET' : undefined;
  if (!allowed) return behaviour.error(404, 'Not found.');
  if (!allowed.split(', ').includes(req.method ?? '')) return behaviour.error(405, 'Method not allowed.', { Allow: allowed });
  if (raw === 'too large') return behaviour.error(413, 'Request body too large.');

  const authorization = req.headers.authorization;
  const name = req.rawHeaders.find((header, i) => i % 2 === 0 && header.toLowerCase() === 'authorization');
  const team = behaviour.authenticate(authorization, req.socket, name);
  // As in the hosted service, scrape has its own limiter and interact and stop share one.
  const decision = behaviour.limit(team ? limiterKey(team, interact ? 'interact' : account ? 'account' : 'scrape') : `addr:${req.socket.remoteAddress}`);
  if (!decision.allowed) {
    return behaviour.error(429, `Rate limit exceeded, retry after ${decision.retryAfterSeconds}s.`, { 'Retry-After': String(decision.retryAfterSeconds) });
  }
  if (!team) {
    if (authorization === undefined) return behaviour.error(401, 'Unauthorized');
    return behaviour.error(401, bearerToken(authorization) === undefined ? 'Unauthorized: Token missing' : 'Unauthorized: Invalid token');
  }
  if (logging) teamOf.set(res, team.id);
  if (account) return behaviour.account(team);
  return operate(behaviour, team, req.method!, interact?.[1], raw);
}

/** The operation itself, once the caller is known: scrape, interact or stop. */
function operate(behaviour: Behaviour, team: Team, method: string, rawJobId: string | undefined, raw: Buffer): Reply {
  let body: unknown;
  if (method === 'POST') {
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      return behaviour.error(400, 'Body must be valid JSON.');
    }
  }
  if (rawJobId === undefined) return behaviour.scrape(team, body);
  let jobId = rawJobId;
  if (jobId.includes('%')) {
    try {
      jobId = decodeURIComponent(jobId);
    } catch {
      jobId = '';
    }
  }
  if (!UUID.test(jobId)) return behaviour.error(400, 'Invalid job ID format. Job ID must be a valid UUID.');
  jobId = jobId.toLowerCase();
  return method === 'POST' ? behaviour.interact(team, jobId, body) : behaviour.stop(team, jobId);
}

/** A request Node's parser refused (headers too large, bad syntax): a JSON error all the same. */
function answerClientError(error: NodeJS.ErrnoException, socket: import('node:stream').Duplex): void {
  if (!socket.writable) return void socket.destroy();
  const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
  const payload = JSON.stringify({ success: false, error: status === 431 ? 'Request headers too large.' : 'Bad request.' });
  socket.end(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(payload)}\r\nConnection: close\r\n\r\n${payload}`,
  );
}

export async function createReferenceServer(options: ReferenceOptions = {}): Promise<ReferenceServer> {
  const state: ReferenceState = {
    teams: options.teams ?? loadTeams(),
    jobs: new Map(),
    sessions: new Map(),
    stopped: new Map(),
    charges: [],
    scrapes: [],
    clock: options.clock ?? (() => performance.now()),
  };
  const behaviour = {} as Behaviour;
  const base = referenceBehaviour(behaviour, state, options.rateLimit ?? rateLimitFromEnv());
  Object.assign(behaviour, base, options.behaviour?.(base, state));
  const logging = Boolean(options.log);

  const answer = (req: http.IncomingMessage, res: http.ServerResponse, raw: Buffer | 'too large') => {
    let reply: Reply;
    try {
      reply = route(behaviour, logging, req, raw, res);
    } catch {
      reply = behaviour.error(500, 'Internal error.');
    }
    behaviour.send(res, reply);
  };

  const server = http.createServer((req, res) => {
    if (options.log) logWhenFinished(req, res, options.log);
    // Most stops carry no body: answer at once instead of waiting for the end of an empty stream.
    if (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined) answer(req, res, EMPTY);
    else readBody(req).then((raw) => answer(req, res, raw));
  });
  server.on('clientError', answerClientError);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}`,
    port,
    state,
    activeSessions: () => [...state.sessions.values()],
    creditsBilled: (teamId) => state.charges.filter((charge) => !teamId || charge.teamId === teamId).reduce((sum, charge) => sum + charge.credits, 0),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
