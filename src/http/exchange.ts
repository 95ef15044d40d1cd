/**
 * The transport: one request, timed and bounded. The connection (TCP, TLS) is opened before the
 * clock starts, so `sentAt..receivedAt` holds the exchange alone, which is what the billing checks
 * bound a session's duration with; a total deadline and a cap on the body (after decompression
 * too) keep a target that trickles, never ends or sends a compression bomb from holding a test.
 *
 * Playwright's request API has no body cap and writes request headers into its call log, so the
 * suite does not use it.
 */
import { once } from 'node:events';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import zlib from 'node:zlib';
import { RunError } from '../config/errors';

/** The epoch time (ms) of a moment the answers' clock (performance.now()) gave. */
export const epochOf = (at: number) => Date.now() - (performance.now() - at);

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  sentAt: number;
  receivedAt: number;
  /** Sent on a kept-alive connection that had already carried a request. */
  reused?: boolean;
}

export interface ExchangeOptions {
  method: string;
  headers: Record<string, string>;
  data?: unknown;
  timeoutMs: number;
  maxBodyBytes: number;
  signal?: AbortSignal;
  /** A keep-alive pool instead of a connection of its own. */
  agent?: http.Agent;
}

/**
 * One request, bounded in time and size. On its own connection, opened before the clock starts
 * (the default), or with `agent` on a kept-alive connection of a pool: faster, for requests whose
 * timing bounds nothing (the burst).
 */
export async function exchange(url: string, { method, headers, data, timeoutMs, maxBodyBytes, signal, agent }: ExchangeOptions): Promise<RawAnswer> {
  const target = new URL(url);
  const secure = target.protocol === 'https:';
  const host = target.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = Number(target.port || (secure ? 443 : 80));
  if (signal?.aborted) throw new RunError('the request was cancelled: its test had ended');
  const socket = agent ? undefined : secure ? tls.connect({ host, port, servername: net.isIP(host) ? undefined : host }) : net.connect({ host, port });
  let request: http.ClientRequest | undefined;
  let failure: RunError | undefined;
  const fail = (message: string) => {
    failure ??= new RunError(message);
    socket?.destroy(failure);
    request?.destroy(failure);
  };
  const deadline = setTimeout(() => fail(`no complete answer within ${timeoutMs} ms (REQUEST_TIMEOUT_MS)`), timeoutMs);
  const onAbort = () => fail('the request was cancelled: its test had ended');
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    if (socket) await once(socket, secure ? 'secureConnect' : 'connect');
    const body = data === undefined ? undefined : Buffer.from(JSON.stringify(data));
    const allHeaders = {
      host: target.host,
      accept: 'application/json',
      'accept-encoding': 'identity',
      'user-agent': 'stop-session-conformance',
      ...(body ? { 'content-type': 'application/json', 'content-length': String(body.length) } : {}),
      ...headers,
    };
    let settled = false;
    return await new Promise<RawAnswer>((resolve, reject) => {
      let sentAt = 0;
      const options = { method, path: target.pathname + target.search, headers: allHeaders };
      const onResponse = (response: http.IncomingMessage) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBodyBytes) fail(`the answer's body exceeds MAX_BODY_BYTES (${maxBodyBytes} bytes)`);
          else chunks.push(chunk);
        });
        response.on('error', (error) => reject(failure ?? error));
        response.on('end', () => {
          const receivedAt = performance.now();
          const answerHeaders = Object.fromEntries(
            Object.entries(response.headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(', ') : String(value)]),
          );
          try {
            resolve({
              status: response.statusCode!,
              headers: answerHeaders,
              body: decode(Buffer.concat(chunks), answerHeaders['content-encoding'], maxBodyBytes),
              sentAt,
              receivedAt,
              reused: request?.reusedSocket === true,
            });
          } catch (error) {
            reject(error);
          }
          settled = true;
        });
      };
      request = agent
        ? (secure ? https : http).request({ ...options, host, port, servername: net.isIP(host) ? undefined : host, agent }, onResponse)
        : http.request({ ...options, createConnection: () => socket! }, onResponse);
      // A kept-alive connection the server closed just as it was reused: the request never reached it.
      request.on('error', (error) => reject(failure ?? Object.assign(error, { reusedSocket: request?.reusedSocket === true })));
      // Deferred: a complete answer's 'end' always comes first, and settles the promise.
      (socket ?? request).on('close', () =>
        setImmediate(() => settled || reject(failure ?? new RunError('the connection closed before the answer was complete'))),
      );
      sentAt = performance.now();
      request.end(body);
    });
  } finally {
    clearTimeout(deadline);
    signal?.removeEventListener('abort', onAbort);
    socket?.destroy();
  }
}

/** Undoes a content encoding, never producing more than `maxBytes` (a compression bomb stops there). */
function decode(body: Buffer, encoding: string | undefined, maxBytes: number): Buffer {
  const name = encoding?.trim().toLowerCase();
  if (!name || name === 'identity' || body.length === 0) return body;
  const options = { maxOutputLength: maxBytes };
  try {
    if (name === 'gzip' || name === 'x-gzip') return zlib.gunzipSync(body, options);
    if (name === 'deflate') return zlib.inflateSync(body, options);
    if (name === 'br') return zlib.brotliDecompressSync(body, options);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ERR_BUFFER_TOO_LARGE' || (error as Error) instanceof RangeError) {
      throw new RunError(`the answer's body exceeds MAX_BODY_BYTES (${maxBytes} bytes) once decompressed (${name})`);
    }
    throw new RunError(`the answer's ${name} body could not be decompressed (${(error as Error).message})`);
  }
  return body;
}
