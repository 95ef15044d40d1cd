import type { Exchange } from './fixtures';
import { redact } from './redact';

/** application/json, with or without parameters such as charset. */
export const JSON_CONTENT_TYPE = /^application\/json\s*(;.*)?$/i;

/** One line naming an exchange and the start of its answer, for assertion messages. */
export function summary(exchange: Exchange): string {
  return `${exchange.method} ${exchange.path} answered ${exchange.status}: ${redact(exchange.text).replace(/\s+/g, ' ').slice(0, 300)}`;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
