/**
 * A test's trace: every request it sent, in order, as a reproduction needs it and without a key:
 * who sent it (the caller's role), on which connection, when (on the test's clock), and what came
 * back. The named checks' arguments are written against it: an answer becomes `{ $answer: seq }`.
 */
import type { Answer } from '../domain/answer';
import type { SendOptions } from '../domain/client';

export interface TraceStep {
  seq: number;
  method: string;
  path: string;
  data?: unknown;
  /** The caller's role (src/domain/callers.ts): its key is read from the environment again. */
  as: string;
  /** A kept-alive connection shared with other steps (its number), or the burst's pool. */
  connection?: number;
  pooled?: true;
  on429: 'retry' | 'once' | 'return-last';
  /** The interact that provisions a test's session: a 404 just after the scrape is a race, tried again; anything but 200 leaves nothing to reproduce. */
  provisions?: true;
  /** A provisioning attempt a later one retried: not sent again. */
  superseded?: true;
  /** On the test's clock (ms): when the request left and when its whole answer was in. */
  sentAt: number;
  receivedAt: number;
  status: number;
  /** The run met the team's rate limit (429, not a cap's on live sessions) before this answer: the fault may need that limit. */
  limited?: true;
  /** Its 429s, the answer's included, were a cap's on live sessions: no rate limit to meet again. */
  capped?: true;
  /** Sent only for what it leaves on its kept-alive connection (the key it carried): nothing judges it, and it is not sent into a limit. */
  primes?: true;
  /** The job a scrape created, which later steps name. */
  createdJob?: string;
}

export type Serialized = string | number | boolean | null | { $answer: number } | { $undefined: true } | Serialized[] | { [key: string]: Serialized };

export class Trace {
  readonly steps: TraceStep[] = [];
  private readonly seqOf = new WeakMap<Answer, number>();
  private readonly connections = new WeakMap<object, number>();
  private connectionCount = 0;
  private readonly origin = performance.now();

  record(answer: Answer, request: SendOptions): void {
    // A provisioning interact tried again after a 404 (the job not found yet): the reproduction retries on its own, as the run did.
    const retried = request.provisions
      ? [...this.steps].reverse().find((step) => step.provisions && step.path === answer.path && step.status === 404 && !step.superseded)
      : undefined;
    if (retried) retried.superseded = true;
    const seq = this.steps.length;
    this.seqOf.set(answer, seq);
    let connection: number | undefined;
    if (request.connection) {
      if (!this.connections.has(request.connection)) this.connections.set(request.connection, ++this.connectionCount);
      connection = this.connections.get(request.connection);
    }
    const createdJob = request.method === 'POST' && request.path === '/v2/scrape' ? answer.body?.data?.metadata?.scrapeId : undefined;
    this.steps.push({
      seq,
      method: answer.method,
      path: answer.path,
      ...(request.data === undefined ? {} : { data: request.data }),
      as: request.as.role ?? 'unknown caller',
      ...(connection === undefined ? {} : { connection }),
      ...(request.pooled ? { pooled: true as const } : {}),
      on429: request.on429 ?? (request.as.withoutValidKey ? 'once' : 'retry'),
      ...(request.provisions ? { provisions: true as const } : {}),
      sentAt: +(answer.sentAt - this.origin).toFixed(1),
      receivedAt: +(answer.receivedAt - this.origin).toFixed(1),
      status: answer.status,
      ...(answer.attempts > 1 && !answer.onlyCapped ? { limited: true as const } : {}),
      ...(answer.onlyCapped ? { capped: true as const } : {}),
      ...(typeof createdJob === 'string' ? { createdJob } : {}),
    });
  }

  /** The step an answer of this trace was recorded as. */
  stepOf(answer: Answer): number | undefined {
    return this.seqOf.get(answer);
  }

  /** A check's arguments as data: answers by their step, plain values as they are; anything else (a caller, a client) is refused. */
  serialize(value: unknown): Serialized {
    if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) return value as Serialized;
    // An argument left out stays left out (JSON has no undefined).
    if (value === undefined) return { $undefined: true };
    if (Array.isArray(value)) return value.map((item) => this.serialize(item));
    if (typeof value === 'object') {
      const seq = this.seqOf.get(value as Answer);
      if (seq !== undefined) return { $answer: seq };
      if ('authorization' in value) throw new Error('a caller cannot be written into a reproduction');
      // An answer to another test's request (requests tests share): this test's trace cannot send it again.
      if ('receivedAt' in value && 'status' in value) throw new Error("the answer is to another test's request, which this test's trace does not hold");
      if (Object.getPrototypeOf(value) !== Object.prototype) throw new Error(`a ${value.constructor?.name} cannot be written into a reproduction`);
      return Object.fromEntries(
        Object.entries(value)
          .filter(([, item]) => item !== undefined)
          .map(([key, item]) => [key, this.serialize(item)]),
      );
    }
    throw new Error(`a ${typeof value} cannot be written into a reproduction`);
  }
}

/** The steps serialized arguments refer to, each once. */
export function answerRefs(value: unknown): number[] {
  return [...new Set((JSON.stringify(value) ?? '').match(/"\$answer":\d+/g) ?? [])].map((ref) => Number(ref.split(':')[1]));
}
