/**
 * Refusals that must change nothing, one after another through one session's life: one session
 * proves a rule's refusals where each would take its own. The session is held before the first (a
 * clock restarted by any of them shows) and after the last (a session ended by any shows), then the
 * owner stops it. The first test of the chain to ask runs it, and every test of the chain judges its
 * own refusals and the session's survival from it. Where the chain does not show every refusal
 * refused and the session whole, each test proves its own on a session of its own, so that a fault
 * is reported by the test whose request caused it. An observer judges the answers the chain's
 * refusers got (what a refusal says, not what it changes): alone only where its own checks fail.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { notVerifiable } from '../checks/checks';
import { extendTimeout, note, step } from '../checks/recorder';
import { ruleOf, type TestId } from '../config/rules';
import { accountPrices, stopPriced } from './account';
import type { Answer } from './answer';
import { boundsOf } from './billing';
import { type CheckCall, judge, runCheck } from './named-checks';
import {
  askToStop,
  CHARGE_PROOF_MS,
  holdAroundMs,
  type Judged,
  judgedOf,
  longerFor,
  type RefusalContext,
  refusalCheck,
  refuseThenOwnerStops,
} from './refusals';
import type { Identity } from './target';

/** One refusal of a chain: its test, who refuses, and how its answers are judged. */
export interface Link {
  id: TestId;
  /** Who asks to stop the chain's session; none where its requests are the owner's stops of other jobs (`others`). */
  refuser?: Identity;
  refused: (answers: Answer[]) => CheckCall;
  /** The name its refusal's check has in the catalogue: 'refused' unless said. */
  checkName?: string;
  /** The owner also uses the session after the refusals, as clients do. */
  interactAfter?: true;
  /** Its requests are the owner's stops of a random UUID and of a job without a session, while the session is held. */
  others?: true;
  /** Its test alone (refuseThenOwnerStops on a session of its own, unless said). */
  alone?: () => Promise<void>;
}

/** What the chain's requests were answered, for an observer: each refuser's answers in order (askToStop), and the owner's stops of other jobs. */
export interface Seen {
  answersOf: (refuser: Identity) => Answer[];
  jobId: string;
  created: Answer;
  /** The owner's stop of a random UUID, on the connection the refusers ask again on. */
  random: Answer;
  /** The owner's job without a session (its scrape), and the owner's stop of it, where a member asked for one (`otherJob`). */
  otherJob?: Answer;
  withoutSession?: Answer;
}

/** A test that judges the answers the chain's requests got: its named checks, and its test alone. */
export interface Observer {
  id: TestId;
  refusers: Identity[];
  checks: (seen: Seen) => [string, CheckCall][];
  alone: () => Promise<void>;
  otherJob?: true;
}

/** The chain's checks, by test id, and the survival proof they share; where it does not decide, why, and what a test alone would tell. */
interface Chain {
  refused: Record<string, CheckCall>;
  observed: Record<string, [string, CheckCall][]>;
  survived: CheckCall;
  undecided?: Judged;
  notRefused?: string[];
  /** Where the exchanges took as long as the hold: how much longer a second chain holds (refusals.ts longerFor). */
  longerMs?: number;
}

/**
 * Test `id` judged from the chain `name` of `links` and `observers`. Where the chain failed, each test
 * proves its own on a session of its own (where the budget has one), so that the test whose request
 * caused it fails; where it could not tell only for want of time, a test alone holds longer where
 * the budget has sessions to spare. The owner's key under a scheme word the target declares
 * ignored stops the session: such a link is never chained.
 */
export async function refusedInChain(
  context: Omit<RefusalContext, 'session'>,
  name: string,
  { links, observers = [] }: { links: Link[]; observers?: Observer[] },
  id: TestId,
): Promise<void> {
  const { api, sessions, check, owner, settings } = context;
  const chosen = (member: { id: TestId }) => !settings.selectedRules || settings.selectedRules.includes(ruleOf(member.id));
  const chained = links.filter((link) => chosen(link) && (link.refuser?.team === undefined || link.refuser.team !== owner.team));
  const watching = observers.filter(chosen);
  const link = links.find((candidate) => candidate.id === id);
  const observer = watching.find((candidate) => candidate.id === id);
  if (!link && !observer) throw new Error(`${id} is not a member of its chain`);
  const coordination = api.coordination;
  const aloneHere = () => (observer ? observer.alone() : alone(context, link!));
  // No session left for the chain: each test alone, where one that needs none still tells.
  if ((link && !chained.includes(link)) || chained.length + watching.length < 2 || !coordination || sessions.budgetLeft() === 0) return aloneHere();
  // Waiting for the test that runs the chain in another worker may take as long as a test.
  extendTimeout(settings.testTimeoutMs);
  const once = (of: Link[], key: string, longerMs = 0) =>
    coordination.readOnce(`refusal-chain-${key}`, () => runChain(context, of, key === name ? watching : [], longerMs), settings.testTimeoutMs, api.signal);
  let chain = await once(chained, name);
  if (!('unavailable' in chain) && observer) return judgeObserved(context, observer, chain.observed[id]!);
  // Refusals that were not refused end the chain's proof for all: the others once more without them (observers were judged on the first), each of those alone.
  const notRefused = 'unavailable' in chain ? [] : (chain.notRefused ?? []);
  const rest = chained.filter((other) => !notRefused.includes(other.id));
  if (link && notRefused.length && rest.includes(link) && rest.length > 1) chain = await once(rest, `${name}-refused`);
  // Too slow to tell, not failed: the whole chain once more, held longer, rather than each test alone on a session of its own.
  const slow = !('unavailable' in chain) && chain.undecided && 'tooSlow' in chain.undecided ? chain.longerMs : undefined;
  if (link && slow && sessions.spare()) {
    extendTimeout(settings.testTimeoutMs);
    note(`the survival proof could not tell, the exchanges took as long as the hold: the chain again, on a fresh session held ${slow} ms longer`);
    chain = await once(notRefused.length ? rest : chained, `${name}-longer`, slow);
  }
  if ('unavailable' in chain) {
    note(`the chain of refusals: ${chain.unavailable}`);
    return aloneHere();
  }
  if (!link) throw new Error(`${id} is not a link of its chain`);
  const members = Object.keys(chain.refused);
  const shared = `the ${members.length} refusals of the rule, one after another through one session's life`;
  const { undecided, survived } = chain;
  const failed = undecided && 'fails' in undecided ? undecided.fails : undefined;
  // The chain's last test: a session the chain did not leave whole, though no refusal alone was shown to end it, fails there.
  const close = async () => {
    const failedAlone = members.some((member) => coordination.readShared(aloneFlag(member)) === 'fails');
    if (failed === undefined || id !== members.at(-1) || failedAlone) return;
    note(`the session did not survive ${shared}, though no refusal alone was shown to end it: refusals that add up, or no session left to tell which`);
    await check('survives', () => runCheck(survived));
  };
  if (failed !== undefined ? sessions.budgetLeft() > 0 : undecided && 'tooSlow' in undecided && sessions.spare()) {
    note(`${shared} did not show every one refused and the session whole (${failed ?? describe(undecided!)}): this one alone, on a session of its own`);
    await alone(context, link, true);
    return close();
  }
  await check(link.checkName ?? 'refused', chain.refused[id]);
  if (failed !== undefined) {
    await close();
    notVerifiable(`${shared} did not leave the session whole (${failed}), and the budget has no session to try this one alone`);
  }
  if (!undecided) note(`proved with ${shared}`);
  await check('survives', survived);
}

/** An observer's checks from the chain; where one fails, the test alone tells whether its own request did it (where the budget has a session). */
async function judgeObserved(context: Omit<RefusalContext, 'session'>, observer: Observer, checks: [string, CheckCall][]): Promise<void> {
  const failed = checks.map(([, call]) => judgedOf(call)).find((judged) => judged && 'fails' in judged);
  if (failed && context.sessions.budgetLeft() > 0) {
    note(`on the session of a chain of refusals, ${describe(failed)}: this test alone`);
    return observer.alone();
  }
  if (!failed) note("judged on the answers to a chain of refusals through one session's life");
  for (const [name, call] of checks) await context.check(name, call);
}

/** Raised by a test of the chain whose refusals, alone, failed. */
const aloneFlag = (id: string) => `refusal-chain-alone-${id.replace(/\W+/g, '-')}`;

/** The test's refusals on a session of its own; where they fail, the chain hears of it (`tell`). */
async function alone(context: Omit<RefusalContext, 'session'>, link: Link, tell = false): Promise<void> {
  try {
    if (link.alone) return await link.alone();
    const session = await step('a session of its own', () => context.sessions.provision());
    await refuseThenOwnerStops({ ...context, session }, link.refuser!, link.refused, { interactAfter: link.interactAfter ?? false });
  } catch (error) {
    if (tell) context.api.coordination?.share(aloneFlag(link.id), 'fails');
    throw error;
  }
}

async function runChain(
  { api, sessions, settings, owner }: Omit<RefusalContext, 'session'>,
  links: Link[],
  observers: Observer[],
  longerMs = 0,
): Promise<Chain> {
  // Refusers without a valid key first: on the connection they share, the last valid key is then the owner's (a team's refusal would reset it).
  const refusers = [...new Set([...links.flatMap((link) => (link.refuser ? [link.refuser] : [])), ...observers.flatMap((observer) => observer.refusers)])].sort(
    (a, b) => Number(a.team !== undefined) - Number(b.team !== undefined),
  );
  // The tests' requests in one: each refuser's four within the time a test has.
  extendTimeout((refusers.length * 4 + 2) * settings.requestTimeoutMs);
  const others = links.some((link) => link.others) || observers.some((observer) => observer.otherJob);
  // The job first: a scrape while the session is held could wait for a job slot where the target caps a team's jobs.
  const otherJob = others ? await step('the owner creates a scrape job without a session', () => sessions.jobWithoutSession()) : undefined;
  const session = await step(`a session for ${links.length + observers.length} tests' requests, one after another`, () => sessions.provision());
  // Where the account may price the stop, CHARGE_PROOF_MS more (refusals.ts): before any stop showed how the target prices, until one states it.
  const aroundMs = holdAroundMs(api, settings, session.created) + longerMs;
  const proofMs = accountPrices(api, settings, true) ? CHARGE_PROOF_MS : 0;
  await step(`hold the session ${aroundMs}${proofMs ? ` to ${aroundMs + proofMs}` : ''} ms`, async () => {
    await sessions.holdUntil(session, aroundMs);
    for (let ms = aroundMs; proofMs && ms < aroundMs + proofMs && accountPrices(api, settings, true); ms += 50) await sessions.holdUntil(session, ms + 50);
  });
  const connection = api.connection();
  const warmed = api.connection();
  const random = await step('the owner stops a fresh random UUID, on a connection the refusers ask again on', () =>
    api.stop(randomUUID(), owner, { connection: warmed }),
  );
  const withoutSession = otherJob && (await step("the owner stops the other job's (absent) session", () => api.stop(otherJob.jobId, owner)));
  const answers = new Map<Identity, Answer[]>();
  for (const refuser of refusers) answers.set(refuser, await askToStop(api, session.jobId, refuser, owner, connection, warmed));
  const answersOf = (refuser: Identity) => answers.get(refuser) ?? [];
  const asked = (link: Link) => (link.others ? link.refused([random, withoutSession!]) : refusalCheck(answersOf(link.refuser!), link.refused));
  const refused = Object.fromEntries(links.map((link) => [link.id, asked(link)]));
  // A session a refusal ended shows here too (the hosted service answers 410 for a destroyed one).
  const used = links.some((link) => link.interactAfter) ? await step('the owner interacts with the session', () => sessions.interact(session)) : undefined;
  const holdMs = holdAroundMs(api, settings, session.created);
  await step(`hold ${holdMs} ms more`, () => sleep(holdMs, undefined, { signal: api.signal }));
  // Priced by the account even before any stop showed how the target prices them: the chain may stop first.
  const stop = await step("the owner stops the session, on the refusers' connection", () =>
    stopPriced(api, session.jobId, owner, settings, { connection, unknown: true }),
  );
  api.release(connection);
  api.release(warmed);
  const seen: Seen = {
    answersOf,
    jobId: session.jobId,
    created: session.created,
    random,
    ...(otherJob && withoutSession ? { otherJob: otherJob.scrape, withoutSession } : {}),
  };
  const observed = Object.fromEntries(observers.map((observer) => [observer.id, observer.checks(seen)]));
  // A clock restarted by the first request that must change nothing is the closest to the whole session's: later ones differ more.
  const survived = used && used.status !== 200 ? judge.usable(used) : judge.survived(stop, session.created, random, boundsOf(settings));
  const judged = [...Object.values(refused), survived].map(judgedOf);
  const undecided = judged.find((one) => one && 'fails' in one) ?? judged.find(Boolean);
  const notRefused = links.filter((link) => judgedOf(refused[link.id]!) !== undefined).map((link) => link.id);
  return {
    refused,
    observed,
    survived,
    ...(undecided ? { undecided, longerMs: longerFor(stop) } : {}),
    ...(notRefused.length ? { notRefused } : {}),
  };
}

const describe = (judged: Judged) => ('fails' in judged ? judged.fails : judged.untold);
