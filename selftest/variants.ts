/**
 * Variants of the reference: each faulty one breaks exactly one thing a real implementation
 * could get wrong and names the rule that must catch it; each correct one differs from the
 * reference only in ways the specification allows. All are overrides through
 * `ReferenceOptions.behaviour`; the reference itself has no variant switches.
 */
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { bearerToken } from '../reference/auth';
import { creditsFor } from '../reference/billing';
import { createRateLimiter } from '../reference/rate-limit';
import type { Behaviour, ReferenceOptions, ReferenceState, Reply, Team } from '../reference/server';
import type { RuleId } from '../src/config/rules';
import type { Outcome } from '../src/report/verdict';

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
  /** The rules it is run with, where not its own rule alone (faulty) or every rule (correct): the rules where it differs from another variant. */
  rules?: RuleId[];
  /** Its billing changes past a minute: billing/past-a-minute holds its session across the minute boundary (61.25 s) against it. */
  holdsPastAMinute?: boolean;
  /** The cap on live sessions its runs are told (SESSION_CAP), where a fault shows only against a known one. */
  sessionCap?: number;
  /** Its fault shows in one timing of requests and not another (a session ended 100 ms late): its reproductions are replayed with MATRIX=full only. */
  timingFault?: true;
  /** Its run takes most of a minute (holds asked again, the account's blame replayed): started among the first. */
  slow?: true;
  /** A correct target whose every test must decide: none may end not verifiable. */
  decides?: true;
  /** Its known-deviations file (from the kit's folder): the suite runs against it with that file. */
  knownDeviations?: string;
  /**
   * A correct target tested without the file that declares its deviations: it must fail, and for
   * nothing but what the file declares (each failure's message matches).
   */
  declaredReasons?: RegExp;
}

type Override = (base: Behaviour, state: ReferenceState) => Partial<Behaviour>;

const behaviour = (override: Override): ReferenceOptions => ({ behaviour: override });

/** The account charged again the settlement a stop of `jobId` reported (`settled`), unreported. */
const chargeAgain = (state: ReferenceState, teamId: string, jobId: string, settled: Reply) => {
  const { sessionDurationMs, creditsBilled } = body(settled) as { sessionDurationMs: number; creditsBilled: number };
  state.charges.push({ jobId, teamId, durationMs: sessionDurationMs, credits: creditsBilled, at: state.clock() });
};

/** Another team's refused stop of a live session charges what it has cost so far, unreported: to the session's team, or to the caller refused. */
const refusalCharges = (payer: 'owner' | 'caller') =>
  behaviour((base, state) => ({
    stop: (team, jobId) => {
      const session = state.sessions.get(jobId);
      const reply = base.stop(team, jobId);
      const durationMs = session ? state.clock() - session.startedAt : 0;
      if (reply.status === 403 && session)
        state.charges.push({ jobId, teamId: payer === 'owner' ? session.teamId : team.id, durationMs, credits: base.bill(durationMs), at: state.clock() });
      return reply;
    },
  }));

const withLimit = (rateLimit: ReferenceOptions['rateLimit'], override: Override): ReferenceOptions => ({ rateLimit, behaviour: override });

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

/** Charges the account 2 credits per started minute of each stopped session; with `minimal`, answers the stop with `{"success": true}` only. */
const chargedByStartedMinute = (minimal: boolean): ReferenceOptions =>
  behaviour((base, state) => ({
    stop: (team, jobId) => {
      const reply = base.stop(team, jobId);
      const charge = reply.status === 200 ? state.charges.at(-1) : undefined;
      if (charge) charge.credits = Math.max(1, Math.ceil(charge.durationMs / 60_000)) * 2;
      return minimal && reply.status === 200 ? { ...reply, body: { success: true } } : reply;
    },
  }));

/** The job id of a request to /v2/scrape/{jobId}/interact, or undefined. */
const jobOf = (res: ServerResponse) => /^\/v2\/scrape\/([^/?]+)\/interact/.exec(res.req.url ?? '')?.[1]?.toLowerCase();

/** The stop result a session would get if it were stopped now. */
/** A `send` that ends the session named in a stop it answers with `status`, whatever handled it. */
const stopsWhenRefusing =
  (status: number, base: Behaviour, state: ReferenceState): Behaviour['send'] =>
  (res, reply) => {
    const jobId = jobOf(res) ?? '';
    const session = state.sessions.get(jobId);
    if (res.req.method === 'DELETE' && reply.status === status && session) {
      state.sessions.delete(jobId);
      state.stopped.set(jobId, session);
    }
    base.send(res, reply);
  };

const billingSoFar = (state: ReferenceState, jobId: string) => {
  const session = state.sessions.get(jobId) ?? state.stopped.get(jobId);
  const sessionDurationMs = session ? Math.round(state.clock() - session.startedAt) : 0;
  return { sessionDurationMs, creditsBilled: creditsFor(sessionDurationMs) };
};

/** Sessions billed from their scrape job's creation, not from the interact that created them. */
const clockFromScrape: Override = (base, state) => ({
  interact: (team, jobId, body) => {
    const existed = state.sessions.has(jobId);
    const reply = base.interact(team, jobId, body);
    const session = state.sessions.get(jobId);
    if (!existed && session) session.startedAt = state.jobs.get(jobId)!.createdAt;
    return reply;
  },
});

/** A refused stop (`status`) that restarts the billing clock of the session named in its path. */
const refusalRestartsClock = (status: number): ReferenceOptions =>
  behaviour((base, state) => ({
    send: (res, reply) => {
      const session = state.sessions.get(jobOf(res) ?? '');
      if (res.req.method === 'DELETE' && reply.status === status && session) session.startedAt = state.clock();
      base.send(res, reply);
    },
  }));

/** Authenticates when `matches(token, key)` holds for one of a team's keys, instead of equality. */
const keyMatch = (matches: (token: string, key: string) => boolean): ReferenceOptions =>
  behaviour((base, state) => ({
    authenticate: (header) => {
      const token = bearerToken(header);
      return token === undefined ? undefined : (base.authenticate(header) ?? state.teams.find((team) => team.keys.some((key) => matches(token, key))));
    },
  }));

/** A lockout counter: a session's `refusals`-th refused stop by another team ends it, unbilled. */
const lockoutAt = (refusals: number): ReferenceOptions =>
  behaviour((base, state) => {
    const counted = new Map<string, number>();
    return {
      stop: (team, jobId) => {
        const reply = base.stop(team, jobId);
        if (reply.status === 403) {
          counted.set(jobId, (counted.get(jobId) ?? 0) + 1);
          if (counted.get(jobId) === refusals) state.sessions.delete(jobId);
        }
        return reply;
      },
    };
  });

/**
 * Identity bound to a kept-alive connection instead of each request: `first` keeps the first team
 * authenticated on it for every later request; `keyless` lends the last valid key's team to a later
 * request without one.
 */
const connectionBoundIdentity = (mode: 'first' | 'keyless'): ReferenceOptions =>
  behaviour((base) => {
    const teamOf = new WeakMap<object, Team>();
    return {
      authenticate: (header, connection) => {
        const known = connection && teamOf.get(connection);
        if (known && mode === 'first') return known;
        const team = base.authenticate(header);
        if (team && connection) teamOf.set(connection, team);
        return team ?? (mode === 'keyless' ? known || undefined : undefined);
      },
    };
  });

export const faultyVariants: Variant[] = [
  // Rule 1: the owner's stop
  {
    name: 'owner-stop-204',
    breaks: 'owner-stop',
    description: 'answers 204 with no body to the owner',
    options: stopReply((r) => (r.status === 200 ? { status: 204, body: '' } : r)),
  },
  {
    name: 'owner-stop-202',
    breaks: 'owner-stop',
    description: 'answers 202 instead of 200 to the owner',
    options: stopReply((r) => (r.status === 200 ? { ...r, status: 202 } : r)),
  },
  {
    name: 'owner-stop-success-false',
    breaks: 'owner-stop',
    description: 'answers 200 with success false',
    options: stopReply((r) => (r.status === 200 ? withBody(r, { success: false }) : r)),
  },
  {
    name: 'owner-stop-success-string',
    breaks: 'owner-stop',
    description: 'answers success "true" as a string',
    options: stopReply((r) => (r.status === 200 ? withBody(r, { success: 'true' }) : r)),
  },
  {
    name: 'owner-stop-with-error-field',
    breaks: 'owner-stop',
    description: 'adds an error field to a success body',
    options: stopReply((r) => (r.status === 200 ? withBody(r, { error: 'none' }) : r)),
  },
  {
    name: 'owner-stop-text-html',
    breaks: 'owner-stop',
    description: 'serves the 200 stop result as text/html',
    options: behaviour((base) => ({
      send: (res, reply) =>
        reply.status === 200 && 'sessionDurationMs' in body(reply)
          ? base.send(res, { ...reply, headers: { 'Content-Type': 'text/html' } })
          : base.send(res, reply),
    })),
  },
  // Rule 2: billing
  {
    name: 'billing-per-minute',
    breaks: 'billing',
    description: 'bills started minutes, not seconds',
    options: behaviour(() => ({ bill: billAt(2, (ms) => Math.ceil(ms / 60_000) * 60) })),
  },
  {
    name: 'billing-started-minute-after-first',
    breaks: 'billing',
    holdsPastAMinute: true,
    description: 'prorates by the second within the first minute, then bills every started minute (61 s is billed 4 credits)',
    options: behaviour(() => ({ bill: (ms) => (ms < 60_000 ? billAt(2, (t) => Math.ceil(t / 1000))(ms) : Math.ceil(ms / 60_000) * 2) })),
  },
  {
    name: 'billing-rate-3',
    breaks: 'billing',
    description: 'bills 3 credits per minute',
    options: behaviour(() => ({ bill: billAt(3, (ms) => Math.ceil(ms / 1000)) })),
  },
  {
    name: 'billing-rate-1',
    breaks: 'billing',
    description: 'bills 1 credit per minute',
    options: behaviour(() => ({ bill: billAt(1, (ms) => Math.ceil(ms / 1000)) })),
  },
  {
    name: 'billing-whole-credits',
    breaks: 'billing',
    description: 'bills max(2, ceil(hours x 120)) whole credits, as the hosted service does',
    options: behaviour(() => ({ bill: (ms) => Math.max(2, Math.ceil((ms / 3_600_000) * 120)) })),
  },
  {
    name: 'billing-milliseconds-as-seconds',
    breaks: 'billing',
    description: 'treats milliseconds as seconds when billing',
    options: behaviour(() => ({ bill: billAt(2, (ms) => ms) })),
  },
  {
    name: 'duration-in-seconds',
    breaks: 'billing',
    description: 'reports sessionDurationMs in seconds',
    options: stopReply((r) => (r.status === 200 ? withBody(r, { sessionDurationMs: Number(body(r).sessionDurationMs) / 1000 }) : r)),
  },
  { name: 'duration-inflated', breaks: 'billing', description: 'reports and bills 500 ms more than the session lasted', options: durationOffBy(500) },
  {
    name: 'duration-whole-seconds',
    breaks: 'billing',
    description: 'truncates sessionDurationMs to whole seconds',
    options: stopReply((r) => (r.status === 200 ? withBody(r, { sessionDurationMs: Math.floor(Number(body(r).sessionDurationMs) / 1000) * 1000 }) : r)),
  },
  {
    name: 'credits-as-string',
    breaks: 'billing',
    description: 'reports creditsBilled as a string',
    options: stopReply((r) => (r.status === 200 ? withBody(r, { creditsBilled: String(body(r).creditsBilled) }) : r)),
  },
  {
    name: 'clock-from-scrape',
    breaks: 'billing',
    description: 'starts billing a session when its scrape job was created, not at the interact that created it',
    options: behaviour(clockFromScrape),
  },
  {
    name: 'clock-from-scrape-credits-only',
    breaks: 'billing',
    description: 'bills from the scrape, and reports only success and creditsBilled (no sessionDurationMs to show the clock)',
    options: behaviour((base, state) => ({
      ...clockFromScrape(base, state),
      stop: (team, jobId) => {
        const reply = base.stop(team, jobId);
        return reply.status === 200 ? { ...reply, body: { success: true, creditsBilled: body(reply).creditsBilled } } : reply;
      },
    })),
  },
  {
    name: 'clock-from-last-interact',
    breaks: 'billing',
    description: 'restarts the billing clock at every interact call on a session',
    options: behaviour((base, state) => ({
      interact: (team, jobId, body) => {
        const session = state.sessions.get(jobId);
        if (session && session.teamId === team.id) session.startedAt = state.clock();
        return base.interact(team, jobId, body);
      },
    })),
  },
  // Rule 3: foreign team
  {
    name: 'foreign-gets-404',
    breaks: 'foreign-team',
    description: "answers 404 to another team's stop",
    options: stopReply((r) => (r.status === 403 ? { ...r, status: 404 } : r)),
  },
  {
    name: 'foreign-gets-200',
    breaks: 'foreign-team',
    description: 'lets another team stop the session',
    options: behaviour((base, state) => ({
      stop: (team, jobId) => {
        const session = state.sessions.get(jobId);
        return base.stop(session ? state.teams.find((t) => t.id === session.teamId)! : team, jobId);
      },
    })),
  },
  {
    name: 'foreign-403-still-stops',
    breaks: 'foreign-team',
    description: 'answers 403 to another team but stops the session anyway',
    options: stopReply((r, _team, jobId, state) => {
      if (r.status === 403) state.sessions.delete(jobId);
      return r;
    }),
  },
  {
    name: 'foreign-refusal-restarts-clock',
    breaks: 'foreign-team',
    description: "restarts a session's billing clock when another team's stop is refused",
    options: refusalRestartsClock(403),
  },
  {
    name: 'forbidden-quotes-owner-key',
    breaks: 'foreign-team',
    description: "names, in another team's 403, the start of the key that owns the session",
    options: stopReply((r, _team, jobId, state) => {
      const owner = state.teams.find((t) => t.id === state.sessions.get(jobId)?.teamId);
      return r.status === 403 && owner ? withBody(r, { error: `Forbidden: the session belongs to key ${owner.keys[0].slice(0, 22)}...` }) : r;
    }),
  },
  {
    name: 'forbidden-tells-billing-in-words',
    breaks: 'foreign-team',
    description: "tells another team, in its 403's words, how long the session has run and what it has cost so far",
    options: stopReply((r, _team, jobId, state) => {
      const session = state.sessions.get(jobId);
      return r.status === 403 && session
        ? withBody(r, {
            error: `Forbidden: session running ${Math.round(state.clock() - session.startedAt)} ms, ${creditsFor(state.clock() - session.startedAt)} credits so far`,
          })
        : r;
    }),
  },
  {
    name: 'forbidden-reveals-billing',
    breaks: 'foreign-team',
    description: "tells another team the session's duration and credits so far in its 403",
    options: stopReply((r, _team, jobId, state) => (r.status === 403 ? withBody(r, billingSoFar(state, jobId)) : r)),
  },
  {
    name: 'refusal-then-interact-restarts-clock',
    breaks: 'foreign-team',
    description: "restarts a session's clock at the owner's first interact after another team's refused stop",
    options: behaviour((base, state) => {
      const refused = new Set<string>();
      return {
        stop: (team, jobId) => {
          const reply = base.stop(team, jobId);
          if (reply.status === 403) refused.add(jobId);
          return reply;
        },
        interact: (team, jobId, body) => {
          const session = state.sessions.get(jobId);
          if (session && session.teamId === team.id && refused.delete(jobId)) session.startedAt = state.clock();
          return base.interact(team, jobId, body);
        },
      };
    }),
  },
  {
    name: 'connection-keeps-first-team',
    breaks: 'foreign-team',
    description: 'authenticates a kept-alive connection once: every later request on it acts as the first team that used it, whatever key it carries',
    options: connectionBoundIdentity('first'),
  },
  {
    name: 'second-foreign-refusal-ends-session',
    breaks: 'foreign-team',
    description:
      "counts a session's refused stops by another team (a lockout counter) and at the second ends the session without billing it (the second refusal comes on a connection the owner's request used)",
    options: lockoutAt(2),
  },
  {
    name: 'foreign-stop-by-upper-case-id',
    breaks: 'foreign-team',
    description:
      "finds a job whatever the case of its id, but checks whose it is against the id as given: another team's stop with the id in upper case stops the session",
    options: behaviour((base, state) => ({
      send(res, reply) {
        const raw = /^\/v2\/scrape\/([^/]+)\/interact$/.exec(res.req.url ?? '')?.[1];
        const session =
          raw && raw !== raw.toLowerCase() && res.req.method === 'DELETE' && reply.status === 403 ? state.sessions.get(raw.toLowerCase()) : undefined;
        // The id as given has no owner on record, so nothing forbids the stop: it goes through as the owner's.
        return base.send(res, session ? base.stop(state.teams.find((owner) => owner.id === session.teamId)!, session.jobId) : reply);
      },
    })),
  },
  {
    name: 'third-foreign-refusal-ends-session',
    breaks: 'foreign-team',
    description: "counts a session's refused stops by another team and at the third ends the session without billing it",
    options: lockoutAt(3),
  },
  // Rule 4: unknown job
  {
    name: 'unknown-job-200',
    breaks: 'unknown-job',
    description: 'answers 200 when there is no session',
    options: stopReply((r) => (r.status === 404 ? { status: 200, body: { success: true } } : r)),
  },
  {
    name: 'unknown-job-stops-latest-session',
    breaks: 'unknown-job',
    rules: ['unknown-job', 'stop-is-final'],
    description: "stops the team's latest session when asked to stop a job that has none, and answers 200 with that session's settlement",
    options: behaviour((base, state) => ({
      stop: (team, jobId) => {
        const latest = [...state.sessions.values()].filter((session) => session.teamId === team.id).at(-1);
        return state.sessions.has(jobId) || state.stopped.has(jobId) || state.jobs.has(jobId) || !latest
          ? base.stop(team, jobId)
          : base.stop(team, latest.jobId);
      },
    })),
  },
  {
    name: 'unknown-job-400',
    breaks: 'unknown-job',
    description: 'answers 400 when there is no session',
    options: stopReply((r) => (r.status === 404 ? { ...r, status: 400 } : r)),
  },
  {
    name: 'job-without-session-403',
    breaks: 'unknown-job',
    description: 'answers 403 for a scrape job that never had a session',
    options: stopReply((r, _team, jobId, state) => (r.status === 404 && state.jobs.has(jobId) && !state.stopped.has(jobId) ? { ...r, status: 403 } : r)),
  },
  // Rule 5: authentication and the side effects of refused requests
  {
    name: 'missing-key-is-owner',
    breaks: 'authentication',
    description: 'treats a request without Authorization as the first team',
    options: behaviour((base, state) => ({ authenticate: (h) => (h === undefined ? state.teams[0] : base.authenticate(h)) })),
  },
  {
    name: 'unknown-key-is-owner',
    breaks: 'authentication',
    description: 'treats any unknown bearer key as the first team',
    options: behaviour((base, state) => ({ authenticate: (h) => base.authenticate(h) ?? (/^bearer\s+\S+$/i.test(h ?? '') ? state.teams[0] : undefined) })),
  },
  {
    name: 'any-scheme-accepted',
    breaks: 'authentication',
    description: 'takes the second word of Authorization as the key whatever the scheme',
    options: behaviour((base) => ({ authenticate: (h) => base.authenticate(h?.replace(/^\s*\S+/, 'Bearer')) })),
  },
  {
    name: 'scheme-case-sensitive',
    breaks: 'authentication',
    description: 'refuses a lower-case bearer scheme',
    options: behaviour((base) => ({ authenticate: (h) => (h?.startsWith('Bearer ') ? base.authenticate(h) : undefined) })),
  },
  {
    name: 'header-name-case-sensitive',
    breaks: 'authentication',
    description: 'reads the key only from a header spelt "Authorization", as a hand-written parser may',
    options: behaviour((base) => ({ authenticate: (h, connection, name) => (name === 'Authorization' ? base.authenticate(h, connection) : undefined) })),
  },
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
  {
    name: 'refusals-add-up',
    breaks: 'authentication',
    description: 'ends the live sessions at the 8th refusal (401) since a session last opened: each refusal alone is harmless, several kinds together are not',
    options: behaviour((base, state) => {
      let refusals = 0;
      return {
        interact: (team, jobId, body) => {
          if (!state.sessions.has(jobId)) refusals = 0;
          return base.interact(team, jobId, body);
        },
        error: (status, message, headers) => {
          if (status === 401 && ++refusals === 8) state.sessions.clear();
          return base.error(status, message, headers);
        },
      };
    }),
  },
  {
    name: 'empty-token-500',
    breaks: 'authentication',
    description: 'crashes (500) on "Bearer" with no token',
    options: behaviour((base) => ({
      authenticate: (h) => {
        if (h !== undefined && /^\s*bearer\s*$/i.test(h)) throw new Error('no token');
        return base.authenticate(h);
      },
    })),
  },
  {
    name: 'refusal-destroys-repeat-200',
    breaks: 'authentication',
    caughtAs: 'not verifiable',
    description:
      "ends the session named in a stop it refuses with 401, and answers any later owner's stop 200 {success: true}, as the hosted service answers repeat stops: no answer can prove the harm",
    options: behaviour((base, state) => ({
      send: stopsWhenRefusing(401, base, state),
      stop: (team, jobId) => {
        const reply = base.stop(team, jobId);
        return reply.status === 404 && state.stopped.get(jobId)?.teamId === team.id ? { status: 200, body: { success: true } } : reply;
      },
    })),
  },
  {
    name: 'auth-refusal-restarts-clock',
    breaks: 'authentication',
    description: 'restarts the billing clock of the session named in a stop it answers 401',
    options: refusalRestartsClock(401),
  },
  {
    name: 'key-case-insensitive',
    breaks: 'authentication',
    description: 'compares keys without regard to case',
    options: keyMatch((token, key) => token.toLowerCase() === key.toLowerCase()),
  },
  {
    name: 'key-prefix-match',
    breaks: 'authentication',
    description: 'accepts any token that starts with a valid key',
    options: keyMatch((token, key) => token.startsWith(key)),
  },
  {
    name: 'key-truncated-match',
    breaks: 'authentication',
    description: 'accepts a valid key with its last character missing (compares the token as a prefix of the key)',
    options: keyMatch((token, key) => token.length >= key.length - 1 && key.startsWith(token)),
  },
  {
    name: 'unauthorized-reveals-owner',
    breaks: 'authentication',
    description: 'names the team that owns the session in its 401 answers',
    options: behaviour((base, state) => ({
      send: (res, reply) => {
        const owner = state.sessions.get(jobOf(res) ?? '')?.teamId;
        base.send(res, reply.status === 401 && owner ? withBody(reply, { ownerTeam: owner }) : reply);
      },
    })),
  },
  {
    name: 'keyless-rides-connection',
    breaks: 'authentication',
    description:
      'remembers the team of the last valid key on each kept-alive connection, and takes a later request on it without a valid key as that team (a per-connection auth cache)',
    options: connectionBoundIdentity('keyless'),
  },
  // Rule 6: rate limiting
  {
    name: 'limiter-per-address',
    breaks: 'rate-limit',
    description: "limits per client address instead of per team, one window of 100 in 3 s for every route: a team's burst gets the other teams refused",
    options: behaviour((_base, state) => {
      // A window of seconds: a busy runner's burst meets the refusal well inside it.
      const take = createRateLimiter({ limit: 100, windowMs: 3000 }, state.clock);
      return { limit: () => take('addr:every-route') };
    }),
  },
  { name: 'no-rate-limit', breaks: 'rate-limit', description: 'never limits', options: behaviour(() => ({ limit: () => ({ allowed: true }) })) },
  {
    name: 'rate-limit-503',
    breaks: 'rate-limit',
    description: 'answers 503 instead of 429 over the limit',
    options: behaviour((base) => ({ error: (status, message, headers) => base.error(status === 429 ? 503 : status, message, headers) })),
  },
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
  {
    name: 'limiter-counts-late',
    breaks: 'rate-limit',
    description:
      'counts each admitted request 300 ms late (a counter updated without a lock), so a burst of concurrent stops gets far more through than the limit its refusals state',
    options: statesItsLimit((state, rate) => {
      const windows = new Map<string, { start: number; count: number }>();
      return (key) => {
        const { limit, windowMs } = rate(key);
        const now = state.clock();
        let window = windows.get(key);
        if (!window || now - window.start >= windowMs) windows.set(key, (window = { start: now, count: 0 }));
        if (window.count >= limit) return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((window.start + windowMs - now) / 1000)) };
        const counted = window;
        setTimeout(() => (counted.count += 1), 300).unref();
        return { allowed: true };
      };
    }),
  },
  {
    name: 'limiter-shared-between-teams',
    breaks: 'rate-limit',
    description:
      "counts every team's requests in one window, each team held to its own stated limit: the other teams' traffic gets the burst team refused before its own limit",
    options: statesItsLimit((state, rate) => {
      const windows = new Map<string, { start: number; count: number }>();
      return (key) => {
        const { limit } = rate(key);
        const group = key.slice(key.indexOf(':'));
        const now = state.clock();
        // One window for all, of the burst team's length: a window of the others' length could begin between their requests and its.
        const windowMs = 2000;
        let window = windows.get(group);
        if (!window || now - window.start >= windowMs) windows.set(group, (window = { start: now, count: 0 }));
        window.count += 1;
        return window.count <= limit
          ? { allowed: true }
          : { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((window.start + windowMs - now) / 1000)) };
      };
    }),
  },
  {
    name: 'limiter-shared-by-plan',
    breaks: 'rate-limit',
    description:
      "keys its limiter by plan, not team: the owner's and the foreign team's requests count in one window of 100 in 3 s (the burst team's plan apart), so one team's traffic gets the other refused",
    options: behaviour((base, state) => {
      const take = createRateLimiter({ limit: 100, windowMs: 3000 }, state.clock);
      return { limit: (key) => (key.startsWith('team-burst:') || !key.endsWith(':interact') ? base.limit(key) : take('plan-standard:interact')) };
    }),
  },
  {
    name: 'throttled-stop-still-stops',
    breaks: 'rate-limit',
    description: 'stops the session named in a stop it answers 429 (the limiter runs after the handler)',
    // 40 in a 3 s window: the first wave of a burst goes past it at once, even slowed by a busy machine, and its throttled stop falls inside the window.
    options: withLimit({ limit: 40, windowMs: 3000 }, (base, state) => ({
      send: stopsWhenRefusing(429, base, state),
    })),
  },
  {
    name: 'rate-limited-reveals-billing',
    breaks: 'rate-limit',
    description: "puts the session's duration and credits so far in a 429 to its stop",
    options: withLimit({ limit: 40, windowMs: 3000 }, (base, state) => ({
      send: (res, reply) => {
        const jobId = jobOf(res) ?? '';
        base.send(res, res.req.method === 'DELETE' && reply.status === 429 && state.sessions.has(jobId) ? withBody(reply, billingSoFar(state, jobId)) : reply);
      },
    })),
  },
  // Rule 7: finality
  {
    name: 'second-stop-charges-again',
    breaks: 'stop-is-final',
    description: 'answers a second stop with 200 and a new charge',
    options: stopReply((r, team, jobId, state) =>
      r.status === 404 && state.stopped.get(jobId)?.teamId === team.id
        ? { status: 200, body: { success: true, sessionDurationMs: 1000, creditsBilled: 0.033333 } }
        : r,
    ),
  },
  {
    name: 'concurrent-stops-both-charge',
    breaks: 'stop-is-final',
    timingFault: true,
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
  {
    name: 'repeat-stop-charged-again',
    breaks: 'stop-is-final',
    description:
      'answers a stop of a stopped session with its first settlement, exactly (a report), and charges that settlement again: a fraction of a credit each time, as only the account shows',
    options: behaviour((base, state) => {
      const first = new Map<string, Reply>();
      return {
        stop: (team, jobId) => {
          const reply = base.stop(team, jobId);
          if (reply.status === 200) first.set(jobId, reply);
          const earlier = first.get(jobId);
          if (reply.status !== 404 || !earlier || state.stopped.get(jobId)?.teamId !== team.id) return reply;
          chargeAgain(state, team.id, jobId, earlier);
          return earlier;
        },
      };
    }),
  },
  {
    name: 'simultaneous-stops-charged-twice',
    breaks: 'stop-is-final',
    slow: true,
    description:
      "bills whole elapsed seconds (sessions alike cost alike) and answers a repeat stop with the first settlement, as the hosted service does; answers a stop once its browser is released, 150 ms on, and a stop of the owner's meanwhile is charged again too: only the account shows, and only stops sent at once",
    options: behaviour((base, state) => {
      const releasing = new Map<string, Reply>();
      const first = new Map<string, Reply>();
      return {
        bill: billAt(2, (ms) => Math.floor(ms / 1000)),
        stop: (team, jobId) => {
          const earlier = first.get(jobId);
          if (earlier && !state.sessions.has(jobId) && state.stopped.get(jobId)?.teamId === team.id) {
            if (releasing.has(jobId)) chargeAgain(state, team.id, jobId, earlier);
            return earlier;
          }
          const reply = base.stop(team, jobId);
          if (reply.status === 200) releasing.set(jobId, reply), first.set(jobId, reply);
          return reply;
        },
        send: (res, reply) => {
          const job = [...releasing].find(([, releasing]) => releasing === reply)?.[0];
          if (!job) return base.send(res, reply);
          void sleep(150).then(() => (releasing.delete(job), base.send(res, reply)));
        },
      };
    }),
  },
  {
    name: 'repeat-stop-zero-charged-again',
    breaks: 'stop-is-final',
    description:
      'answers a stop of a stopped session that nothing is billed now (creditsBilled 0), and charges its first settlement again, as only the account shows',
    options: behaviour((base, state) => {
      const first = new Map<string, number>();
      return {
        stop: (team, jobId) => {
          const reply = base.stop(team, jobId);
          if (reply.status === 200) first.set(jobId, Number(body(reply).creditsBilled));
          if (reply.status !== 404 || !first.has(jobId) || state.stopped.get(jobId)?.teamId !== team.id) return reply;
          state.charges.push({ jobId, teamId: team.id, durationMs: 0, credits: first.get(jobId)!, at: state.clock() });
          return { status: 200, body: { success: true, sessionDurationMs: 5, creditsBilled: 0 } };
        },
      };
    }),
  },
  {
    name: 'simultaneous-opens-orphan',
    breaks: 'stop-is-final',
    sessionCap: 2,
    leaksSessions: true,
    description:
      "registers a session only once its browser has booted (200 ms): interacts arriving together on a job each open a browser, and all but the last are orphaned, never stoppable, yet still hold a slot of the team's cap of 2",
    options: behaviour((base, state) => {
      const orphans: string[] = [];
      return {
        interact: (team, jobId, body) => {
          const existing = state.sessions.get(jobId);
          const booting = existing !== undefined && state.clock() - existing.startedAt < 200;
          const live = [...state.sessions.values()].filter((session) => session.teamId === team.id).length + orphans.filter((id) => id === team.id).length;
          if (!existing && live >= 2 && state.jobs.get(jobId)?.teamId === team.id)
            return base.error(429, 'Concurrency limit exceeded: at most 2 browser sessions at once.', {});
          if (booting) orphans.push(team.id), state.sessions.delete(jobId);
          return base.interact(team, jobId, body);
        },
      };
    }),
  },
  {
    name: 'cap-counts-late',
    breaks: 'stop-is-final',
    sessionCap: 3,
    description:
      'caps each team at three live sessions (SESSION_CAP=3) but counts a session only 200 ms after it opened (its browser booting): interacts sent at once on new jobs all open',
    options: behaviour((base, state) => ({
      interact: (team, jobId, body) => {
        const counted = [...state.sessions.values()].filter((session) => session.teamId === team.id && state.clock() - session.startedAt >= 200).length;
        if (counted >= 3 && !state.sessions.has(jobId) && state.jobs.get(jobId)?.teamId === team.id)
          return base.error(429, 'Concurrency limit exceeded: at most 3 browser sessions at once.', {});
        return base.interact(team, jobId, body);
      },
    })),
  },
  {
    name: 'refused-open-starts-clock',
    breaks: 'stop-is-final',
    sessionCap: 3,
    description:
      "caps each team at 3 live sessions (SESSION_CAP=3), and an interact it refuses for the cap starts the job's clock: the session opened on that job later bills from the refusal",
    options: behaviour((base, state) => {
      const capped = capsSessions(3, true).behaviour!(base, state);
      const refusedAt = new Map<string, number>();
      return {
        ...capped,
        interact: (team, jobId, body) => {
          const reply = capped.interact!(team, jobId, body);
          const opened = state.sessions.get(jobId);
          if (reply.status === 429) refusedAt.set(jobId, refusedAt.get(jobId) ?? state.clock());
          else if (reply.status === 200 && opened && refusedAt.has(jobId)) opened.startedAt = refusedAt.get(jobId)!;
          if (reply.status === 200) refusedAt.delete(jobId);
          return reply;
        },
      };
    }),
  },
  {
    name: 'cap-shared-by-plan',
    breaks: 'stop-is-final',
    sessionCap: 3,
    description:
      "counts the owner's and the foreign team's live sessions against one cap of 3, their plan's (SESSION_CAP=3): one team's sessions get the other refused",
    options: behaviour((base, state) => ({
      interact: (team, jobId, body) => {
        const plan = (teamId: string) => (teamId === 'team-burst' ? teamId : 'plan-standard');
        const live = [...state.sessions.values()].filter((session) => plan(session.teamId) === plan(team.id)).length;
        if (live >= 3 && !state.sessions.has(jobId) && state.jobs.get(jobId)?.teamId === team.id)
          return base.error(429, 'Concurrency limit exceeded: at most 3 browser sessions at once.', { 'Retry-After': '1' });
        return base.interact(team, jobId, body);
      },
    })),
  },
  {
    name: 'stop-keeps-cap-slot',
    breaks: 'stop-is-final',
    description:
      "keeps counting a stopped session against its team's cap of 3: once three of a team's sessions were stopped, no interact of the team opens one again",
    options: behaviour((base, state) => ({
      interact: (team, jobId, body) => {
        const held = [...state.sessions.values(), ...state.stopped.values()].filter((session) => session.teamId === team.id).length;
        if (held >= 3 && !state.sessions.has(jobId) && state.jobs.get(jobId)?.teamId === team.id)
          return base.error(429, 'Concurrency limit exceeded: at most 3 browser sessions at once.', {});
        return base.interact(team, jobId, body);
      },
    })),
  },
  {
    name: 'account-never-debited',
    breaks: 'stop-is-final',
    description: 'reports each settlement in creditsBilled but never charges the account for it (billing is not settled)',
    options: behaviour((base, state) => ({
      stop: (team, jobId) => {
        const reply = base.stop(team, jobId);
        if (reply.status === 200) state.charges.pop();
        return reply;
      },
    })),
  },
  {
    name: 'refusal-charges-account',
    breaks: 'stop-is-final',
    // Another team's refusals of live sessions come from rule 3; the account sees them.
    rules: ['foreign-team', 'stop-is-final'],
    description:
      "charges the owner's account what a session has cost so far whenever another team's stop of it is refused, unreported; the owner's stop then bills the whole session",
    options: refusalCharges('owner'),
  },
  {
    name: 'refusal-charges-caller',
    breaks: 'stop-is-final',
    // Another team's refusals of live sessions come from rule 3; its own account sees them.
    rules: ['foreign-team', 'stop-is-final'],
    description:
      "charges the team whose stop of another team's session it refuses what that session has cost so far, unreported; the owner's account is untouched",
    options: refusalCharges('caller'),
  },
  {
    name: 'charges-the-next-caller',
    breaks: 'stop-is-final',
    // Another team's refusals of the owner's sessions come from rule 3.
    rules: ['foreign-team', 'stop-is-final'],
    description:
      "debits a stop's charge from the team whose request it receives next (billing kept in a request context): another team asking right after the owner's stop takes its charge",
    options: behaviour((base, state) => {
      const pending: { teamId: string }[] = [];
      return {
        authenticate: (header, connection, name) => {
          const team = base.authenticate(header, connection, name);
          if (team) for (const charge of pending.splice(0)) charge.teamId = team.id;
          return team;
        },
        stop: (team, jobId) => {
          const charges = state.charges.length;
          const reply = base.stop(team, jobId);
          pending.push(...state.charges.slice(charges));
          return reply;
        },
      };
    }),
  },
  {
    name: 'account-charged-by-started-minute',
    breaks: 'stop-is-final',
    description: 'reports creditsBilled prorated by the second, as it should, but charges the account 2 credits per started minute',
    options: chargedByStartedMinute(false),
  },
  {
    name: 'minimal-body-charged-by-started-minute',
    breaks: 'billing',
    description: 'answers {"success": true} only, and charges the account 2 credits per started minute',
    options: chargedByStartedMinute(true),
  },
  {
    name: 'minimal-body-refusal-ends-session',
    breaks: 'foreign-team',
    description:
      'answers {"success": true} only; ends a session, unbilled, when it refuses another team\'s stop of it, and answers the owner\'s later stop 200 {"success": true} all the same',
    options: behaviour((base, state) => ({
      send: stopsWhenRefusing(403, base, state),
      stop: (team, jobId) => {
        const reply = base.stop(team, jobId);
        const stopped = reply.status === 404 ? state.stopped.get(jobId) : undefined;
        // Another team is refused as before, so that only the owner's stop can tell the session ended.
        if (stopped && stopped.teamId !== team.id) return base.error(403, 'Forbidden.');
        return reply.status === 200 || stopped ? { status: 200, body: { success: true } } : reply;
      },
    })),
  },
  {
    name: 'second-stop-500',
    breaks: 'stop-is-final',
    description: 'crashes (500) on a stopped session',
    options: stopReply((r, _team, jobId, state) =>
      r.status === 404 && state.stopped.has(jobId) ? { status: 500, body: { success: false, error: 'session gone' } } : r,
    ),
  },
  {
    name: 'stopped-session-200-for-anyone',
    breaks: 'stop-is-final',
    description: 'answers 200 {success: true} to any team that stops an already stopped session',
    options: stopReply((r, _team, jobId, state) =>
      (r.status === 404 || r.status === 403) && state.stopped.has(jobId) ? { status: 200, body: { success: true } } : r,
    ),
  },
  {
    name: 'stopped-reveals-billing',
    breaks: 'stop-is-final',
    description: "puts the stopped session's duration and credits in the 404 another team gets",
    options: stopReply((r, team, jobId, state) =>
      r.status === 404 && state.stopped.has(jobId) && state.stopped.get(jobId)!.teamId !== team.id ? withBody(r, billingSoFar(state, jobId)) : r,
    ),
  },
  {
    name: 'refusal-revives-stopped',
    breaks: 'stop-is-final',
    description: "writes a stopped session back as running when another team's stop of it is refused (a stale write-back), so it bills again",
    options: stopReply((r, team, jobId, state) => {
      const stopped = state.stopped.get(jobId);
      if ((r.status === 403 || r.status === 404) && stopped && stopped.teamId !== team.id && !state.sessions.has(jobId)) {
        state.stopped.delete(jobId);
        state.sessions.set(jobId, { ...stopped, startedAt: state.clock() });
      }
      return r;
    }),
  },
  {
    name: 'interact-after-stop-ghost',
    breaks: 'stop-is-final',
    description: 'answers an interact on a stopped session 200, but no session runs: its stop then answers 404',
    options: behaviour((base, state) => ({
      interact: (team, jobId, body) =>
        state.stopped.get(jobId)?.teamId === team.id && !state.sessions.has(jobId)
          ? { status: 200, body: { success: true, stdout: '', result: '', stderr: '', exitCode: 0, killed: false } }
          : base.interact(team, jobId, body),
    })),
  },
  {
    name: 'stale-stopped-marker',
    breaks: 'stop-is-final',
    // The session its stale marker hides can never be stopped: it runs until the variant's server closes.
    leaksSessions: true,
    description:
      "begins a new session on an interact after a stop, but answers that session's first stop 404 from a stale 'stopped' marker, and leaves it running",
    options: behaviour((base, state) => {
      const revived = new Set<string>();
      return {
        interact: (team, jobId, body) => {
          if (state.stopped.get(jobId)?.teamId === team.id && !state.sessions.has(jobId)) revived.add(jobId);
          return base.interact(team, jobId, body);
        },
        stop: (team, jobId) => (revived.delete(jobId) ? base.error(404, 'Browser session not found.') : base.stop(team, jobId)),
      };
    }),
  },
  {
    name: 'refused-interact-opens-session',
    breaks: 'stop-is-final',
    description: 'answers an interact on a stopped session 410, as the hosted service does, but opens a new billed session all the same',
    options: behaviour((base, state) => ({
      interact: (team, jobId, body) => {
        if (state.stopped.get(jobId)?.teamId !== team.id || state.sessions.has(jobId)) return base.interact(team, jobId, body);
        base.interact(team, jobId, body);
        return base.error(410, 'This browser session has been destroyed.');
      },
    })),
  },
  // Rule 8: robustness
  {
    name: 'bad-job-id-500',
    breaks: 'malformed-job-id',
    description: 'crashes (500) on a jobId that is not a UUID',
    options: behaviour((base) => ({ error: (status, message, headers) => base.error(/job ID/i.test(message) ? 500 : status, message, headers) })),
  },
  {
    name: 'long-job-id-500',
    breaks: 'malformed-job-id',
    description: 'crashes (500) on a jobId longer than 1000 characters',
    options: behaviour((base) => ({
      send: (res, reply) => base.send(res, reply.status === 400 && (res.req.url?.length ?? 0) > 1000 ? { ...reply, status: 500 } : reply),
    })),
  },
  // Rule 9: JSON answers
  {
    name: 'errors-as-text-plain',
    breaks: 'json-answers',
    description: 'serves error bodies as text/plain',
    options: behaviour((base) => ({
      send: (res, reply) => base.send(res, reply.status >= 400 ? { ...reply, headers: { ...reply.headers, 'Content-Type': 'text/plain' } } : reply),
    })),
  },
  {
    name: 'error-without-success',
    breaks: 'json-answers',
    description: 'leaves success out of error bodies',
    options: behaviour(() => ({ error: (status, message, headers) => ({ status, body: { error: message }, headers }) })),
  },
  {
    name: 'error-multiline',
    breaks: 'json-answers',
    description: 'writes a stack trace into error',
    options: behaviour((base) => ({ error: (status, message, headers) => base.error(status, `${message}\n    at handler (server.js:1:1)`, headers) })),
  },
  {
    name: 'unauthorized-empty-body',
    breaks: 'json-answers',
    description: 'answers 401 with an empty body',
    options: behaviour((base) => ({
      error: (status, message, headers) => (status === 401 ? { status, body: '', headers } : base.error(status, message, headers)),
    })),
  },
];

/**
 * Faults that show only in a particular order of operations: every rule-by-rule test passes them,
 * and only the sequences rule, which tries orders nobody wrote down, catches them.
 */
export const orderFaults: Variant[] = [
  {
    name: 'revive-with-old-clock',
    breaks: 'sequences',
    runsEveryRule: true,
    description: 'answers an interact on a stopped session by bringing the old session back, with its old clock',
    options: behaviour((base, state) => ({
      interact: (team, jobId, body) => {
        const old = state.stopped.get(jobId);
        if (old && old.teamId === team.id && !state.sessions.has(jobId)) {
          state.stopped.delete(jobId);
          state.sessions.set(jobId, old);
        }
        return base.interact(team, jobId, body);
      },
    })),
  },
  // Faults of the second time: state kept across repeated steps of one session (counters, cached answers).
  {
    name: 'second-interact-after-stop-ghost',
    breaks: 'sequences',
    runsEveryRule: true,
    description:
      'refuses the first interact on a stopped session (410), but lets a retry through with 200 although no session starts: its stop then answers 404',
    options: behaviour((base, state) => {
      const retries = new Map<string, number>();
      return {
        interact: (team, jobId, body) => {
          if (state.stopped.get(jobId)?.teamId !== team.id || state.sessions.has(jobId)) return base.interact(team, jobId, body);
          const attempt = (retries.get(jobId) ?? 0) + 1;
          retries.set(jobId, attempt);
          return attempt === 1
            ? base.error(410, 'Browser session has ended.')
            : { status: 200, body: { success: true, stdout: '', result: '', stderr: '', exitCode: 0, killed: false } };
        },
      };
    }),
  },
  {
    name: 'stopped-flag-toggles',
    breaks: 'sequences',
    runsEveryRule: true,
    description:
      "keeps a session's 'stopped' as a flag that each further stop flips instead of sets: the third stop finds it cleared and bills the session again",
    options: behaviour((base, state) => {
      const stopped = new Map<string, boolean>();
      return {
        stop: (team, jobId) => {
          const reply = base.stop(team, jobId);
          if (reply.status === 200) stopped.set(jobId, true);
          const ended = state.stopped.get(jobId);
          if (reply.status !== 404 || ended?.teamId !== team.id) return reply;
          stopped.set(jobId, !stopped.get(jobId));
          if (!stopped.get(jobId)) return reply;
          const durationMs = Math.max(0, Math.round(state.clock() - ended.startedAt));
          const credits = base.bill(durationMs);
          state.charges.push({ jobId, teamId: team.id, durationMs, credits, at: state.clock() });
          return { status: 200, body: { success: true, sessionDurationMs: durationMs, creditsBilled: credits } };
        },
      };
    }),
  },
];

/**
 * An order fault that needs a rarer order (two sessions of different ages stopped at once): the
 * sequences rule catches it in most runs, not in every one, so it is measured by
 * `npm run bench sequences` (catch rate over seeds), not required by the matrix.
 */
export const rarerOrderFaults: Variant[] = [
  {
    name: 'simultaneous-stops-swap-results',
    breaks: 'sequences',
    runsEveryRule: true,
    description: "answers two overlapping stops of a team's different sessions both with the later one's result (a per-team variable shared across an await)",
    options: behaviour((base, state) => {
      const lastStop = new Map<string, { jobId: string; reply: Reply }>();
      return {
        stop: (team, jobId) => {
          const reply = base.stop(team, jobId);
          if (reply.status === 200) lastStop.set(team.id, { jobId, reply });
          return reply;
        },
        send: (res, reply) => {
          const jobId = jobOf(res);
          const teamId = jobId && state.stopped.get(jobId)?.teamId;
          if (res.req.method !== 'DELETE' || reply.status !== 200 || !teamId) return base.send(res, reply);
          void sleep(30).then(() => {
            const last = lastStop.get(teamId);
            base.send(res, last && last.jobId !== jobId ? last.reply : reply);
          });
        },
      };
    }),
  },
];

const keyless = (base: Behaviour): Partial<Behaviour> => {
  const anonymous: Team = { id: 'anonymous', name: 'Keyless tier', keys: [] };
  return { authenticate: (h) => (h === undefined ? anonymous : base.authenticate(h)) };
};

/** Caps each team's live sessions, as the hosted service's plans do: the interact that would open one more answers 429. A stop frees its slot `releaseMs` later. */
export const capsSessions = (cap: number, retryAfter: boolean, releaseMs = 0): ReferenceOptions =>
  behaviour((base, state) => {
    const releasing: { teamId: string; until: number }[] = [];
    return {
      interact: (team, jobId, body) => {
        const held = releasing.filter(({ teamId, until }) => teamId === team.id && until > state.clock()).length;
        const live = [...state.sessions.values()].filter((session) => session.teamId === team.id).length + held;
        if (live >= cap && !state.sessions.has(jobId) && state.jobs.get(jobId)?.teamId === team.id) {
          return base.error(429, `Concurrency limit exceeded: at most ${cap} browser sessions at once.`, retryAfter ? { 'Retry-After': '1' } : {});
        }
        return base.interact(team, jobId, body);
      },
      stop: (team, jobId) => {
        const reply = base.stop(team, jobId);
        if (releaseMs && reply.status === 200) releasing.push({ teamId: team.id, until: state.clock() + releaseMs });
        return reply;
      },
    };
  });

export const correctVariants: Variant[] = [
  {
    name: 'minimal-success-body',
    description: 'answers the owner with {"success": true} only',
    options: stopReply((r) => (r.status === 200 ? { ...r, body: { success: true } } : r)),
  },
  {
    name: 'extra-fields',
    description: 'adds cleanupQueued to results and a code to errors',
    options: behaviour((base) => ({
      stop: (t, j) => {
        const r = base.stop(t, j);
        return withBody(r, r.status === 200 ? { cleanupQueued: true } : { code: `E${r.status}` });
      },
    })),
  },
  {
    name: 'other-error-wording',
    description: 'words every error differently',
    options: behaviour((base) => ({
      error: (status, message, headers) => base.error(status, `Request failed (${status}): ${message.toLowerCase()}`, headers),
    })),
  },
  { name: 'keyless-tier', description: 'runs a request without a key as an anonymous team (4xx, not 401)', options: behaviour(keyless) },
  {
    name: 'keyless-tier-over-quota',
    description: 'runs a request without a key as an anonymous team whose quota is used up: 429 to every one of them',
    options: behaviour((base) => ({
      ...keyless(base),
      limit: (key) => (key.startsWith('anonymous:') ? { allowed: false, retryAfterSeconds: 60 } : base.limit(key)),
    })),
  },
  {
    name: 'second-stop-200-without-charge',
    description: 'answers a stopped session with 200 and no creditsBilled, as the hosted service does',
    options: stopReply((r, team, jobId, state) =>
      r.status === 404 && state.stopped.get(jobId)?.teamId === team.id ? { status: 200, body: { success: true } } : r,
    ),
  },
  {
    name: 'second-stop-reports-zero',
    description: 'answers a stopped session with 200, a duration and creditsBilled 0: nothing billed by this request',
    options: stopReply((r, team, jobId, state) =>
      r.status === 404 && state.stopped.get(jobId)?.teamId === team.id
        ? { status: 200, body: { success: true, sessionDurationMs: 5, creditsBilled: 0, alreadyStopped: true } }
        : r,
    ),
  },
  {
    name: 'scrapes-unpriced',
    description: 'states no price in its scrape answers (data.metadata.creditsUsed left out); the account charges one credit a scrape',
    options: behaviour((base) => ({
      scrape: (team, body) => {
        const reply = base.scrape(team, body);
        delete (reply.body as { data?: { metadata?: { creditsUsed?: number } } }).data?.metadata?.creditsUsed;
        return reply;
      },
    })),
  },
  {
    name: 'rate-limit-without-retry-after',
    description: 'sends 429 with no Retry-After header',
    options: behaviour((base) => ({ error: (status, message, headers) => base.error(status, message, status === 429 ? {} : headers) })),
  },
  {
    name: 'rate-limit-other-body',
    description: 'sends 429 with a plain-text body',
    options: behaviour((base) => ({
      send: (res, reply) =>
        reply.status === 429 ? (res.writeHead(429, { 'Content-Type': 'text/plain', ...reply.headers }), res.end('Too Many Requests')) : base.send(res, reply),
    })),
  },
  {
    name: 'provisioning-race',
    description:
      'writes a scrape job 300 ms after answering its scrape, as the hosted service writes it without waiting: an interact sent at once answers 404 "Job not found."',
    options: behaviour((base, state) => ({
      scrape: (team, body) => {
        const reply = base.scrape(team, body);
        const jobId = (reply.body as { data?: { metadata?: { scrapeId?: string } } }).data?.metadata?.scrapeId;
        const job = jobId && state.jobs.get(jobId);
        if (job) {
          state.jobs.delete(jobId);
          setTimeout(() => state.jobs.set(jobId, job), 300).unref();
        }
        return reply;
      },
    })),
  },
  {
    name: 'connection-close',
    description: 'closes the connection after every answer (Connection: close): nothing is kept alive',
    options: behaviour((base) => ({ send: (res, reply) => base.send(res, { ...reply, headers: { ...reply.headers, Connection: 'close' } }) })),
  },
  {
    name: 'slow-answers',
    description: 'delays every answer by 40 ms',
    options: behaviour((base) => ({ send: (res, reply) => void sleep(40).then(() => base.send(res, reply)) })),
  },
  {
    name: 'stalls-a-stop-after-refusals',
    description:
      "delays by 3 s the answer of the first stop that settles a session another caller's stops were refused for three times (a stall on the way back)",
    rules: ['foreign-team'],
    decides: true,
    slow: true,
    options: behaviour((base) => {
      const refused = new Map<string, number>();
      const stalled = new WeakSet<object>();
      let once = false;
      return {
        stop: (team, jobId) => {
          const reply = base.stop(team, jobId);
          const job = jobId.toLowerCase();
          if (reply.status === 403) refused.set(job, (refused.get(job) ?? 0) + 1);
          if (reply.status === 200 && !once && (refused.get(job) ?? 0) >= 3) stalled.add(reply), (once = true);
          return reply;
        },
        send: (res, reply) => void sleep(stalled.has(reply) ? 3000 : 0).then(() => base.send(res, reply)),
      };
    }),
  },
  {
    name: 'json-charset',
    description: 'serves application/json; charset=utf-8',
    options: behaviour((base) => ({
      send: (res, reply) => base.send(res, { ...reply, headers: { 'Content-Type': 'application/json; charset=utf-8', ...reply.headers } }),
    })),
  },
  {
    name: 'billing-floor-seconds',
    description: 'bills whole elapsed seconds (floor)',
    options: behaviour(() => ({ bill: billAt(2, (ms) => Math.floor(ms / 1000)) })),
  },
  {
    name: 'billing-exact',
    description: 'bills the exact duration, no rounding to seconds',
    options: behaviour(() => ({ bill: billAt(2, (ms) => ms / 1000) })),
  },
  {
    name: 'billing-nearest-second-2-decimals',
    description: 'bills the nearest second, rounded to 2 decimals',
    options: behaviour(() => ({ bill: (ms) => Math.round(billAt(2, (t) => Math.round(t / 1000))(ms) * 100) / 100 })),
  },
  {
    name: 'duration-10ms-granularity',
    description: 'reports durations from a clock with 10 ms steps',
    options: stopReply((r) => (r.status === 200 ? withBody(r, { sessionDurationMs: Math.floor(Number(body(r).sessionDurationMs) / 10) * 10 }) : r)),
  },
  {
    name: 'www-authenticate',
    description: 'adds WWW-Authenticate to 401 answers',
    options: behaviour((base) => ({
      error: (status, message, headers) => base.error(status, message, status === 401 ? { ...headers, 'WWW-Authenticate': 'Bearer realm="api"' } : headers),
    })),
  },
  { name: 'echoes-credentials', description: 'quotes the Authorization header it received in 403 and 401 errors', options: echoesCredentials() },
  { name: 'strict-rate-limit', description: 'allows only 20 requests per 2 s window', options: { rateLimit: { limit: 20, windowMs: 2000 } } },
  {
    name: 'rate-limit-proxy-html',
    description: 'answers 429 from a proxy in front of it: an HTML page, no JSON, no Retry-After',
    options: behaviour((base) => ({
      send: (res, reply) =>
        reply.status === 429
          ? (res.writeHead(429, { 'Content-Type': 'text/html' }), res.end('<html><body><h1>429 Too Many Requests</h1><p>nginx</p></body></html>'))
          : base.send(res, reply),
    })),
  },
  {
    name: 'errors-with-details',
    description: 'adds a code and a details object to every error',
    options: behaviour((base) => ({
      error: (status, message, headers) =>
        withBody(base.error(status, message, headers), {
          code: `ERR_${status}`,
          details: { docs: 'https://docs.example.com/errors', retryable: status === 429 },
        }),
    })),
  },
  {
    name: 'session-cap-1',
    description: 'allows each team one live session; the interact that would open another answers 429 with Retry-After',
    options: capsSessions(1, true),
  },
  { name: 'session-cap-2-no-retry-after', description: 'allows each team two live sessions; beyond, 429 with no Retry-After', options: capsSessions(2, false) },
  {
    name: 'session-cap-3-late-release',
    description: 'allows each team three live sessions, as its refusals say; a stop frees its slot 1.5 s after it answers',
    options: capsSessions(3, true, 1500),
  },
  {
    name: 'session-cap-4',
    sessionCap: 4,
    description: 'allows each team four live sessions, as its runs are told (SESSION_CAP=4); beyond, 429 with Retry-After',
    options: capsSessions(4, true),
  },
  {
    name: 'states-its-limit',
    description: "states each team's limit and window in its refusals' words (Limit (req/2s): 40)",
    options: statesItsLimit((_state, _rate, base) => (key) => base.limit(key)),
  },
  {
    name: 'token-bucket-limiter',
    description: 'limits with a token bucket per team (50 tokens, 50 a second) instead of a fixed window',
    options: behaviour((_base, state) => ({ limit: tokenBucket(50, 50, state.clock) })),
  },
];

/** A plan per team whose refusals state it in words, as `Limit (req/2s): 40`; `limiter` decides. */
function statesItsLimit(
  limiter: (state: ReferenceState, rate: (key: string) => { limit: number; windowMs: number }, base: Behaviour) => Behaviour['limit'],
): ReferenceOptions {
  const STATED_PLANS = { limit: 150, windowMs: 1000, perTeam: { 'team-burst': { limit: 40, windowMs: 2000 } } };
  const rate = (key: string) => STATED_PLANS.perTeam[key.slice(0, key.indexOf(':')) as 'team-burst'] ?? STATED_PLANS;
  return withLimit(STATED_PLANS, (base, state) => {
    let last = STATED_PLANS as { limit: number; windowMs: number };
    const decide = limiter(state, rate, base);
    return {
      limit: (key) => ((last = rate(key)), decide(key)),
      error: (status, message, headers) =>
        base.error(status, status === 429 ? `Rate limit exceeded. Limit (req/${last.windowMs / 1000}s): ${last.limit}. ${message}` : message, headers),
    };
  });
}

/** A token bucket per key: `capacity` tokens, refilled at `perSecond`; Retry-After until the next token. */
function tokenBucket(capacity: number, perSecond: number, clock: () => number): Behaviour['limit'] {
  const buckets = new Map<string, { tokens: number; at: number }>();
  return (key) => {
    const now = clock();
    const bucket = buckets.get(key) ?? { tokens: capacity, at: now };
    bucket.tokens = Math.min(capacity, bucket.tokens + ((now - bucket.at) / 1000) * perSecond);
    bucket.at = now;
    buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { allowed: true };
    }
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / perSecond)) };
  };
}

/** Quotes the caller's Authorization in its errors: the suite must keep the keys out of its reports anyway. */
function echoesCredentials(): ReferenceOptions {
  let lastAuthorization = '';
  return behaviour((base) => ({
    authenticate: (h) => ((lastAuthorization = h ?? ''), base.authenticate(h)),
    error: (status, message, headers) =>
      base.error(status, status === 401 || status === 403 ? `${message} (credentials: ${lastAuthorization})` : message, headers),
  }));
}

export const variants: Variant[] = [
  { name: 'reference', description: 'the reference itself', options: {} },
  ...correctVariants,
  ...faultyVariants,
  ...orderFaults,
];
