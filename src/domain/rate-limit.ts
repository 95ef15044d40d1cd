/**
 * The rate-limit rule's experiment, in the order its checks need it: the burst team's sessions held
 * long enough to prove a throttled stop did nothing, the burst sent while no other request of the
 * run is in flight, then (`recover`) the limiter waited out, and (`ownLimit`) whether the team's
 * stated limit is its own. One burst per run: it costs a whole window on a real target.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { step } from '../checks/recorder';
import type { Rate } from '../config/rates';
import type { Settings } from '../config/settings';
import type { Coordination } from '../coordination/coordination';
import { marginMs } from '../coordination/schedule';
import { epochOf } from '../http/exchange';
import { otherTeams, sendBurst } from './burst';
import type { Answer, Client } from './client';
import { holdBeforeMs } from './refusals';
import { type OwnLimit, type StatedLimit, statedRate } from './run-judges';
import type { Sessions } from './sessions';
import type { Identities, Identity } from './target';

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
  const teamOf = (as: Identity) => as.team ?? as.name;
  let recovered: Answer | undefined;
  const recover = async () =>
    (recovered ??= await step('wait for the limiter to recover (back-off, Retry-After when given)', () =>
      api.stop(randomUUID(), team, { on429: 'return-last' }),
    ));
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
  // Where the run knows the team's rate, the burst is just wider than the room left in the window: a few refusals prove the limit, not hundreds.
  const room = coordination.schedule(teamOf(team), 'interact').room();
  const concurrency = room === undefined ? settings.burstConcurrency : Math.min(settings.burstConcurrency, room + 2);
  const bounds = `${settings.burstRequests} requests or ${settings.burstSeconds} s`;
  const title = `the ${team.name} sends stops of an unknown job, ${concurrency} at a time${room === undefined ? '' : ` (its window has room for ${room})`}, until its first 429 (at most ${bounds}); once one gets 429, it also stops a live session of its own`;
  // No other request of the run is in flight meanwhile: the burst would widen the intervals they measure.
  const burst = await step(title, () =>
    api.quietly(async () => {
      // The other teams' plans have room (a stop of no job each answers, not 429): during the refusals they must still be served.
      const before = await Promise.all(otherTeams(identities, team).map(async (as) => ({ as, answer: await api.stop(randomUUID(), as, { on429: 'once' }) })));
      // A team whose rate is not known has shown room for one request, and a pair both admitted begins a window: two pairs at most.
      const roomy = before
        .filter(({ answer }) => answer.status !== 429)
        .map(({ as }) => ({ as, room: coordination.schedule(teamOf(as), 'interact').room() ?? 2 }));
      const sent = await sendBurst({ api, team, others: roomy.filter(({ room }) => room > 0), candidates, concurrency, planned: room !== undefined, settings });
      // A limit shared with the burst team (per client address, say) drained the owner's too: the run waits for its recovery.
      if (sent.others.some(({ as, answer }) => as === identities.owner && answer.status === 429)) await recover();
      return { ...sent, before };
    }),
  );
  // Another client of the team (ACCOUNT_CHECK=0) sends what the run cannot count.
  const sentIn = (from: number, to: number) => coordination.sentBy(teamOf(team), epochOf(from), epochOf(to));
  const rooms = () => otherTeams(identities, team).map((as) => ({ as, room: coordination.schedule(teamOf(as), 'interact').room() }));
  return {
    ...burst,
    team,
    teamValues,
    recover,
    ownLimit: () =>
      settings.accountCheck
        ? step(`whether the ${team.name}'s limit is its own: a request right after another team's as many`, () =>
            ownLimit(api, team, rooms(), burst.answers, sentIn),
          )
        : undefined,
  };
}

/**
 * Once fewer than `least` of the team's own requests are left in its window, another team whose plan
 * has room sends as many as the team's limit, then the team one: a limit of its own has room for it,
 * one that counts the other team's requests does not. Undefined when the other team met its own limit.
 */
async function askAfterAnotherTeam(
  api: Client,
  team: Identity,
  other: Identity,
  limit: StatedLimit,
  least: number,
  sentIn: (from: number, to: number) => number,
) {
  const span = limit.windowMs + marginMs(limit.windowMs);
  while (sentIn(performance.now() - span, performance.now() + 1) >= least) await sleep(Math.min(1000, limit.windowMs / 4), undefined, { signal: api.signal });
  const crowd = await Promise.all(Array.from({ length: limit.limit }, () => api.stop(randomUUID(), other, { on429: 'once', attach: false, pooled: true })));
  if (crowd.some((answer) => answer.status === 429)) return undefined;
  return { answer: await api.stop(randomUUID(), team, { on429: 'once' }), crowd: crowd.length };
}

/**
 * What shows whether the team's limit is its own: where its refusals state it, the burst's first
 * refusal, which must come once the team has sent half of it; and where the limit is stated or learnt
 * (`learnt`), a request asked right after another team's (the one with most room, an unknown room
 * taken as 100), which its own window must admit: under half a stated limit, or empty under a learnt one.
 */
export async function ownLimit(
  api: Client,
  team: Identity,
  others: { as: Identity; room?: number }[],
  answers: Answer[],
  sentIn: (from: number, to: number) => number,
  learnt?: Rate,
): Promise<OwnLimit | undefined> {
  const stated = statedRate(answers);
  const limit =
    stated ?? (learnt && { limit: learnt.limit, windowMs: learnt.windowMs, words: `${learnt.limit} per ${learnt.windowMs / 1000} s, ${learnt.from}` });
  if (!limit) return undefined;
  const span = limit.windowMs + marginMs(limit.windowMs);
  const sentBefore = (answer: Answer) => sentIn(answer.sentAt - span, answer.receivedAt);
  const first = answers.filter((answer) => answer.status === 429).sort((a, b) => a.sentAt - b.sentAt)[0];
  const asked: OwnLimit['asked'] = stated && first ? [{ answer: first, sent: sentBefore(first), least: stated.limit / 2 }] : [];
  const other = others
    .map(({ as, room }) => ({ as, room: room ?? 100 }))
    .filter(({ room }) => room > limit.limit)
    .sort((a, b) => b.room - a.room)[0];
  // Under a stated limit, fewer than half of it in the team's window; under a learnt one (perhaps too high), nothing but itself.
  const least = stated ? stated.limit / 2 : 1;
  const probe = other && (await askAfterAnotherTeam(api, team, other.as, limit, least, sentIn));
  if (probe)
    asked.push({
      answer: probe.answer,
      sent: sentBefore(probe.answer),
      least: least + 1,
      after: `, right after the ${other.as.name}'s ${probe.crowd} requests`,
    });
  return { limit, asked };
}
