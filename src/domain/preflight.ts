/**
 * Before the first test, and before anything is provisioned: each key of an external target stops a
 * job nobody has (DELETE of a random UUID), which a team the target knows gets 404 for. A 401 or
 * 403, or the answer a key nobody has gets, means the target does not know the key: the run ends
 * with a configuration error naming it. Another answer is the target's to an unknown job, for the
 * tests to judge. A 429 past a short back-off, a 5xx or no answer leave the key unjudged: the run
 * goes on and meets them as it always does. Two keys of one team cannot be told apart this way
 * (both get 404), and no request that opens nothing says which team a key belongs to.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Settings } from '../config/settings';
import { Coordination } from '../coordination/coordination';
import { retryDelayMs } from '../http/limits';
import { redact } from '../http/redact';
import { type Answer, type Client, createClient, interactPath } from './client';
import { type Identity, identitiesFor } from './target';

/** How long one key's check backs off after 429 before it is left unjudged: a few seconds, not the run's back-off budget. */
export const KEY_CHECK_429_MS = 5_000;

const WHAT = `a stop of a random job (DELETE ${interactPath('{random uuid}')})`;

/** The configuration error that ends the run before any test, if any; prints the keys it could not judge. */
export async function checkKeys(settings: Settings): Promise<string | undefined> {
  const target = { baseURL: settings.baseURL!, embedded: false };
  const identities = identitiesFor(target, settings);
  const coordination = new Coordination(settings.reportsDir, target.baseURL, settings.rateLimit);
  // Through the run's coordination: each team's limiter counts them, as it counts every other request of the run.
  const api = createClient({ target, settings: { ...settings, requestTimeoutMs: Math.min(settings.requestTimeoutMs, 10_000) }, coordination });
  // Asked only when a key gets an answer other than 404, 401 or 403, and once.
  let nobody: Promise<Answer | string> | undefined;
  const nobodyGets = () => (nobody ??= stopRandomJob(api, identities.unknownKey));
  const keys = [
    ['API_KEY', identities.owner],
    ['FOREIGN_API_KEY', identities.foreign],
    ['BURST_API_KEY', identities.burst],
  ] as const;
  const refused = await Promise.all(
    keys.map(async ([variable, as]) => {
      if (!as) return undefined;
      const answer = await stopRandomJob(api, as);
      if (typeof answer === 'string') {
        console.log(redact(`${variable} could not be checked: ${answer}; the run goes on.`));
        return undefined;
      }
      if (answer.status === 404) return undefined;
      // A 403 may be the target's answer to an unknown job (a rule-4 fault): refused only if a key nobody has gets it too.
      const compared = answer.status !== 401;
      if (compared) {
        const other = await nobodyGets();
        if (typeof other === 'string' || other.status !== answer.status) return undefined;
      }
      return `${variable} was refused: ${WHAT} answered ${describe(answer)}${compared ? ', as to a key nobody has' : ''}, where a key of a team the target knows gets 404. Check the key and BASE_URL.`;
    }),
  );
  coordination.recordSpend();
  api.cancel();
  const lines = refused.filter((line) => line !== undefined);
  return lines.length ? `Configuration error:\n  - ${lines.join('\n  - ')}` : undefined;
}

/** The answer to a stop of a random job as `as`, or why there is none to judge: 429 past a short back-off, a 5xx, no answer. */
async function stopRandomJob(api: Client, as: Identity): Promise<Answer | string> {
  const started = performance.now();
  for (let attempt = 1; ; attempt++) {
    let answer: Answer;
    try {
      answer = await api.stop(randomUUID(), as, { on429: 'once', attach: false });
    } catch (error) {
      return `${WHAT} got no answer (${(error as Error).message.replace(/^.* failed: /, '')})`;
    }
    if (answer.status >= 500) return `${WHAT} answered ${describe(answer)}`;
    if (answer.status !== 429) return answer;
    const wait = retryDelayMs(attempt, answer.headers['retry-after']);
    if (performance.now() - started + wait > KEY_CHECK_429_MS)
      return `${WHAT} answered 429 ${attempt} time(s) in ${((performance.now() - started) / 1000).toFixed(1)} s`;
    await sleep(wait);
  }
}

/** The status and the answer's error text, on one line, short, without a key. */
function describe(answer: Answer): string {
  const error = typeof answer.body?.error === 'string' ? answer.body.error : answer.text;
  const text = redact(error).replace(/\s+/g, ' ').trim().slice(0, 200);
  return text ? `${answer.status} ("${text}")` : String(answer.status);
}
