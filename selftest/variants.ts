/**
 * Variants of the reference: each faulty one breaks exactly one thing a real implementation
 * could get wrong and names the rule that must catch it; each correct one differs from the
 * reference only in ways the specification allows. All are overrides through
 * `ReferenceOptions.behaviour`; the reference itself has no variant switches.
 */
import type { Behaviour, ReferenceOptions, ReferenceState, Reply, Team } from '../reference/server';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RuleId } from '../tests/support/rules';
import type { Outcome } from '../tests/support/verdict';

export interface Variant {
  name: string;
  /** For a faulty variant, the rule that must fail; undefined for a correct one. */
  breaks?: RuleId;
  description: string;
  options: ReferenceOptions;
  /** The variant keeps sessions alive on purpose, so the leak check does not apply. */
  leaksSessions?: boolean;
  /** How its rule must judge it, when not `fail`: a fault no answer can prove is `not verifiable`. */
  caughtAs?: Outcome;
  /** Run every rule against it, to show that only its own rule catches it. */
  runsEveryRule?: boolean;
}

type Override = (base: Behaviour, state: ReferenceState) => Partial<Behaviour>;

const behaviour = (override: Override): ReferenceOptions => ({ behaviour: override });

/** Rewrites the stop operation's replies. */
const stopReply = (change: (reply: Reply, team: Team, jobId: string, state: ReferenceState) => Reply): ReferenceOptions =>
  behaviour((base, state) => ({ stop: (team, jobId) => change(base.stop(team, jobId), team, jobId, state) }));

const body = (reply: Reply) => reply.body as Record<string, unknown>;
const withBody = (reply: Reply, changes: Record<string, unknown>): Reply => ({ ...reply, body: { ...body(reply), ...changes } });
const billAt = (creditsPerMinute: number, secondsOf: (ms: number) => number) => (ms: number) => (secondsOf(ms) * creditsPerMinute) / 60;

/** Reports and bills a session `biasMs` longer than it lasted (shorter when negative). */
export const durationOffBy = (biasMs: number): ReferenceOptions =>
  behaviour((base, state) => ({
    stop: (team, jobId) => {
      const session = state.sessions.get(jobId);
      if (session) session.startedAt -= biasMs;
      return base.stop(team, jobId);
    },
  }));

export const faultyVariants: Variant[] = [
  // Rule 1: the owner's stop
  { name: 'owner-stop-204', breaks: 'owner-stop', description: 'answers 204 with no body to the owner', options: stopReply((r) => (r.status === 200 ? { status: 204, body: '' } : r)) },
  { name: 'owner-stop-202', breaks: 'owner-stop', description: 'answers 202 instead of 200 to the owner', options: stopReply((r) => (r.status === 200 ? { ...r, status: 202 } : r)) },
  { name: 'owner-stop-success-false', breaks: 'owner-stop', description: 'answers 200 with success false', options: stopReply((r) => (r.status === 200 ? withBody(r, { success: false }) : r)) },
  { name: 'owner-stop-success-string', breaks: 'owner-stop', description: 'answers success "true" as a string', options: stopReply((r) => (r.status === 200 ? withBody(r, { success: 'true' }) : r)) },
  { name: 'owner-stop-with-error-field', breaks: 'owner-stop', description: 'adds an error field to a success body', options: stopReply((r) => (r.status === 200 ? withBody(r, { error: 'none' }) : r)) },
  {
    name: 'owner-stop-text-html',
    breaks: 'owner-stop',
    description: 'serves the 200 stop result as text/html',
    options: behaviour((base) => ({
      send: (res, reply) => (reply.status === 200 && 'sessionDurationMs' in body(reply) ? base.send(res, { ...reply, headers: { 'Content-Type': 'text/html' } }) : base.send(res, reply)),
    })),
  },
  // Rule 2: billing
  { name: 'billing-per-minute', breaks: 'billing', description: 'bills started minutes, not seconds', options: behaviour(() => ({ bill: billAt(2, (ms) => Math.ceil(ms / 60_000) * 60) })) },
  { name: 'billing-rate-3', breaks: 'billing', description: 'bills 3 credits per minute', options: behaviour(() => ({ bill: billAt(3, (ms) => Math.ceil(ms / 1000)) })) },
  { name: 'billing-rate-1', breaks: 'billing', description: 'bills 1 credit per minute', options: behaviour(() => ({ bill: billAt(1, (ms) => Math.ceil(ms / 1000)) })) },
  { name: 'billing-whole-credits', breaks: 'billing', description: 'bills max(2, ceil(hours x 120)) whole credits, as the hosted service does', options: behaviour(() => ({ bill: (ms) => Math.max(2, Math.ceil((ms / 3_600_000) * 120)) })) },
  { name: 'billing-milliseconds-as-seconds', breaks: 'billing', description: 'treats milliseconds as seconds when billing', options: behaviour(() => ({ bill: billAt(2, (ms) => ms) })) },
  { name: 'duration-in-seconds', breaks: 'billing', description: 'reports sessionDurationMs in seconds', options: stopReply((r) => (r.status === 200 ? withBody(r, { sessionDurationMs: Number(body(r).sessionDurationMs) / 1000 }) : r)) },
  { name: 'duration-inflated', breaks: 'billing', description: 'reports and bills 500 ms more than the session lasted', options: durationOffBy(500) },
  { name: 'duration-whole-seconds', breaks: 'billing', description: 'truncates sessionDurationMs to whole seconds', options: stopReply((r) => (r.status === 200 ? withBody(r, { sessionDurationMs: Math.floor(Number(body(r).sessionDurationMs) / 1000) * 1000 }) : r)) },
  { name: 'credits-as-string', breaks: 'billing', description: 'reports creditsBilled as a string', options: stopReply((r) => (r.status === 200 ? withBody(r, { creditsBilled: String(body(r).creditsBilled) }) : r)) },
  // Rule 3: foreign team
  { name: 'foreign-gets-404', breaks: 'foreign-team', description: "answers 404 to another team's stop", options: stopReply((r) => (r.status === 403 ? { ...r, status: 404 } : r)) },
  { name: 'foreign-gets-200', breaks: 'foreign-team', description: "lets another team stop the session", options: behaviour((base, state) => ({ stop: (team, jobId) => { const session = state.sessions.get(jobId); return base.stop(session ? state.teams.find((t) => t.id === session.teamId)! : team, jobId); } })) },
  {
    name: 'foreign-403-still-stops',
    breaks: 'foreign-team',
    description: 'answers 403 to another team but stops the session anyway',
    options: stopReply((r, _team, jobId, state) => {
      if (r.status === 403) state.sessions.delete(jobId);
      return r;
    }),
  },
  // Rule 4: unknown job
  { name: 'unknown-job-200', breaks: 'unknown-job', description: 'answers 200 when there is no session', options: stopReply((r) => (r.status === 404 ? { status: 200, body: { success: true } } : r)) },
  { name: 'unknown-job-400', breaks: 'unknown-job', description: 'answers 400 when there is no session', options: stopReply((r) => (r.status === 404 ? { ...r, status: 400 } : r)) },
  { name: 'job-without-session-403', breaks: 'unknown-job', description: 'answers 403 for a scrape job that never had a session', options: stopReply((r, _team, jobId, state) => (r.status === 404 && state.jobs.has(jobId) && !state.stopped.has(jobId) ? { ...r, status: 403 } : r)) },
  // Rule 5: authentication and the side effects of refused requests
  { name: 'missing-key-is-owner', breaks: 'authentication', description: 'treats a request without Authorization as the first team', options: behaviour((base, state) => ({ authenticate: (h) => (h === undefined ? state.teams[0] : base.authenticate(h)) })) },
  { name: 'unknown-key-is-owner', breaks: 'authentication', description: 'treats any unknown bearer key as the first team', options: behaviour((base, state) => ({ authenticate: (h) => base.authenticate(h) ?? (/^bearer\s+\S+$/i.test(h ?? '') ? state.teams[0] : undefined) })) },
  { name: 'any-scheme-accepted', breaks: 'authentication', description: 'takes the second word of Authorization as the key whatever the scheme', options: behaviour((base) => ({ authenticate: (h) => base.authenticate(h?.replace(/^\s*\S+/, 'Bearer')) })) },
  { name: 'scheme-case-sensitive', breaks: 'authentication', description: 'refuses a lower-case bearer scheme', options: behaviour((base) => ({ authenticate: (h) => (h?.startsWith('Bearer ') ? base.authenticate(h) : undefined) })) },
  {
    name: 'refused-key-still-stops',
    breaks: 'authentication',
    description: 'answers 401 but stops the session named in the path anyway',
    options: behaviour((base, state) => ({
      error: (status, message, headers) => {
        if (status === 401) state.sessions.clear();
        return base.error(status, message, headers);
      },
    })),
  },
  { name: 'empty-token-500', breaks: 'authentication', description: 'crashes (500) on "Bearer" with no token', options: behaviour((base) => ({ authenticate: (h) => { if (h !== undefined && /^\s*bearer\s*$/i.test(h)) throw new Error('no token'); return base.authenticate(h); } })) },
  // Rule 6: rate limiting
  { name: 'no-rate-limit', breaks: 'rate-limit', description: 'never limits', options: behaviour(() => ({ limit: () => ({ allowed: true }) })) },
  { name: 'rate-limit-503', breaks: 'rate-limit', description: 'answers 503 instead of 429 over the limit', options: behaviour((base) => ({ error: (status, message, headers) => base.error(status === 429 ? 503 : status, message, headers) })) },
  {
    name: 'rate-limit-never-recovers',
    breaks: 'rate-limit',
    description: 'keeps a team limited for good once it went over the limit',
    // The session the burst provisions can never be stopped again: the team is refused for good.
    leaksSessions: true,
    options: behaviour((base) => {
      const blocked = new Set<string>();
      return { limit: (key) => (blocked.has(key) ? { allowed: false, retryAfterSeconds: 1 } : ((d) => (d.allowed || blocked.add(key), d))(base.limit(key))) };
    }),
  },
  // Rule 7: finality
  { name: 'second-stop-charges-again', breaks: 'stop-is-final', description: 'answers a second stop with 200 and a new charge', options: stopReply((r, team, jobId, state) => (r.status === 404 && state.stopped.get(jobId)?.teamId === team.id ? { status: 200, body: { success: true, sessionDurationMs: 1000, creditsBilled: 0.033333 } } : r)) },
  {
    name: 'concurrent-stops-both-charge',
    breaks: 'stop-is-final',
    description: 'ends a session 100 ms after a stop, so a stop in between charges again',
    options: behaviour((base, state) => ({
      stop: (team, jobId) => {
        const session = state.sessions.get(jobId);
        const reply = base.stop(team, jobId);
        if (session && reply.status === 200) {
          state.sessions.set(jobId, session);
          setTimeout(() => state.sessions.delete(jobId), 100);
        }
        return reply;
      },
    })),
  },
  { name: 'second-stop-500', breaks: 'stop-is-final', description: 'crashes (500) on a stopped session', options: stopReply((r, _team, jobId, state) => (r.status === 404 && state.stopped.has(jobId) ? { status: 500, body: { success: false, error: 'session gone' } } : r)) },
  // Rule 8: robustness
  { name: 'bad-job-id-500', breaks: 'malformed-job-id', description: 'crashes (500) on a jobId that is not a UUID', options: behaviour((base) => ({ error: (status, message, headers) => base.error(/job ID/i.test(message) ? 500 : status, message, headers) })) },
  { name: 'long-job-id-500', breaks: 'malformed-job-id', description: 'crashes (500) on a jobId longer than 1000 characters', options: behaviour((base) => ({ send: (res, reply) => base.send(res, reply.status === 400 && (res.req.url?.length ?? 0) > 1000 ? { ...reply, status: 500 } : reply) })) },
  // Rule 9: JSON answers
  { name: 'errors-as-text-plain', breaks: 'json-answers', description: 'serves error bodies as text/plain', options: behaviour((base) => ({ send: (res, reply) => base.send(res, reply.status >= 400 ? { ...reply, headers: { ...reply.headers, 'Content-Type': 'text/plain' } } : reply) })) },
  { name: 'error-without-success', breaks: 'json-answers', description: 'leaves success out of error bodies', options: behaviour(() => ({ error: (status, message, headers) => ({ status, body: { error: message }, headers }) })) },
  { name: 'error-multiline', breaks: 'json-answers', description: 'writes a stack trace into error', options: behaviour((base) => ({ error: (status, message, headers) => base.error(status, `${message}\n    at handler (server.js:1:1)`, headers) })) },
  { name: 'unauthorized-empty-body', breaks: 'json-answers', description: 'answers 401 with an empty body', options: behaviour((base) => ({ error: (status, message, headers) => (status === 401 ? { status, body: '', headers } : base.error(status, message, headers)) })) },
];

const keyless = (base: Behaviour): Partial<Behaviour> => {
  const anonymous: Team = { id: 'anonymous', name: 'Keyless tier', keys: [] };
  return { authenticate: (h) => (h === undefined ? anonymous : base.authenticate(h)) };
};

export const correctVariants: Variant[] = [
  { name: 'minimal-success-body', description: 'answers the owner with {"success": true} only', options: stopReply((r) => (r.status === 200 ? { ...r, body: { success: true } } : r)) },
  { name: 'extra-fields', description: 'adds cleanupQueued to results and a code to errors', options: behaviour((base) => ({ stop: (t, j) => { const r = base.stop(t, j); return withBody(r, r.status === 200 ? { cleanupQueued: true } : { code: `E${r.status}` }); } })) },
  { name: 'other-error-wording', description: 'words every error differently', options: behaviour((base) => ({ error: (status, message, headers) => base.error(status, `Request failed (${status}): ${message.toLowerCase()}`, headers) })) },
  { name: 'keyless-tier', description: 'runs a request without a key as an anonymous team (4xx, not 401)', options: behaviour(keyless) },
  { name: 'second-stop-200-without-charge', description: 'answers a stopped session with 200 and no creditsBilled, as the hosted service does', options: stopReply((r, team, jobId, state) => (r.status === 404 && state.stopped.get(jobId)?.teamId === team.id ? { status: 200, body: { success: true } } : r)) },
  { name: 'rate-limit-without-retry-after', description: 'sends 429 with no Retry-After header', options: behaviour((base) => ({ error: (status, message, headers) => base.error(status, message, status === 429 ? {} : headers) })) },
  { name: 'rate-limit-other-body', description: 'sends 429 with a plain-text body', options: behaviour((base) => ({ send: (res, reply) => (reply.status === 429 ? (res.writeHead(429, { 'Content-Type': 'text/plain', ...reply.headers }), res.end('Too Many Requests')) : base.send(res, reply)) })) },
  { name: 'slow-answers', description: 'delays every answer by 40 ms', options: behaviour((base) => ({ send: (res, reply) => void sleep(40).then(() => base.send(res, reply)) })) },
  { name: 'json-charset', description: 'serves application/json; charset=utf-8', options: behaviour((base) => ({ send: (res, reply) => base.send(res, { ...reply, headers: { 'Content-Type': 'application/json; charset=utf-8', ...reply.headers } }) })) },
  { name: 'billing-floor-seconds', description: 'bills whole elapsed seconds (floor)', options: behaviour(() => ({ bill: billAt(2, (ms) => Math.floor(ms / 1000)) })) },
  { name: 'billing-exact', description: 'bills the exact duration, no rounding to seconds', options: behaviour(() => ({ bill: billAt(2, (ms) => ms / 1000) })) },
  { name: 'billing-nearest-second-2-decimals', description: 'bills the nearest second, rounded to 2 decimals', options: behaviour(() => ({ bill: (ms) => Math.round(billAt(2, (t) => Math.round(t / 1000))(ms) * 100) / 100 })) },
  { name: 'duration-10ms-granularity', description: 'reports durations from a clock with 10 ms steps', options: stopReply((r) => (r.status === 200 ? withBody(r, { sessionDurationMs: Math.floor(Number(body(r).sessionDurationMs) / 10) * 10 }) : r)) },
  { name: 'www-authenticate', description: 'adds WWW-Authenticate to 401 answers', options: behaviour((base) => ({ error: (status, message, headers) => base.error(status, message, status === 401 ? { ...headers, 'WWW-Authenticate': 'Bearer realm="api"' } : headers) })) },
  { name: 'echoes-credentials', description: 'quotes the Authorization header it received in 403 and 401 errors', options: echoesCredentials() },
  { name: 'strict-rate-limit', description: 'allows only 20 requests per 2 s window', options: { rateLimit: { limit: 20, windowMs: 2000 } } },
];

/** Quotes the caller's Authorization in its errors: the suite must keep the keys out of its reports anyway. */
function echoesCredentials(): ReferenceOptions {
  let lastAuthorization = '';
  return behaviour((base) => ({
    authenticate: (h) => ((lastAuthorization = h ?? ''), base.authenticate(h)),
    error: (status, message, headers) => base.error(status, status === 401 || status === 403 ? `${message} (credentials: ${lastAuthorization})` : message, headers),
  }));
}

export const variants: Variant[] = [
  { name: 'reference', description: 'the reference itself', options: {} },
  ...correctVariants,
  ...faultyVariants,
];
