/**
 * The burst of the rate-limit rule: stops of an unknown job, `concurrency` at a time, until the
 * team's first 429 or a bound (BURST_REQUESTS, BURST_SECONDS); once a 429 shows the limiter
 * saturated, the team also stops a live session of its own (`candidates`, one after the other if
 * the first got through), so that a throttled stop is there to check.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Settings } from '../config/settings';
import { type Answer, type Client, interactPath } from './client';
import type { Session } from './sessions';
import type { Identities, Identity } from './target';

/** The most pairs tried with another team, where its room allows: a window that begins between two sends leaves a pair undecided. */
export const MOST_PAIRS = 5;

/** The teams beside the burst's: the foreign team, and the owner where the burst has a team of its own. */
export const otherTeams = (identities: Identities, burstTeam: Identity): Identity[] => [identities.owner, identities.foreign].filter((as) => as !== burstTeam);

export interface Burst {
  answers: Answer[];
  /** Each other team's stop of no job, sent beside one of the burst team's that was refused, or itself refused: the refusal must be the burst team's alone. */
  others: { as: Identity; answer: Answer }[];
  /** The team's stops of its own sessions, in the order sent. */
  stops: { session: Session; answer: Answer }[];
  /** Stops of no job that failed on their way (a connection reset, a timeout under hundreds at once). */
  lost: number;
  burstMs: number;
}

const AHEAD_OF_A_STOP = 5;
/** A slow start's first lanes, and how long each width runs before it doubles. */
const SLOW_START_LANES = 8;
const SLOW_START_MS = 200;

export async function sendBurst({
  api,
  team,
  others,
  candidates,
  concurrency,
  planned,
  settings,
  windowAhead = false,
  slowStart = false,
}: {
  api: Client;
  team: Identity;
  /** The other teams, and how many requests each may send without meeting its own limit. */
  others: { as: Identity; room: number }[];
  candidates: Session[];
  concurrency: number;
  /** Sized to the room left in a known window: a lane ends at a 429 once a stop of its own was throttled. */
  planned: boolean;
  settings: Pick<Settings, 'burstRequests' | 'burstSeconds'>;
  /** Ahead of each pair, as many of the team's stops as its window admitted before the first 429: a window that began just before the pair is full again by the time the pair's own stop arrives. Every pair the other's room allows is sent. */
  windowAhead?: boolean;
  /** A few lanes at first, twice as many each SLOW_START_MS until the first 429: a small plan's limit is met with a few refusals, not a wave of them. */
  slowStart?: boolean;
}): Promise<Burst> {
  const unknown = interactPath(randomUUID());
  const answers: Answer[] = [];
  const stops: Burst['stops'] = [];
  let pending: Promise<unknown> | undefined;
  let lost = 0;
  // Each other team's stop of no job goes out at once with one of the burst team's: the burst team's alone refused is a limit
  // of its own, the other's refused one they share; neither refused (a window just began) is tried again where the other's room allows.
  const pairs = new Map(others.map(({ as, room }) => [as, { tries: 0, room, answers: [] as Answer[], pending: undefined as Promise<void> | undefined }]));
  // The team's requests admitted before its first 429: about its window's room.
  let admitted: number | undefined;
  const probe = (as: Identity, pair: NonNullable<ReturnType<typeof pairs.get>>) => {
    pair.tries += 1;
    // A few of ours just ahead, as before a stop of its own: they take the room a token bucket regained since the 429.
    admitted ??= answers.filter((answer) => answer.status !== 429).length;
    const ahead = Array.from({ length: windowAhead ? Math.min(concurrency, admitted + 2) : AHEAD_OF_A_STOP }, () =>
      api.send({ method: 'DELETE', path: unknown, as: team, on429: 'once', attach: false, pooled: true }).then(
        (answer) => (answers.push(answer), answer),
        () => void (lost += 1),
      ),
    );
    const theirs = api.stop(randomUUID(), as, { on429: 'once', pooled: true });
    const ours = api.send({ method: 'DELETE', path: unknown, as: team, on429: 'once', attach: false, pooled: true });
    pair.pending = Promise.all([theirs, ours, Promise.all(ahead)])
      .then(
        ([their, our, before]) => {
          answers.push(our);
          // With a window's worth ahead, any of the team's refused in the batch shows its window full beside the other's request.
          const refused = our.status === 429 || (windowAhead && before.some((answer) => answer?.status === 429));
          if (their.status === 429 || refused) pair.answers.push(their);
        },
        () => undefined,
      )
      .finally(() => (pair.pending = undefined));
  };
  const started = performance.now();
  let next = 0;
  let tried = 0;
  const stopNext = async () => {
    const candidate = candidates[tried++];
    // A few stops of no job go just ahead of it: they take the room a limiter regained since its 429 (a token bucket refills one at a time), which would let it through.
    const ahead = Array.from({ length: AHEAD_OF_A_STOP }, () =>
      api.send({ method: 'DELETE', path: unknown, as: team, on429: 'once', attach: false, pooled: true }).then(
        (answer) => void answers.push(answer),
        () => void (lost += 1),
      ),
    );
    // A stop lost on its way (a reset among hundreds of connections) proves nothing: the next candidate takes its place.
    const answer = await api.stop(candidate.jobId, team, { on429: 'once', pooled: true }).catch(() => undefined);
    await Promise.all(ahead);
    if (answer) stops.push({ session: candidate, answer });
    pending = undefined;
  };
  // Until the limiter has throttled an owner's stop (or every candidate got through), an answer
  // that is neither 404 nor 429 came (the rule names it), or a bound is reached.
  // A pair that found both admitted (a window began between) is tried at a later 429, where the other's room allows.
  // With a window's worth ahead, every pair the other's room allows: one served pair proves nothing where a window turned over in it.
  const settled = (pair: { tries: number; room: number; answers: Answer[] }) =>
    windowAhead ? pair.tries >= Math.min(MOST_PAIRS, pair.room) : pair.answers.length > 0;
  const undecided = () => [...pairs.values()].some((pair) => !settled(pair) && (pair.pending || pair.tries < Math.min(MOST_PAIRS, pair.room)));
  const done = () =>
    next >= settings.burstRequests ||
    performance.now() - started >= settings.burstSeconds * 1000 ||
    answers.some((answer) => answer.status !== 404 && answer.status !== 429) ||
    (!pending && (stops.some((stop) => stop.answer.status === 429) || tried === candidates.length) && !undecided());
  const lane = async () => {
    while (!done()) {
      next += 1;
      // The first stop of its own goes right behind the first wave: a limit below the wave throttles it whatever the client's speed.
      if (next === Math.min(concurrency, settings.burstRequests) && !tried && candidates.length && !pending) pending = stopNext();
      // A stop of no job that failed on its way changes nothing: it is counted, and a few of them end nothing.
      const answer = await api.send({ method: 'DELETE', path: unknown, as: team, on429: 'once', attach: false, pooled: true }).catch((error: unknown) => {
        if (++lost > Math.max(5, next / 20)) throw error;
        return undefined;
      });
      if (!answer) continue;
      answers.push(answer);
      if (answer.status === 429)
        for (const [as, pair] of pairs) if (!settled(pair) && !pair.pending && pair.tries < Math.min(MOST_PAIRS, pair.room)) probe(as, pair);
      const throttled = stops.some((stop) => stop.answer.status === 429);
      if (answer.status === 429 && !pending && !throttled && tried < candidates.length) pending = stopNext();
      // A planned burst ends its lane at a 429 once a stop of its own was throttled (or none is left): more refusals prove nothing more.
      if (planned && answer.status === 429) {
        await pending;
        if ((stops.some((stop) => stop.answer.status === 429) || tried === candidates.length) && !undecided()) break;
      }
    }
  };
  const width = Math.min(concurrency, settings.burstRequests);
  const lanes = Array.from({ length: slowStart ? Math.min(width, SLOW_START_LANES) : width }, lane);
  while (lanes.length < width && !done() && !answers.some((answer) => answer.status === 429)) {
    await sleep(SLOW_START_MS, undefined, { signal: api.signal });
    lanes.push(...Array.from({ length: Math.min(lanes.length, width - lanes.length) }, lane));
  }
  await Promise.all(lanes);
  await Promise.all([pending, ...[...pairs.values()].map((pair) => pair.pending)]);
  const burstMs = Math.round(performance.now() - started);
  return { answers, others: [...pairs].flatMap(([as, pair]) => pair.answers.map((answer) => ({ as, answer }))), stops, lost, burstMs };
}
