/**
 * The two kinds of 429, told apart. A rate's refusal (wait for the window) and a cap's (free a
 * slot: the team's concurrent jobs or live sessions) need different answers. The answer's words are
 * a hint where it has them (the hosted service says "Rate limit exceeded. Consumed (req/min): …" or
 * "maximum number of concurrent jobs"); otherwise the run judges from what it holds and has seen
 * (schedule.ts, cap-discovery.ts): an interact that would open a session, refused while the rate's window
 * had room and the team had sessions live, met a cap.
 */
export interface Refusal {
  /** What the words say it is, if they say. */
  kind?: 'rate' | 'cap';
  /** The window the words name (`req/min`, `per second`). */
  windowMs?: number;
  /** How long until the window lets requests through again: Retry-After, or "retry after N s" in the words. */
  resetMs?: number;
  /** "Consumed: N, Remaining: M": the limiter's count, this request included. */
  consumed?: number;
  remaining?: number;
  /** "Limit (req/min): N", "limit of N requests per minute": the team's limit and its window, named together. */
  limit?: { limit: number; windowMs: number };
  /** A cap's words with its number: "maximum number of concurrent jobs (3)", "at most 2 browser sessions". */
  cap?: number;
}

const CAP_WORDS = /concurren|maximum number of (\w+ )?(jobs|sessions)|sessions? (limit|cap)|sessions at once|too many (active|live|open|running) /i;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, sec: 1000, second: 1000, min: 60_000, minute: 60_000, h: 3_600_000, hour: 3_600_000 };
const UNIT = `(${Object.keys(UNIT_MS).join('|')})`;
const WINDOW = new RegExp(`\\breq(?:uests)?\\s*/\\s*(\\d*)\\s*${UNIT}\\b`, 'i');
const RATE_WORDS = new RegExp(`rate.?limit|${WINDOW.source}|requests? per (second|minute|hour)`, 'i');
/** A limit named with its window: "Limit (req/min): 20", or "limit of 10 requests per second". */
const LIMIT_AFTER_WINDOW = new RegExp(`\\blimit\\s*\\(\\s*req(?:uests)?\\s*/\\s*(\\d*)\\s*${UNIT}\\s*\\)\\s*:\\s*(\\d+)`, 'i');
const LIMIT_BEFORE_WINDOW = new RegExp(`\\blimit\\s*(?::|of|is|=)\\s*(\\d+)\\s*(?:req(?:uests)?)?\\s*(?:/|per)\\s*(\\d*)\\s*${UNIT}\\b`, 'i');
/** "Rate limit exceeded: 20 stop/interact requests per minute": a count of requests per window right after the words of a limit. */
const LIMIT_COUNTED = new RegExp(
  `\\b(?:limit|exceeded)\\b[^.\\d]{0,20}?(\\d+)\\s+(?:[\\w/-]+\\s+){0,3}?req(?:uest)?s?\\s*(?:/|per)\\s*(\\d*)\\s*${UNIT}\\b`,
  'i',
);
const windowOf = (count: string, unit: string) => Number(count || 1) * UNIT_MS[unit.toLowerCase()];

export function readRefusal(text: string, headers: Record<string, string>): Refusal {
  const refusal: Refusal = {};
  if (CAP_WORDS.test(text)) {
    refusal.kind = 'cap';
    // A number in brackets or after "at most", not one that says when to try again.
    const stated = /(?<!\b(?:in|after|wait)\s*)\((\d+)\)|\bat most (\d+)\b/i.exec(text);
    if (stated) refusal.cap = Number(stated[1] ?? stated[2]);
  } else if (RATE_WORDS.test(text)) refusal.kind = 'rate';
  const window = WINDOW.exec(text) ?? /requests? per (\d*)\s*(second|minute|hour)/i.exec(text);
  if (window) refusal.windowMs = windowOf(window[1], window[2]);
  const reset = retryAfterMs(headers['retry-after']) ?? secondsIn(/retry (?:after|in) (\d+(?:\.\d+)?)\s*s/i.exec(text));
  if (reset !== undefined) refusal.resetMs = reset;
  const consumed = /\bconsumed\b[^:]{0,20}:\s*(\d+)/i.exec(text);
  const remaining = /\bremaining\b[^:]{0,20}:\s*(\d+)/i.exec(text);
  if (consumed) refusal.consumed = Number(consumed[1]);
  if (remaining) refusal.remaining = Number(remaining[1]);
  const after = LIMIT_AFTER_WINDOW.exec(text);
  const before = LIMIT_BEFORE_WINDOW.exec(text);
  const counted = LIMIT_COUNTED.exec(text);
  if (after) refusal.limit = { limit: Number(after[3]), windowMs: windowOf(after[1], after[2]) };
  else if (before) refusal.limit = { limit: Number(before[1]), windowMs: windowOf(before[2], before[3]) };
  else if (counted) refusal.limit = { limit: Number(counted[1]), windowMs: windowOf(counted[2], counted[3]) };
  return refusal;
}

function secondsIn(match: RegExpExecArray | null): number | undefined {
  return match ? Number(match[1]) * 1000 : undefined;
}

/** Retry-After in seconds or as a date, in ms from now; undefined when absent or meaningless. */
export function retryAfterMs(value: string | undefined): number | undefined {
  if (!value?.trim()) return undefined;
  if (/^\s*-?\d+(\.\d+)?\s*$/.test(value)) return Math.min(Number(value) * 1000, 3_600_000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.min(date - Date.now(), 3_600_000);
}

/**
 * Wait before resending after a 429. Retry-After in seconds or as a date is honoured, but never
 * below a floor that grows with each attempt (100 ms, 200 ms, ... up to 8 s), so that a zero,
 * negative or past value cannot make a tight loop. Without a usable Retry-After: 1 s, 2 s, 4 s,
 * then every 8 s, with ±20 % jitter so that waiting workers do not all return at once; and the
 * longer a request has waited (`waitedMs`), the more often it asks, down to every second after
 * a minute, so that a request that has waited long is not starved by fresh ones.
 */
export function retryDelayMs(attempt: number, retryAfter: string | undefined, random = Math.random, waitedMs = 0): number {
  const floor = Math.min(100 * 2 ** (attempt - 1), 8_000);
  const given = retryAfterMs(retryAfter);
  if (given !== undefined) return Math.max(given, floor);
  const cap = Math.max(1_000, 8_000 - waitedMs / 8);
  return Math.min(1000 * 2 ** (attempt - 1), cap) * (0.8 + random() * 0.4);
}
