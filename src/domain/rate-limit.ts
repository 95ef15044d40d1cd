/**
 * The rate-limit rule's experiment, in the order its checks need it: the burst team's sessions held
 * long enough to prove a throttled stop did nothing, the burst sent while no other request of the
 * run is in flight, then (`recover`) the limiter waited out, and (`ownLimit`) whether the team's
 * stated limit is its own. One burst per run: it costs a whole window on a real target.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { extendTimeout, note, step } from '../checks/recorder';
import type { Settings } from '../config/settings';
import type { Coordination } from '../coordination/coordination';
import { marginMs } from '../coordination/schedule';
import { epochOf } from '../http/exchange';
import { readRefusal } from '../http/limits';
import { MOST_PAIRS, otherTeams, sendBurst } from './burst';
import { type Answer, type Client, summary } from './client';
import { holdBeforeMs } from './refusals';
import { type OwnLimit, statedRate } from './run-judges';
import type { Sessions } from './sessions';
import type { Identities, Identity } from './target';

const teamOf = (as: Identity) => as.team ?? as.name;

/**
 * Pairs whose refusal the team's own traffic explains, by the refusal's own words: the limiter's count
 * ("Consumed: N", this request included) is no more than the run's own requests in the window named,
 * refused ones too, or those reach the limit the words state. Only the others say anything of a limit
 * shared between teams; a rate the run learnt is no evidence here, since the refusal may have taught it.
 */
export function ownTraffic<T extends { as: Identity; answer: Answer }>(coordination: Coordination, pairs: T[]): { others: T[]; explained: string[] } {
  const explained: string[] = [];
  const others = pairs.filter(({ as, answer }) => {
    const words = answer.refusal ?? readRefusal(answer.text, answer.headers);
    const windowMs = words.limit?.windowMs ?? words.windowMs;
    if (answer.status !== 429 || !windowMs) return true;
    const at = epochOf(answer.sentAt);
    const own = coordination.schedule(teamOf(as), 'interact').sentBetween(at - windowMs - marginMs(windowMs), at);
    const byOwn = words.consumed !== undefined ? words.consumed <= own + 1 : words.limit !== undefined && own >= words.limit.limit;
    if (byOwn)
      explained.push(`the ${as.name}'s refusal (${summary(answer)}) came after ${own} request(s) of its own within the window its words name: not compared`);
    return !byOwn;
  });
  return { others, explained };
}
/** Where a team's rate is unknown, `pairs` of its requests, or none where its limit refused the run's own in the last minute: its window may be full. */
const roomUnknown = (coordination: Coordination, as: Identity, pairs: number) =>
  coordination.schedule(teamOf(as), 'interact').refusedSince(Date.now() - 60_000) ? 0 : pairs;

/** Where the run knows the team's rate, a burst is just wider than the room left in its window: a few refusals prove the limit, not hundreds. */
function widthOf(coordination: Coordination, team: Identity, settings: Settings) {
  const room = coordination.schedule(teamOf(team), 'interact').room();
  return { room, concurrency: room === undefined ? settings.burstConcurrency : Math.min(settings.burstConcurrency, room + 2) };
}

/** Two live sessions go in: the second is stopped if the first got through (a window boundary can fall between). */
const CANDIDATES = 2;
/** The shortest age of a session a stop of it can be throttled at. */
const BURST_HOLD_MS = 1000;

export async function burstExperiment({
  api,
  sessions,
  identities,
  settings,
  coordination,
}: {
  api: Client;
  sessions: Sessions;
  identities: Identities;
  settings: Settings;
  coordination: Coordination;
}) {
  const [team, teamValues] = identities.burst ? [identities.burst, identities.burstTeam] : [identities.owner, identities.ownerTeam];
  let recovered: Answer | undefined;
  const recover = async () =>
    (recovered ??= await step('wait for the limiter to recover (back-off, Retry-After when given)', () =>
      api.stop(randomUUID(), team, { on429: 'return-last' }),
    ));
  const attempt = async () => {
    const candidates = await step(`the ${team.name} provisions ${CANDIDATES} sessions (fewer under a cap on live sessions)`, () =>
      sessions.provisionMany(CANDIDATES, { as: team }),
    );
    // Each session is older than a refusal's hold, and at least a second, before a stop of it can be throttled: its duration then proves it ran on.
    const holdMs = Math.max(
      ...candidates.map(
        (candidate) => Math.max(BURST_HOLD_MS, holdBeforeMs(api, settings, candidate.created)) - (performance.now() - candidate.created.receivedAt),
      ),
    );
    const clock = settings.declaredClock ? `: the target's clock counts in steps of ${settings.declaredClock.resolutionMs} ms` : '';
    if (holdMs > 0) await step(`hold the sessions ${Math.round(holdMs)} ms${clock}`, () => sleep(holdMs, undefined, { signal: api.signal }));
    const { room, concurrency } = widthOf(coordination, team, settings);
    const bounds = `${settings.burstRequests} requests or ${settings.burstSeconds} s`;
    const title = `the ${team.name} sends stops of an unknown job, ${concurrency} at a time${room === undefined ? '' : ` (its window has room for ${room})`}, until its first 429 (at most ${bounds}); once one gets 429, it also stops a live session of its own`;
    // No other request of the run is in flight meanwhile: the burst would widen the intervals they measure.
    return step(title, () =>
      api.quietly(async () => {
        // The other teams' plans have room (a stop of no job each answers, not 429): during the refusals they must still be served.
        const before = await Promise.all(otherTeams(identities, team).map(async (as) => ({ as, answer: await api.stop(randomUUID(), as, { on429: 'once' }) })));
        // A team whose rate is not known has shown room for one request, and a pair both admitted begins a window: two pairs at most,
        // none where its limit refused the run lately (the run's other tests may have spent its window).
        const roomy = before
          .filter(({ answer }) => answer.status !== 429)
          .map(({ as }) => ({ as, room: coordination.schedule(teamOf(as), 'interact').room() ?? roomUnknown(coordination, as, 2) }));
        const sent = await sendBurst({
          api,
          team,
          others: roomy.filter(({ room }) => room > 0),
          candidates,
          concurrency,
          planned: room !== undefined,
          settings,
        });
        // A limit shared with the burst team (per client address, say) drained the owner's too: the run waits for its recovery.
        if (sent.others.some(({ as, answer }) => as === identities.owner && answer.status === 429)) await recover();
        return { ...sent, before, provisioned: candidates.length };
      }),
    );
  };
  const first = await attempt();
  const again = async () => {
    note(`every stop of its own during the burst got through: once the limiter recovered, the burst once more on ${CANDIDATES} fresh sessions`);
    extendTimeout(settings.backoffBudgetMs + settings.burstSeconds * 1000 + 2 * settings.requestTimeoutMs);
    await recover();
    recovered = undefined;
    const second = await attempt();
    const both = <T>(pick: (one: typeof first) => T[]) => [...pick(first), ...pick(second)];
    return {
      ...second,
      answers: both((one) => one.answers),
      others: both((one) => one.others),
      stops: both((one) => one.stops),
      lost: first.lost + second.lost,
    };
  };
  // The limiter refused, yet every stop of its own was admitted (a window turned over before each on a starved runner): once more, on
  // fresh sessions, where the budget has them. Any other answer is the rule's to judge, as it is.
  const through =
    first.stops.length === first.provisioned &&
    first.stops.every((stop) => stop.answer.status === 200) &&
    first.answers.some((answer) => answer.status === 429) &&
    first.answers.every((answer) => answer.status === 404 || answer.status === 429);
  const burst = through && sessions.spare(CANDIDATES) ? await again() : first;
  // Another client of the team (ACCOUNT_CHECK=0) sends what the run cannot count.
  const sentIn = (from: number, to: number) => coordination.sentBy(teamOf(team), epochOf(from), epochOf(to));
  const rooms = () => otherTeams(identities, team).map((as) => ({ as, room: coordination.schedule(teamOf(as), 'interact').room() }));
  const { others, explained } = ownTraffic(coordination, burst.others);
  for (const line of explained) note(`teams-isolated: ${line}`);
  return {
    ...burst,
    others,
    team,
    teamValues,
    recover,
    ownLimit: () => {
      if (!settings.accountCheck) return undefined;
      extendTimeout(settings.backoffBudgetMs);
      const log = { sentIn, since: performance.now() - (Date.now() - coordination.firstSentBy(teamOf(team))) };
      return step(`whether the ${team.name}'s limit is its own: a request right after another team's as many`, () =>
        ownLimit(api, team, rooms(), burst.answers, log, settings.backoffBudgetMs),
      );
    },
  };
}

/**
 * Whether the burst team's limit is its own, where its refusals state it (`L` per window `W`): once
 * fewer than L/2 of its requests are left in the last 2W (a sliding-window counter weighs the window
 * before too) and the run's log covers them (an earlier run's requests are not in it), another team
 * whose plan has room (the one with most, an unknown room taken as 100) sends L stops of no job, then
 * the burst team one, which a limit of its own admits. Waits at most `boundMs`; says why it did not ask.
 */
export async function ownLimit(
  api: Client,
  team: Identity,
  others: { as: Identity; room?: number }[],
  answers: Answer[],
  log: { sentIn: (from: number, to: number) => number; since: number },
  boundMs: number,
): Promise<OwnLimit | undefined> {
  const limit = statedRate(answers);
  if (!limit) return undefined;
  const other = others
    .map(({ as, room }) => ({ as, room: room ?? 100 }))
    .filter(({ room }) => room > limit.limit)
    .sort((a, b) => b.room - a.room)[0];
  if (!other) return { limit, asked: [], untold: `no other team had room for ${limit.limit} requests` };
  const span = 2 * limit.windowMs + marginMs(limit.windowMs);
  const least = limit.limit / 2;
  const until = performance.now() + boundMs;
  const mine = () => log.sentIn(performance.now() - span, performance.now() + 1);
  while (mine() >= least || performance.now() - span < log.since) {
    if (performance.now() > until) return { limit, asked: [], untold: `its own requests did not leave its window within BACKOFF_BUDGET_MS (${boundMs} ms)` };
    await sleep(Math.min(1000, limit.windowMs / 4), undefined, { signal: api.signal });
  }
  const crowd = await Promise.all(Array.from({ length: limit.limit }, () => api.stop(randomUUID(), other.as, { on429: 'once', attach: false, pooled: true })));
  if (crowd.some((answer) => answer.status === 429))
    return { limit, asked: [], untold: `the ${other.as.name} met a limit of its own in ${limit.limit} requests` };
  // Pooled as the crowd is: a replay sends it right after them, not after draining the team's own limit, which would refuse it on any target.
  const answer = await api.stop(randomUUID(), team, { on429: 'once', pooled: true });
  const sent = log.sentIn(answer.sentAt - span, answer.receivedAt);
  return { limit, asked: [{ answer, sent, least: least + 1, after: `, right after the ${other.as.name}'s ${crowd.length} requests` }] };
}

/**
 * After every other test: the foreign team spends its limit (stops of no job until a 429, as the
 * burst does the owner's), and at each of its refusals the owner team, whose plan showed room, stops
 * no job beside it: limits seen from the other side. A limit shared between the two teams (one per
 * plan, per address) refuses the owner too.
 */
export async function teamsApart({
  api,
  identities,
  settings,
  coordination,
}: {
  api: Client;
  identities: Identities;
  settings: Settings;
  coordination: Coordination;
}) {
  // The foreign team drains; the owner, whose limit paces the rest of the run, spends only its pairs.
  const { foreign: drains, owner: served } = identities;
  const servedWindow = coordination.schedule(teamOf(served), 'interact');
  // Room for its stop before and two pairs at least, where its rate is known: the run's own requests may have filled its window. Where
  // it is not, its limit was never met in the run: MOST_PAIRS stops of no job are a small part of any plan's.
  const until = performance.now() + settings.backoffBudgetMs;
  while ((servedWindow.room() ?? 3) < 3) {
    if (performance.now() > until)
      return { untold: `the ${served.name}'s window had no room for 3 requests within BACKOFF_BUDGET_MS (${settings.backoffBudgetMs} ms)` };
    await sleep(Math.min(1000, servedWindow.rate()!.windowMs / 4), undefined, { signal: api.signal });
  }
  const before = await api.stop(randomUUID(), served, { on429: 'once' });
  if (before.status === 429) return { untold: `the ${served.name}'s plan had no room: its stop before was answered 429` };
  const { room, concurrency } = widthOf(coordination, drains, settings);
  const theirs = servedWindow.room() ?? MOST_PAIRS;
  const sent = await step(
    `the ${drains.name} stops unknown jobs, ${concurrency} at a time${room === undefined ? ' (8 at first, twice as many each 200 ms)' : ''}, until its first 429; at a 429, the ${served.name} stops one beside it`,
    () =>
      sendBurst({
        api,
        team: drains,
        others: [{ as: served, room: theirs }],
        candidates: [],
        concurrency,
        planned: room !== undefined,
        settings,
        windowAhead: true,
        // Its rate unknown: a small plan's limit met with a few refusals.
        slowStart: room === undefined,
      }),
  );
  if (!sent.answers.some((answer) => answer.status === 429))
    return { untold: `the ${drains.name} met no limit in ${sent.answers.length} requests over ${(sent.burstMs / 1000).toFixed(1)} s` };
  if (!sent.others.length)
    return {
      untold: `no stop of the ${drains.name} beside the ${served.name}'s was refused (a window began between), in at most ${Math.min(MOST_PAIRS, theirs)} pair(s), as the ${served.name}'s room allowed`,
    };
  const { others, explained } = ownTraffic(coordination, sent.others);
  for (const line of explained) note(`teams-isolated: ${line}`);
  if (!others.length) return { untold: explained.join('; ') };
  return { during: others.map(({ as, answer }) => ({ as: { name: as.name }, answer })) };
}
