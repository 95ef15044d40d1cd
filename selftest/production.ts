/**
 * The hosted service as its public source reads today, and as older deployments of it behave,
 * as variants of the reference; then faults of the same service that its known-deviations file
 * must not excuse. Facts from the service's code: a backend clock in whole seconds, whole-credit
 * billing, a repeat stop that reports the earlier charge, simultaneous stops that share one
 * settlement, charges that land on the account later, a job cap shared with scrapes in progress,
 * 410 for an interact on a stopped session, a keyless tier and any scheme word.
 */
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Behaviour, ReferenceOptions, ReferenceState, Team } from '../reference/server';
import { PLAN_CREDITS } from '../reference/server';
import { correctVariants, faultyVariants, type Variant } from './variants';

export const PRODUCTION_FILE = 'fixtures/known-deviations/firecrawl-production.json';

const wholeCredits = (ms: number) => Math.max(2, Math.ceil((ms / 3_600_000) * 120));
/** Charges are queued for the account: they show this much later. */
const LANDS_AFTER_MS = 1500;
/** Concurrent jobs per team: live sessions and scrapes in progress alike. */
export const JOB_CAP = 3;
/** How long a scrape holds its job slot. */
const SCRAPE_MS = 30;
/** Stops this close together are served at once: both carry the one settlement. */
const AT_ONCE_MS = 50;
// The faulty variants serve stops 2 s apart as at once: a busy runner may space the suite's two by hundreds of ms, and their fault must still happen.
const AT_ONCE_FAULTY_MS = 2000;

interface Faults {
  /** Every later stop settles the session again, with its own duration and charge. */
  settleAgain?: boolean;
  /** Every later stop is answered as today (the earlier settlement), and charged again. */
  chargeAgain?: boolean;
  /** Stops served at once both answer the one settlement, and each is charged. */
  bothAtOnceCharged?: boolean;
  /** Scrape answers leave their price out (data.metadata.creditsUsed); the account still charges it. */
  unpricedScrapes?: boolean;
  /** Added to every duration, and billed. */
  clockOffMs?: number;
  /** Added to every charge. */
  extraCredits?: number;
  /** The first stop of each session waits past the backend's confirmation: 502, nothing billed; a later stop settles it. */
  slowRelease?: boolean;
}

const ANONYMOUS: Team = { id: 'anonymous', name: 'Keyless tier', keys: [] };

export function today(faults: Faults = {}, jobCap = JOB_CAP): ReferenceOptions {
  return {
    behaviour: (base: Behaviour, state: ReferenceState): Partial<Behaviour> => {
      const settled = new Map<string, { body: Record<string, unknown>; at: number }>();
      const releasing = new Set<string>();
      const scraping = new Map<string, number>();
      const scrapedBy = new Map<string, string>();
      const seconds = (ms: number) => Math.floor(ms / 1000);
      const charge = (jobId: string, teamId: string, durationMs: number) => {
        const credits = wholeCredits(durationMs) + (faults.extraCredits ?? 0);
        state.charges.push({ jobId, teamId, durationMs, credits, at: state.clock() });
        return credits;
      };
      const settle = (jobId: string, teamId: string, startedAt: number) => {
        const durationMs = (seconds(state.clock()) - seconds(startedAt)) * 1000 + (faults.clockOffMs ?? 0);
        const body = { success: true, status: 'stopped', cleanupQueued: true, sessionDurationMs: durationMs, creditsBilled: charge(jobId, teamId, durationMs) };
        settled.set(jobId, { body, at: state.clock() });
        return body;
      };
      return {
        // Any scheme word; without a header, the keyless tier's anonymous team.
        authenticate: (header) => (header === undefined ? ANONYMOUS : base.authenticate(header.replace(/^\s*\S+/, 'Bearer'))),
        scrape(team, body) {
          const reply = base.scrape(team, body);
          if (reply.status === 200) {
            scraping.set(team.id, (scraping.get(team.id) ?? 0) + 1);
            scrapedBy.set((reply.body as { data: { metadata: { scrapeId: string } } }).data.metadata.scrapeId, team.id);
          }
          return reply;
        },
        interact(team, jobId, body) {
          const job = state.jobs.get(jobId);
          if (job?.teamId === team.id && !state.sessions.has(jobId)) {
            if (state.stopped.has(jobId)) return base.error(410, 'This browser session has been destroyed.');
            const jobs = [...state.sessions.values()].filter((session) => session.teamId === team.id).length + (scraping.get(team.id) ?? 0);
            if (jobs >= jobCap)
              return base.error(429, `You have reached the maximum number of concurrent jobs (${jobCap}). Please wait for existing jobs to complete.`);
          }
          return base.interact(team, jobId, body);
        },
        stop(team, jobId) {
          const live = state.sessions.get(jobId);
          const ended = live ?? state.stopped.get(jobId);
          if (!ended) return base.error(404, 'Browser session not found.');
          if (ended.teamId !== team.id) return base.error(403, 'Forbidden.');
          if (live && faults.slowRelease && !releasing.has(jobId)) {
            releasing.add(jobId);
            return base.error(502, 'Browser is still stopping. Retry deletion shortly.');
          }
          if (live) {
            state.sessions.delete(jobId);
            state.stopped.set(jobId, live);
            return { status: 200, body: settle(jobId, team.id, live.startedAt) };
          }
          const prior = settled.get(jobId)!;
          if (faults.settleAgain) return { status: 200, body: settle(jobId, team.id, ended.startedAt) };
          const atOnce = state.clock() - prior.at < (faults.bothAtOnceCharged ? AT_ONCE_FAULTY_MS : AT_ONCE_MS);
          if (faults.chargeAgain || (atOnce && faults.bothAtOnceCharged))
            state.charges.push({
              jobId,
              teamId: team.id,
              durationMs: Number(prior.body.sessionDurationMs),
              credits: Number(prior.body.creditsBilled),
              at: state.clock(),
            });
          if (atOnce) return { status: 200, body: prior.body };
          return { status: 200, body: { success: true, status: 'stopped', cleanupQueued: true, creditsBilled: prior.body.creditsBilled } };
        },
        account(team) {
          const landed = state.clock() - LANDS_AFTER_MS;
          const spent = [...state.charges, ...state.scrapes]
            .filter((charge) => charge.teamId === team.id && charge.at <= landed)
            .reduce((sum, charge) => sum + charge.credits, 0);
          return {
            status: 200,
            body: {
              success: true,
              data: {
                remainingCredits: PLAN_CREDITS - spent,
                planCredits: PLAN_CREDITS,
                billingPeriodStart: '2026-11-01T00:00:00.000Z',
                billingPeriodEnd: '2026-12-01T00:00:00.000Z',
              },
            },
          };
        },
        send(res: ServerResponse, reply) {
          const scraped = res.req.method === 'POST' && res.req.url === '/v2/scrape' && reply.status === 200;
          if (!scraped) return base.send(res, reply);
          // The scrape holds its job slot until it answers.
          const teamId = scrapedBy.get((reply.body as { data: { metadata: { scrapeId: string } } }).data.metadata.scrapeId)!;
          if (faults.unpricedScrapes) delete (reply.body as { data: { metadata: { creditsUsed?: number } } }).data.metadata.creditsUsed;
          void sleep(SCRAPE_MS).then(() => {
            scraping.set(teamId, (scraping.get(teamId) ?? 1) - 1);
            base.send(res, reply);
          });
        },
      };
    },
  };
}

export interface Plan {
  /** Stop and interact, per team, in one window. */
  limit: number;
  /** Scrapes, per team, in one window (their own limiter). */
  scrapeLimit: number;
  windowMs: number;
  /** Live sessions and scrapes in progress, per team. */
  jobCap: number;
  /** A scrape job is written this long after its scrape answers. */
  provisioningRaceMs: number;
}

/** The free plan: 10 stops and interacts a minute, 10 scrapes a minute, 2 concurrent jobs. */
export const FREE_PLAN: Plan = { limit: 10, scrapeLimit: 10, windowMs: 60_000, jobCap: 2, provisioningRaceMs: 300 };

/**
 * Today's service on a plan: its limiters as the service's (a fixed window from a key's first
 * request, refused requests counted too, no Retry-After, its words with the window named), its job
 * cap, and its scrape job written a little after the scrape answers.
 */
export function onPlan(plan: Plan): ReferenceOptions {
  return {
    behaviour: (base, state) => {
      const production = today({}, plan.jobCap).behaviour!(base, state);
      const windows = new Map<string, { start: number; consumed: number }>();
      const unit = plan.windowMs === 60_000 ? 'min' : `${plan.windowMs / 1000}s`;
      let refused = { consumed: 0, remaining: 0, resetMs: 0 };
      return {
        ...production,
        limit(key) {
          const now = state.clock();
          let window = windows.get(key);
          if (!window || now - window.start >= plan.windowMs) windows.set(key, (window = { start: now, consumed: 0 }));
          window.consumed += 1;
          const limit = key.endsWith(':scrape') ? plan.scrapeLimit : key.endsWith(':account') ? 100 : plan.limit;
          if (window.consumed <= limit) return { allowed: true };
          refused = { consumed: window.consumed, remaining: 0, resetMs: window.start + plan.windowMs - now };
          return { allowed: false, retryAfterSeconds: Math.ceil(refused.resetMs / 1000) };
        },
        error(status, message, headers) {
          if (status !== 429 || !message.startsWith('Rate limit')) return production.error?.(status, message, headers) ?? base.error(status, message, headers);
          const secs = Math.round(refused.resetMs / 1000) || 1;
          return base.error(
            429,
            `Rate limit exceeded. Consumed (req/${unit}): ${refused.consumed}, Remaining (req/${unit}): ${refused.remaining}. Upgrade your plan at https://firecrawl.dev/pricing for increased rate limits or please retry after ${secs}s, resets at ${new Date(Date.now() + refused.resetMs)}`,
            {},
          );
        },
        scrape(team, body) {
          const reply = production.scrape!(team, body);
          const jobId = (reply.body as { data?: { metadata?: { scrapeId?: string } } }).data?.metadata?.scrapeId;
          const job = jobId && state.jobs.get(jobId);
          if (job) {
            state.jobs.delete(jobId);
            setTimeout(() => state.jobs.set(jobId, job), plan.provisioningRaceMs).unref();
          }
          return reply;
        },
      };
    },
  };
}

const named = (name: string) => [...faultyVariants, ...correctVariants].find((variant) => variant.name === name)!.options.behaviour!;

/** Older deployments: millisecond wall-clock durations, whole credits, any scheme word, credentials quoted in errors, a repeat stop answered {"success": true}. */
export const olderProduction: ReferenceOptions['behaviour'] = (base, state) => ({
  ...named('billing-whole-credits')(base, state),
  ...named('second-stop-200-without-charge')(base, state),
  error: named('echoes-credentials')(base, state).error,
  authenticate: (header) => {
    named('echoes-credentials')(base, state).authenticate!(header);
    return named('any-scheme-accepted')(base, state).authenticate!(header);
  },
});

/** What the production file declares, as the failures it must excuse read without it: the clock, the billing rule, the scheme word. */
export const DECLARED_IN_PRODUCTION_FILE =
  /sessionDurationMs -?[\d.]+ must lie in the measured interval|creditsBilled [\d.]+ must be 2 credits\/minute prorated by the second|a refusal is a 4xx: DELETE \S+ answered 200|\(credits, rule 2, @must\)/;

export const productionVariants: Variant[] = [
  {
    name: 'production-today',
    knownDeviations: PRODUCTION_FILE,
    description: 'the hosted service as its source reads today, with its known-deviations file',
    options: today(),
  },
  {
    name: 'production-older',
    knownDeviations: PRODUCTION_FILE,
    // Where it differs from today's: millisecond durations, whole credits, its repeat stop, credentials quoted in its errors.
    rules: ['billing', 'authentication', 'stop-is-final', 'json-answers', 'sequences'],
    description: 'an older deployment of the hosted service, with the same known-deviations file',
    options: { behaviour: olderProduction },
  },
  {
    name: 'production-today-undeclared',
    declaredReasons: DECLARED_IN_PRODUCTION_FILE,
    description: 'the hosted service as it is today, without its known-deviations file: it fails for what the file declares, and for nothing else',
    options: today(),
  },
  {
    name: 'production-repeat-stop-settles-again',
    breaks: 'stop-is-final',
    knownDeviations: PRODUCTION_FILE,
    description: 'settles a stopped session again at every later stop, with a new duration and charge',
    options: today({ settleAgain: true }),
  },
  {
    name: 'production-stops-at-once-both-charged',
    breaks: 'stop-is-final',
    knownDeviations: PRODUCTION_FILE,
    description: 'answers two stops served at once with the one settlement, exactly alike, and charges the account for each',
    options: today({ bothAtOnceCharged: true }),
  },
  {
    name: 'production-unpriced-stops-at-once-both-charged',
    breaks: 'stop-is-final',
    knownDeviations: PRODUCTION_FILE,
    description:
      "states no price in its scrape answers, answers two stops served at once alike, and charges the account for each: the scrapes' price is measured through the account",
    options: today({ bothAtOnceCharged: true, unpricedScrapes: true }),
  },
  {
    name: 'production-repeat-stop-charged-again',
    breaks: 'stop-is-final',
    knownDeviations: PRODUCTION_FILE,
    description: 'answers every later stop exactly as production does (the earlier charge), and charges the account again',
    options: today({ chargeAgain: true }),
  },
  {
    name: 'production-clock-off',
    breaks: 'billing',
    knownDeviations: PRODUCTION_FILE,
    description: 'reports and bills every session 2.5 s longer than its whole-second clock gives: more than the declared resolution',
    options: today({ clockOffMs: 2500 }),
  },
  {
    name: 'production-slow-release-502',
    breaks: 'owner-stop',
    knownDeviations: PRODUCTION_FILE,
    description:
      "answers the first stop of each session 502 'Browser is still stopping' and bills nothing; a later stop settles it (the run must still stop every session)",
    options: today({ slowRelease: true }),
  },
  {
    name: 'production-credit-high',
    breaks: 'billing',
    knownDeviations: PRODUCTION_FILE,
    description: 'bills one whole credit more than the declared rule gives',
    options: today({ extraCredits: 1 }),
  },
];
