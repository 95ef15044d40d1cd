/**
 * A charge is a settlement, not an answer. The stop that ends a session settles it once (its
 * duration and credits); every later answer about the same session is judged against that
 * settlement: one that repeats it (the same credits, the duration absent or the same) reports it
 * again, as the hosted service answers a repeat stop; one with another duration or amount is a
 * second charge. Two answers that carry equal settlements at once cannot be told apart from the
 * outside (one settlement reported twice, or two equal charges): the account decides (account.ts).
 */
/** What these checks read of an answer (client.ts's Answer has it). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Answer = { status: number; body: Record<string, any> | undefined };

export interface Settled {
  credits: number;
  durationMs?: number;
}

/**
 * What a stop's answer settled: 200 with a creditsBilled above zero (and its duration, where given).
 * Zero, with or without a duration, reports that nothing is billed now: a repeat stop may say so.
 */
export function settlementOf(answer: Pick<Answer, 'status' | 'body'>): Settled | undefined {
  const credits = answer.body?.creditsBilled;
  const duration = answer.body?.sessionDurationMs;
  if (answer.status !== 200 || typeof credits !== 'number' || !Number.isFinite(credits) || credits <= 0) return undefined;
  return typeof duration === 'number' ? { credits, durationMs: duration } : { credits };
}

/** The same settlement: equal credits, and equal durations where both give one. */
export function sameSettlement(a: Settled, b: Settled): boolean {
  return a.credits === b.credits && (a.durationMs === undefined || b.durationMs === undefined || a.durationMs === b.durationMs);
}

/**
 * Whether `answer` charges anew, given what the session had settled before it (`prior`: the
 * settlement, or the answer that carried it): a settlement, and not the one already made.
 */
export function isNewCharge(answer: Pick<Answer, 'status' | 'body'>, prior?: Settled | Pick<Answer, 'status' | 'body'>): boolean {
  const settled = settlementOf(answer);
  if (!settled) return false;
  const before = prior && ('credits' in prior ? prior : settlementOf(prior));
  return !before || !sameSettlement(settled, before);
}

/** The distinct settlements among answers about one session, in order. */
export function distinctSettlements(answers: Pick<Answer, 'status' | 'body'>[]): Settled[] {
  const found: Settled[] = [];
  for (const answer of answers) {
    const settled = settlementOf(answer);
    if (settled && !found.some((other) => sameSettlement(other, settled))) found.push(settled);
  }
  return found;
}

export const describeSettlement = (settled: Settled) =>
  `${settled.credits} credit(s)${settled.durationMs === undefined ? '' : ` for ${settled.durationMs} ms`}`;

/** Of stops of one session sent at once, the one whose answer settles it (200, with a duration where one gives it); a lone stop is itself. */
export function settlingStop<A extends Answer>(stops: A | A[]): A {
  if (!Array.isArray(stops)) return stops;
  return (
    stops.find((answer) => answer.status === 200 && answer.body?.sessionDurationMs !== undefined) ?? stops.find((answer) => answer.status === 200) ?? stops[0]
  );
}
