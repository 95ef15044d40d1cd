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
import { note, step } from '../checks/recorder';
import { DeclaredBehaviour } from '../config/errors';
import { ruleOf, type TestId } from '../config/rules';
import { stopPriced } from './account';
import type { Answer } from './answer';
import { boundsOf } from './billing';
import { type CheckCall, judge, runCheck } from './named-checks';
import { askToStop, holdAroundMs, holdBeforeMs, type RefusalContext, refuseThenOwnerStops } from './refusals';
import type { Identity } from './target';

/** One refusal of a chain: its test, who refuses, and how its answers are judged. */
export interface Link {
  id: TestId;
  refuser: Identity;
  refused: (answers: Answer[]) => CheckCall;
}

/** The chain's checks, by test id, and the survival proof they share; why it decides nothing, where it does not, and whose refusals failed. */
interface Chain {
  refused: Record<string, CheckCall>;
  survived: CheckCall;
  undecided?: string;
  notRefused?: string[];
}

/** How long a test of the chain waits for the one running it in another worker. */
const CHAIN_WAIT_MS = 120_000;

/**
 * Test `id`'s refusals judged from its rule's chain of `links`, or on a session of its own where the
 * chain decides nothing and the budget has one. The owner's key under a scheme word the target
 * declares ignored stops the session: such a link is never chained.
 */
export async function refusedInChain(context: Omit<RefusalContext, 'session'>, links: Link[], id: TestId): Promise<void> {
  const { api, sessions, check, owner } = context;
  const link = links.find((candidate) => candidate.id === id);
  if (!link) throw new Error(`${id} is not a link of its chain`);
  const chained = links.filter(({ refuser }) => refuser.team === undefined || refuser.team !== owner.team);
  const coordination = api.coordination;
  if (chained.includes(link) && chained.length > 1 && coordination) {
    const once = (of: Link[], name: string) => coordination.readOnce(`refusal-chain-${name}`, () => runChain(context, of), CHAIN_WAIT_MS, api.signal);
    let chain = await once(chained, ruleOf(id));
    // Refusals that were not refused end the chain's proof for all: the others once more without them, each of those alone.
    const notRefused = 'unavailable' in chain ? [] : (chain.notRefused ?? []);
    const rest = chained.filter((other) => !notRefused.includes(other.id));
    if (notRefused.length && rest.includes(link) && rest.length > 1) chain = await once(rest, `${ruleOf(id)}-refused`);
    const shared = `the ${'unavailable' in chain ? chained.length : Object.keys(chain.refused).length} refusals of the rule, one after another through one session's life`;
    if ('unavailable' in chain) note(`${shared}: ${chain.unavailable}`);
    else if (!chain.undecided || sessions.budgetLeft() < 1) {
      if (chain.undecided) note(`${shared} did not show every one refused and the session whole, and the budget has no session to try this one alone`);
      else note(`proved with ${shared}`);
      await check('refused', chain.refused[id]);
      return check('survives', chain.survived);
    } else note(`${shared} did not show every one refused and the session whole (${chain.undecided}): this one alone, on a session of its own`);
  }
  const session = await step('a session of its own', () => sessions.provision());
  await refuseThenOwnerStops({ ...context, session }, link.refuser, link.refused);
}

async function runChain({ api, sessions, settings, owner }: Omit<RefusalContext, 'session'>, links: Link[]): Promise<Chain> {
  const session = await step(`a session for the rule's ${links.length} refusals, one after another`, () => sessions.provision());
  const beforeMs = holdBeforeMs(api, settings, session.created);
  await step(`hold the session ${beforeMs} ms`, () => sessions.holdUntil(session, beforeMs));
  const connection = api.connection();
  const refused: Record<string, CheckCall> = {};
  let first: Answer | undefined;
  for (const link of links) {
    const asked = await askToStop(api, session.jobId, link.refuser, owner, connection, link.refused);
    first ??= asked.refusal;
    refused[link.id] = asked.checked;
  }
  const holdMs = holdAroundMs(api, settings, session.created);
  await step(`hold ${holdMs} ms more`, () => sleep(holdMs, undefined, { signal: api.signal }));
  const stop = await step("the owner stops the session, on the refusers' connection", () => stopPriced(api, session.jobId, owner, settings, { connection }));
  api.release(connection);
  // A clock restarted by the first refusal is the closest to the whole session's: later ones differ more.
  const survived = judge.survived(stop, session.created, first as Answer, boundsOf(settings));
  const undecided = [...Object.values(refused), survived].map(failureOf).find((why) => why !== undefined);
  const notRefused = links.filter((link) => failureOf(refused[link.id]) !== undefined).map((link) => link.id);
  return { refused, survived, ...(undecided === undefined ? {} : { undecided }), ...(notRefused.length ? { notRefused } : {}) };
}

/** Why a check fails or cannot tell, in a line; undefined when it holds or finds the declared behaviour. */
function failureOf(call: CheckCall): string | undefined {
  try {
    return runCheck(call)?.notVerifiable;
  } catch (error) {
    return error instanceof DeclaredBehaviour ? undefined : (error as Error).message.split('\n')[0];
  }
}
