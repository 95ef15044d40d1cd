/**
 * What a run will spend, said before it spends it: the sessions the rules' own tests open, the
 * sequences rule's share of what the budget leaves, the scrapes behind them, and credits at the
 * target's price. The run never opens a session past SESSION_BUDGET (coordination/budget.ts).
 */

import type { Rate } from '../config/rates';
import { OPENS, RULE_IDS, type RuleId, ruleOf, SHARED, TEST_IDS, type TestId } from '../config/rules';
import type { Settings } from '../config/settings';
import { CREDITS_PER_MINUTE, chargeUnder } from './billing';
import { MOST_AT_ONCE } from './cap-discovery';

/** Sessions beyond the rules' own needs where no search takes the rest: one second try of a proof a busy runner left undecided. */
const SECOND_TRIES = 3;
/** A session's life as the prediction prices it: tests hold theirs for seconds, the minute's hold longer. */
const SESSION_LIFE_MS = 60_000;
/** A scrape's price where the target states none: the hosted service's. */
const SCRAPE_CREDITS = 1;
/** Requests to stop and interact the sequences rule sends per session it opens, at most: patterns chained through its life, its provision and its stop. */
export const SEQUENCE_REQUESTS_PER_SESSION = 30;
/** The fewest sessions the sequences rule searches with: two for its histories, two kept for each of two patterns run alone. */
export const SEARCH_LEAST_SESSIONS = 5;
/** Requests to stop and interact, about: the owner's, one a test and two a session (its provision and its stop); another team's, one a test. */
const OWNER_REQUESTS_PER_SESSION = 2;
const FOREIGN_REQUESTS_PER_TEST = 1;

export interface Prediction {
  /** Sessions the run opens at most (the rules' own, second tries, the sequences rule's share), and of those the sequences rule's. */
  sessions: number;
  sequences: number;
  /** Sessions the chosen tests other than the sequences rule need: a budget below leaves some not verifiable. */
  needed: number;
  /** The budget in force: SESSION_BUDGET, or less to fit CREDIT_BUDGET. */
  budget: number;
  scrapes: number;
  credits: number;
  /** Requests to stop and interact of the rules' tests, per team: about, since a back-off after 429 sends more. */
  requests: Record<string, number>;
  /** The sequences rule's requests, at most. */
  searchRequests: number;
  /** The bursts' requests per team, at most: they end at the target's first 429s. */
  bursts: Record<string, number>;
  /** Where the rate is known: about how long the owner's requests take under it, and the search its time. */
  minutes?: number;
}

const chosenRules = (settings: Pick<Settings, 'selectedRules'>): RuleId[] =>
  RULE_IDS.filter((rule) => !settings.selectedRules || settings.selectedRules.includes(rule));
const chosenTests = (settings: Pick<Settings, 'selectedRules'>): TestId[] => TEST_IDS.filter((id) => chosenRules(settings).includes(ruleOf(id)));

/** What a session costs at the target's price for `ms`: its declared billing rule, or the specification's. */
const priceOf = (settings: Pick<Settings, 'declaredBilling'>, ms: number) =>
  settings.declaredBilling ? chargeUnder(settings.declaredBilling.rule, ms) : (ms / 60_000) * CREDITS_PER_MINUTE;

/**
 * The sessions simultaneous-opens takes beside its own: one more than a cap stated up front or in the
 * target's words, to show its slots free and the cap kept, the foreign team's one while the owner's
 * cap is full (caps-apart), and the job the cap refused, opened later (refusal-starts-nothing); where none is known, one to show a slot
 * free and as many as the cap probe opens at most (cap-discovery.ts), to show no cap below what the
 * run held at once.
 */
export const capFill = (settings: Pick<Settings, 'sessionCap'>, stated = settings.sessionCap) =>
  stated === undefined ? MOST_AT_ONCE + 1 : stated < MOST_AT_ONCE ? stated + 3 : 0;

/** Below this many requests a minute a plan is limited: each request of the sequences search holds up the whole run. */
const LIMITED_PLAN_PER_MINUTE = 60;
/** Requests every 1-step pattern of the search takes at most: seven kinds, each from a fresh session with its stop (systematic.ts). */
export const ONE_STEP_REQUESTS = 21;

/** On a limited plan, the most the sequences search sends: one minute of the team's limit (every 1-step pattern runs whatever it costs). */
export function limitedPlanRequests(rate: Omit<Rate, 'from'> | undefined): number {
  const perMinute = rate ? (rate.limit * 60_000) / rate.windowMs : Number.POSITIVE_INFINITY;
  return perMinute < LIMITED_PLAN_PER_MINUTE ? Math.floor(perMinute) : Number.POSITIVE_INFINITY;
}

export function predict(settings: Settings): Prediction {
  const tests = chosenTests(settings);
  const underCap = tests.includes('stop-is-final/simultaneous-opens') ? capFill(settings) : 0;
  // The owner's key under a scheme word declared ignored stops its session: those two are never chained.
  const unchained = settings.declaredSchemeWord && tests.includes('authentication/basic-scheme') ? 2 : 0;
  const opens = [...tests.flatMap((id) => (OPENS[id] ? [OPENS[id]] : [])), ...SHARED.filter((shared) => shared.tests.some((id) => tests.includes(id)))];
  const needed = opens.reduce((sum, open) => sum + open.sessions, 0) + underCap + unchained;
  const jobs = opens.reduce((sum, open) => sum + (open.jobs ?? 0), 0);
  const searches = tests.includes('sequences/random-histories');
  const at = (budget: number): Prediction => {
    const sequences = searches ? Math.max(0, budget - needed) : 0;
    const sessions = Math.min(budget, needed + (searches ? sequences : SECOND_TRIES));
    const minute = tests.includes('billing/past-a-minute') && sessions > 0 ? 1 : 0;
    const credits =
      priceOf(settings, settings.billingMinuteHoldMs + SESSION_LIFE_MS) * minute +
      priceOf(settings, SESSION_LIFE_MS) * (sessions - minute) +
      SCRAPE_CREDITS * (sessions + jobs + 1);
    const rest = tests.filter((id) => id !== 'sequences/random-histories' && !id.startsWith('rate-limit/')).length;
    const planned = Math.max(limitedPlanRequests(settings.rateLimit), ONE_STEP_REQUESTS);
    const sequenceRequests = Math.min(settings.sequenceBudget, sequences * SEQUENCE_REQUESTS_PER_SESSION, planned);
    const requests: Record<string, number> = {
      'owner team': rest + OWNER_REQUESTS_PER_SESSION * (sessions - sequences),
      'foreign team': FOREIGN_REQUESTS_PER_TEST * rest,
    };
    const rate = settings.rateLimit;
    // Where the rate is known, a burst is just wider than the room in the window.
    const burst = rate ? rate.limit + 2 : settings.burstRequests;
    const bursts: Record<string, number> = {};
    const burstTeam = settings.burstApiKey || settings.embedded ? 'burst team' : 'owner team';
    if (tests.includes('rate-limit/burst')) bursts[burstTeam] = burst;
    // teams-apart spends the foreign team's limit as the burst does, last of all.
    if (tests.includes('rate-limit/teams-apart')) bursts['foreign team'] = (bursts['foreign team'] ?? 0) + burst;
    return {
      sessions,
      sequences,
      needed,
      budget,
      scrapes: sessions + jobs + 1,
      credits: +credits.toFixed(4),
      requests,
      searchRequests: sequenceRequests,
      bursts,
      // The search takes its SEQUENCE_SECONDS where it runs (each kind once and two patterns alone may take longer on a slow plan).
      ...(rate
        ? {
            minutes: Math.ceil(
              (requests['owner team'] / rate.limit) * (rate.windowMs / 60_000) +
                (sequences < SEARCH_LEAST_SESSIONS
                  ? 0
                  : Number.isFinite(planned)
                    ? ((planned / rate.limit) * rate.windowMs) / 60_000
                    : settings.sequenceSeconds / 60),
            ),
          }
        : {}),
    };
  };
  let prediction = at(settings.sessionBudget);
  // A credit budget shrinks the session budget until the cost fits.
  while (settings.creditBudget !== undefined && prediction.credits > settings.creditBudget && prediction.budget > 0) prediction = at(prediction.budget - 1);
  return prediction;
}

/** The prediction as the console prints it before the first test. */
export function describePrediction(prediction: Prediction, settings: Settings): string {
  const { sessions, sequences, needed, budget, scrapes, credits, requests, searchRequests, bursts, minutes } = prediction;
  const perTeam = (counts: Record<string, number>) =>
    Object.entries(counts)
      .map(([team, count]) => `${count} as the ${team}`)
      .join(' and ');
  const price = settings.declaredBilling ? 'the declared billing rule' : "the specification's 2 credits a minute";
  const lines = [
    `COST AT MOST: ${sessions} session(s) (SESSION_BUDGET=${budget}${settings.creditBudget === undefined ? '' : `, to fit CREDIT_BUDGET=${settings.creditBudget}`}; ${sequences} of them the sequences rule's), about ${scrapes} scrape(s) and ${credits} credit(s) at ${price} and ${SCRAPE_CREDITS} a scrape`,
    `  requests to stop and interact: about ${perTeam(requests)} for the rules' tests` +
      (searchRequests ? `, up to ${searchRequests} more for the sequences rule's search (about a quarter of them the foreign team's)` : '') +
      (Object.keys(bursts).length ? `; the bursts up to ${perTeam(bursts)}, ending at the target's first 429s` : '') +
      (minutes === undefined ? '' : `; about ${minutes} minute(s) at RATE_LIMIT`),
  ];
  if (budget < needed)
    lines.push(
      `  the rules' own tests need ${needed} session(s): with fewer, those that get none are not verifiable (SESSION_BUDGET=${needed} verifies them all)`,
    );
  return lines.join('\n');
}
