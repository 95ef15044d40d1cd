/**
 * Refusals that must change nothing, one after another through one session's life: one session
 * proves a rule's refusals where each would take its own. The session is held before the first (a
 * clock restarted by any of them shows) and after the last (a session ended by any shows), then the
 * owner stops it. The first test of the chain to ask runs it, and every test of the chain judges its
 * own refusals and the session's survival from it. Where the chain does not show every refusal
 * refused and the session whole, each test proves its own on a session of its own, so that a fault
 * is reported by the test whose request caused it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { notVerifiable } from '../checks/checks';
import { extendTimeout, note, step } from '../checks/recorder';
import { ruleOf, type TestId } from '../config/rules';
import { stopPriced } from './account';
import type { Answer } from './answer';
import { boundsOf } from './billing';
import { type CheckCall, judge, runCheck } from './named-checks';
import { askToStop, holdAroundMs, holdBeforeMs, type Judged, judgedOf, type RefusalContext, refuseThenOwnerStops, warmedBy } from './refusals';
import type { Identity } from './target';

/** One refusal of a chain: its test, who refuses, and how its answers are judged. */
export interface Link {
  id: TestId;
  refuser: Identity;
  refused: (answers: Answer[]) => CheckCall;
}

/** The chain's checks, by test id, and the survival proof they share; where it does not decide, why, and what a test alone would tell. */
interface Chain {
  refused: Record<string, CheckCall>;
  survived: CheckCall;
  undecided?: Judged;
  notRefused?: string[];
}

/** How long a test of the chain waits for the one running it in another worker. */
const CHAIN_WAIT_MS = 120_000;

/**
 * Test `id`'s refusals judged from its rule's chain of `links`. Where the chain failed, each test
 * proves its own on a session of its own (where the budget has one), so that the test whose request
 * caused it fails; where it could not tell only for want of time, a test alone holds longer where
 * the budget has sessions to spare. The owner's key under a scheme word the target declares
 * ignored stops the session: such a link is never chained.
 */
export async function refusedInChain(context: Omit<RefusalContext, 'session'>, links: Link[], id: TestId): Promise<void> {
  const { api, sessions, check, owner } = context;
  const link = links.find((candidate) => candidate.id === id);
  if (!link) throw new Error(`${id} is not a link of its chain`);
  const chained = links.filter(({ refuser }) => refuser.team === undefined || refuser.team !== owner.team);
  const coordination = api.coordination;
  if (!chained.includes(link) || chained.length < 2 || !coordination) return alone(context, link);
  const rule = ruleOf(id);
  const once = (of: Link[], name: string) => coordination.readOnce(`refusal-chain-${name}`, () => runChain(context, of), CHAIN_WAIT_MS, api.signal);
  let chain = await once(chained, rule);
  // Refusals that were not refused end the chain's proof for all: the others once more without them, each of those alone.
  const notRefused = 'unavailable' in chain ? [] : (chain.notRefused ?? []);
  const rest = chained.filter((other) => !notRefused.includes(other.id));
  if (notRefused.length && rest.includes(link) && rest.length > 1) chain = await once(rest, `${rule}-refused`);
  if ('unavailable' in chain) {
    note(`the chain of refusals: ${chain.unavailable}`);
    return alone(context, link);
  }
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
  await check('refused', chain.refused[id]);
  if (failed !== undefined) {
    await close();
    notVerifiable(`${shared} did not leave the session whole (${failed}), and the budget has no session to try this one alone`);
  }
  if (!undecided) note(`proved with ${shared}`);
  await check('survives', survived);
}

/** Raised by a test of the chain whose refusals, alone, failed. */
const aloneFlag = (id: string) => `refusal-chain-alone-${id.replace(/\W+/g, '-')}`;

/** The test's refusals on a session of its own; where they fail, the chain hears of it (`tell`). */
async function alone(context: Omit<RefusalContext, 'session'>, link: Link, tell = false): Promise<void> {
  const session = await step('a session of its own', () => context.sessions.provision());
  try {
    await refuseThenOwnerStops({ ...context, session }, link.refuser, link.refused);
  } catch (error) {
    if (tell) context.api.coordination?.share(aloneFlag(link.id), 'fails');
    throw error;
  }
}

async function runChain({ api, sessions, settings, owner }: Omit<RefusalContext, 'session'>, links: Link[]): Promise<Chain> {
  // Nine tests' requests in one: each refuser's four within the time a test has.
  extendTimeout(links.length * 4 * settings.requestTimeoutMs);
  const session = await step(`a session for the rule's ${links.length} refusals, one after another`, () => sessions.provision());
  const beforeMs = holdBeforeMs(api, settings, session.created);
  await step(`hold the session ${beforeMs} ms`, () => sessions.holdUntil(session, beforeMs));
  const connection = api.connection();
  const warmed = await step("the owner's valid request, on a connection the refusers ask again on", () => warmedBy(api, owner));
  const refused: Record<string, CheckCall> = {};
  let first: Answer | undefined;
  for (const link of links) {
    const asked = await askToStop(api, session.jobId, link.refuser, owner, connection, link.refused, warmed);
    first ??= asked.refusal;
    refused[link.id] = asked.checked;
  }
  const holdMs = holdAroundMs(api, settings, session.created);
  await step(`hold ${holdMs} ms more`, () => sleep(holdMs, undefined, { signal: api.signal }));
  const stop = await step("the owner stops the session, on the refusers' connection", () => stopPriced(api, session.jobId, owner, settings, { connection }));
  api.release(connection);
  api.release(warmed);
  // A clock restarted by the first refusal is the closest to the whole session's: later ones differ more.
  const survived = judge.survived(stop, session.created, first as Answer, boundsOf(settings));
  const judged = [...Object.values(refused), survived].map(judgedOf);
  const undecided = judged.find((one) => one && 'fails' in one) ?? judged.find(Boolean);
  const notRefused = links.filter((link) => judgedOf(refused[link.id]) !== undefined).map((link) => link.id);
  return { refused, survived, ...(undecided ? { undecided } : {}), ...(notRefused.length ? { notRefused } : {}) };
}

const describe = (judged: Judged) => ('fails' in judged ? judged.fails : judged.untold);
