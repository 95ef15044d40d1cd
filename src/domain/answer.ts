/** One answer of the target as tests see it, and how assertion messages name it. */
import type { RawAnswer } from '../http/exchange';
import type { Refusal } from '../http/limits';
import { redact, redactHeaders } from '../http/redact';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type JsonBody = Record<string, any> | undefined;

/** One answer of the target, as tests see it: redacted, parsed, timed. */
export interface Answer {
  method: string;
  path: string;
  status: number;
  headers: Record<string, string>;
  text: string;
  /** Parsed JSON body, or undefined when the body is not JSON. */
  body: JsonBody;
  /** performance.now() just before the final attempt was sent, and once its whole answer had arrived. */
  sentAt: number;
  receivedAt: number;
  attempts: number;
  /** How long it waited behind the team's rate limit before it was sent: its place under the rate, its turn behind another request's 429. */
  waitedForLimitMs?: number;
  /** Every 429 it met, this one's included, was a cap's on the team's live sessions, none a rate limit's. */
  onlyCapped?: true;
  /** Sent on a kept-alive connection that had already carried a request (`connection` in SendOptions). */
  reusedConnection?: boolean;
  /** A 429's words read (limits.ts), and whether the rate's window had room when it was sent, where the run knows the rate. */
  refusal?: Refusal & { roomInWindow?: boolean; unearned?: boolean };
  /** A stop whose answer states no price: what its team's account moved by around it (account.ts). */
  charged?: Charged;
}

/** What the account moved by around one stop, to within `tolerance` (its counter's precision); or why it cannot tell. */
export type Charged = { credits: number; tolerance: number } | { unknown: string };

/** application/json, with or without parameters such as charset: what the specification names for the stop result. */
export const JSON_CONTENT_TYPE = /^application\/json\s*(;.*)?$/i;

/** JSON, or a JSON-based type such as application/problem+json: the specification names no type for failures. */
export const JSON_ERROR_CONTENT_TYPE = /^application\/([\w.-]+\+)?json\s*(;.*)?$/i;

/** The job a request to a session's resource names. */
export const JOB_OF_PATH = /^\/v2\/scrape\/([^/]+)\/interact$/;

/** The session's resource: POST creates or uses it, DELETE stops it. */
export const interactPath = (jobId: string) => `/v2/scrape/${jobId}/interact`;

/** How long a provisioning interact answered 404 just after its scrape is tried again (100 ms, then twice as long each time): by the run and by a reproduction. */
export const PROVISIONING_RACE_MS = 5_000;

/** One line naming an answer and the start of its body, for assertion messages. */
export function summary(answer: Answer): string {
  return `${answer.method} ${answer.path} answered ${answer.status}: ${answer.text.replace(/\s+/g, ' ').slice(0, 300)}`;
}

/** An exchange's answer as tests see it: redacted, its body parsed when it is a JSON object or array. */
export function answerOf(raw: RawAnswer, method: string, path: string, attempts: number, onConnection: boolean): Answer {
  const text = redact(raw.body.toString('utf8'));
  let body: JsonBody;
  try {
    const parsed = JSON.parse(text);
    body = parsed !== null && typeof parsed === 'object' ? parsed : undefined;
  } catch {
    body = undefined;
  }
  return {
    method,
    path,
    status: raw.status,
    headers: redactHeaders(raw.headers),
    text,
    body,
    sentAt: raw.sentAt,
    receivedAt: raw.receivedAt,
    attempts,
    ...(onConnection ? { reusedConnection: raw.reused } : {}),
  };
}
