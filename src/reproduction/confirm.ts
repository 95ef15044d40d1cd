/**
 * A composed reproduction replayed within the run, before its check blames what it names: the
 * account check blames sessions whose settlements add up to what the account was overcharged,
 * and many small settlements can add up to it by chance. Replayed alone, those sessions must be
 * charged again for the blame to stand. The jobs it creates go into the run's ledger, so that
 * a replay cut short leaves nothing the cleanup cannot find.
 */
import type { ComposedReproduction } from '../checks/checks';
import { failureOf } from '../checks/failure';
import type { Settings } from '../config/settings';
import type { AccountVerdict } from '../domain/account';
import type { Ledger } from '../domain/ledger';
import { type Identities, keysOf, type Target } from '../domain/target';
import { redact } from '../http/redact';
import { accountAlone } from './compose';
import { DRAIN, reproduce } from './runner';
import { Trace, type TraceStep } from './trace';
import { planFor } from './write';

export interface Replayed {
  verdict: 0 | 1 | 2;
  output: string;
}

async function replayComposed(
  settings: Settings,
  target: Target,
  test: { id: string; title: string; check: string; message: string },
  composed: ComposedReproduction,
  ledger: Ledger,
  nameOf: (role: string) => string,
): Promise<Replayed> {
  const plan = planFor(settings, {
    testId: test.id,
    title: test.title,
    trace: new Trace(),
    failures: [failureOf(test.check, undefined, new Error(test.message), composed)],
  });
  if (!plan) return { verdict: 2, output: 'nothing to replay' };
  const { apiKey, foreignApiKey, burstApiKey } = keysOf(target, settings);
  const lines: string[] = [];
  const verdict = await reproduce(
    plan,
    { BASE_URL: target.baseURL, API_KEY: apiKey, FOREIGN_API_KEY: foreignApiKey, BURST_API_KEY: burstApiKey },
    (line) => lines.push(line),
    {
      created: (jobId, as) => ledger.created({ target: target.baseURL, embedded: target.embedded, jobId, identity: nameOf(as), test: test.id }),
      ended: (jobId, as, status) => ledger.ended({ target: target.baseURL, jobId, identity: nameOf(as), status }),
    },
  );
  return { verdict, output: redact(lines.join('\n')) };
}

/**
 * The account check's failure once the sessions it blames (`composed`, their reproduction) are
 * replayed alone, judged by the account alone: it stands where they are charged again, or where
 * the replay cannot tell (on the sum alone, as the note says); charged once each, the excess is not
 * theirs and the check is not verifiable. With the replay's output, for the report.
 */
export async function confirmBlame(
  settings: Settings,
  target: Target,
  identities: Identities,
  ledger: Ledger,
  blamed: AccountVerdict,
  composed: ComposedReproduction,
  title: string,
): Promise<{ verdict: AccountVerdict; note: string; output: string }> {
  const nameOf = (role: string) =>
    Object.values(identities).flatMap((identity) => (identity && !Array.isArray(identity) && identity.role === role ? [identity.name] : []))[0] ?? role;
  const { verdict, output } = await replayComposed(
    settings,
    target,
    { id: 'stop-is-final/account', title, check: 'charged-as-settled', message: blamed.message },
    accountAlone(composed),
    ledger,
    nameOf,
  );
  if (verdict === 0)
    return {
      verdict: {
        outcome: 'not verifiable',
        message: `${blamed.message}; but replayed alone, those sessions were charged once each (attached): the excess is not theirs`,
      },
      note: 'the sessions blamed, replayed alone, were charged once each (attached)',
      output,
    };
  return {
    verdict: blamed,
    note:
      verdict === 1
        ? 'the sessions blamed, replayed alone, were charged again (attached)'
        : 'the sessions blamed, replayed alone, could not tell (attached): the blame rests on the sum alone',
    output,
  };
}

/** The longest a composed reproduction's replay may take: three tries of its requests and pauses, each limited request's drain and wait, and the account's settling. */
export function replayBudgetMs(composed: ComposedReproduction, settings: Pick<Settings, 'accountSettleMs' | 'requestTimeoutMs' | 'backoffBudgetMs'>): number {
  const steps = composed.steps as TraceStep[];
  const times = steps.flatMap((step) => [step.sentAt, step.receivedAt]);
  const length = times.length ? Math.max(...times) - Math.min(...times) : 0;
  const limited = steps.filter((step) => step.limited || step.status === 429).length;
  return 3 * (length + settings.accountSettleMs + 2 * settings.requestTimeoutMs + limited * (DRAIN.ms + settings.backoffBudgetMs + settings.requestTimeoutMs));
}
