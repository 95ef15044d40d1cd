/**
 * A composed reproduction replayed within the run, before its check blames what it names: the
 * account check blames sessions whose settlements add up to what the account was overcharged,
 * and many small settlements can add up to it by chance. Replayed alone, those sessions must be
 * charged again for the blame to stand.
 */
import type { ComposedReproduction } from '../checks/checks';
import { failureOf } from '../checks/failure';
import type { Settings } from '../config/settings';
import { keysOf, type Target } from '../domain/target';
import { redact } from '../http/redact';
import { reproduce } from './runner';
import { Trace } from './trace';
import { planFor } from './write';

export async function replayComposed(settings: Settings, target: Target, test: { id: string; title: string; check: string; message: string }, composed: ComposedReproduction): Promise<{ verdict: 0 | 1 | 2; output: string }> {
  const plan = planFor(settings, { testId: test.id, title: test.title, trace: new Trace(), failures: [failureOf(test.check, undefined, new Error(test.message), composed)] })!;
  const { apiKey, foreignApiKey, burstApiKey } = keysOf(target, settings);
  const lines: string[] = [];
  const verdict = await reproduce(plan, { BASE_URL: target.baseURL, API_KEY: apiKey, FOREIGN_API_KEY: foreignApiKey, BURST_API_KEY: burstApiKey }, (line) => lines.push(line));
  return { verdict, output: redact(lines.join('\n')) };
}

/** How long a composed reproduction's requests took in the run, pauses included (ms). */
export const lengthOf = (composed: ComposedReproduction) => {
  const times = (composed.steps as { sentAt: number; receivedAt: number }[]).flatMap((step) => [step.sentAt, step.receivedAt]);
  return times.length ? Math.max(...times) - Math.min(...times) : 0;
};
