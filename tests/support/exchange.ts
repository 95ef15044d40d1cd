import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import tls from 'node:tls';
import type { Exchange } from './fixtures';
import { redact } from './redact';

/** application/json, with or without parameters such as charset. */
export const JSON_CONTENT_TYPE = /^application\/json\s*(;.*)?$/i;

/** One line naming an exchange and the start of its answer, for assertion messages. */
export function summary(exchange: Exchange): string {
  return `${exchange.method} ${exchange.path} answered ${exchange.status}: ${redact(exchange.text).replace(/\s+/g, ' ').slice(0, 300)}`;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

export interface TimedAnswer {
  status: number;
  headers: Record<string, string>;
  text: string;
  /** performance.now() just before the request was handed to node:http, and once its whole answer was read. */
  sentAt: number;
  receivedAt: number;
}

/**
 * One exchange on its own connection, opened before the clock starts, so that the timed window
 * holds the exchange alone: no TCP or TLS handshake, and none of the client-side work of
 * Playwright's request API (about 3 ms each way on loopback).
 */
export async function sendTimed(url: string, method: string, headers: Record<string, string>, data: unknown, timeoutMs: number): Promise<TimedAnswer> {
  const target = new URL(url);
  const secure = target.protocol === 'https:';
  const host = target.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = Number(target.port || (secure ? 443 : 80));
  const socket = secure ? tls.connect({ host, port, servername: net.isIP(host) ? undefined : host }) : net.connect({ host, port });
  socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`Timeout ${timeoutMs}ms exceeded.`)));
  await once(socket, secure ? 'secureConnect' : 'connect');
  const body = data === undefined ? undefined : Buffer.from(JSON.stringify(data));
  const allHeaders = {
    host: target.host,
    accept: 'application/json',
    'user-agent': 'conformance-kit',
    ...(body ? { 'content-type': 'application/json', 'content-length': String(body.length) } : {}),
    ...headers,
  };
  return new Promise((resolve, reject) => {
    const request = http.request({ method, path: target.pathname + target.search, headers: allHeaders, createConnection: () => socket }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', () => {
        const receivedAt = performance.now();
        socket.destroy();
        const answerHeaders = Object.fromEntries(
          Object.entries(response.headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(', ') : String(value)]),
        );
        resolve({ status: response.statusCode!, headers: answerHeaders, text: Buffer.concat(chunks).toString('utf8'), sentAt, receivedAt });
      });
    });
    request.on('error', reject);
    const sentAt = performance.now();
    request.end(body);
  });
}
