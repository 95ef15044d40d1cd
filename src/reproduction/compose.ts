/**
 * Reproductions of the checks that judge the whole run: their requests are other tests'. Each test
 * keeps its trace in the run's working folder (the `traces` channel); a run-wide check's
 * reproduction is made of the parts of those traces that concern what it found, then its own
 * requests, one part after the other.
 */
import type { ComposedReproduction, NamedCall } from '../checks/checks';
import { CREDIT_USAGE_PATH } from '../domain/account';
import { type Answer, JOB_OF_PATH } from '../domain/answer';
import type { Serialized, Trace, TraceStep } from './trace';

/** A job's part of a trace: the scrape that created it and every request that names it. */
export function stepsOfJob(steps: TraceStep[], jobId: string): TraceStep[] {
  const job = jobId.toLowerCase();
  return steps.filter((step) => step.createdJob?.toLowerCase() === job || step.path.toLowerCase().includes(job));
}

/** A pause between parts taken from different traces. */
const BETWEEN_PARTS_MS = 100;

/**
 * Parts of traces (of several tests) as one plan's steps, one part after the other: renumbered,
 * each part's clock moved to begin after the last, connections kept apart. `seqOf(part, seq)` is
 * where a step of a part went.
 */
export function composeSteps(
  parts: TraceStep[][],
  pauseBefore: (part: number) => number = () => BETWEEN_PARTS_MS,
): { steps: TraceStep[]; seqOf: (part: number, seq: number) => number | undefined } {
  const steps: TraceStep[] = [];
  const moved = parts.map(() => new Map<number, number>());
  let clock = 0;
  let connections = 0;
  parts.forEach((part, index) => {
    if (!part.length) return;
    if (steps.length) clock += pauseBefore(index) - BETWEEN_PARTS_MS;
    const shift = clock - part[0].sentAt;
    const base = connections;
    for (const step of part) {
      moved[index].set(step.seq, steps.length);
      connections = Math.max(connections, base + (step.connection ?? 0));
      steps.push({
        ...step,
        seq: steps.length,
        sentAt: +(step.sentAt + shift).toFixed(1),
        receivedAt: +(step.receivedAt + shift).toFixed(1),
        ...(step.connection ? { connection: base + step.connection } : {}),
      });
    }
    clock = Math.max(...steps.map((step) => step.receivedAt)) + BETWEEN_PARTS_MS;
  });
  return { steps, seqOf: (part, seq) => moved[part].get(seq) };
}

/** A job the no-leaks sweep found a session on, and the test that created it. */
export interface Leak {
  jobId: string;
  test?: string;
  stop: Answer;
}

/**
 * The reproduction of `stop-is-final/no-leaks`: for each job, the requests of the test that created
 * it that concern the job (its scrape, its interacts and stops), then the sweep's stop of it; judged
 * by `nothingLeft`, against the settlements the replayed stops report.
 */
export function composeLeaks(leaks: Leak[], own: Trace, traceOf: (test: string) => TraceStep[] | undefined): ComposedReproduction | undefined {
  const parts: TraceStep[][] = [];
  for (const { jobId, test, stop } of leaks) {
    const creator = test ? traceOf(test) : undefined;
    const seq = own.stepOf(stop);
    if (!creator || seq === undefined) return undefined;
    const part = stepsOfJob(creator, jobId);
    // Without the interact that was refused (one never answered is not in the trace), there is nothing to replay.
    if (!lastInteract(part, (step) => step).interact) return undefined;
    parts.push(part, [own.steps[seq]]);
  }
  const composed = composeSteps(parts);
  // Every step of these parts is in the plan.
  const seqOf = (part: number, seq: number) => composed.seqOf(part, seq)!;
  const { steps } = composed;
  const found = leaks.map(({ jobId }, index) => ({
    jobId,
    ...lastInteract(parts[2 * index], (seq) => seqOf(2 * index, seq)),
    stop: { $answer: seqOf(2 * index + 1, parts[2 * index + 1][0].seq) },
    settled: parts[2 * index].filter((step) => step.method === 'DELETE' && step.as === 'owner').map((step) => ({ $answer: seqOf(2 * index, step.seq) })),
  }));
  return { steps, checks: [{ judge: 'nothingLeft', args: [found, leaks.length] }] };
}

/**
 * The reproduction of `stop-is-final/no-leaks › nothing-stopped-unasked`: a session of the caller
 * opened as one of the run's was (what such a stop can settle: the run cannot name the one it did),
 * then, for each test whose stop of a job that never had a session settled one all the same, its
 * requests up to that stop; judged by `settledNothing`.
 */
export function composeStrays(jobIds: string[], traces: TraceStep[][]): ComposedReproduction | undefined {
  const strays = new Set(jobIds.map((jobId) => jobId.toLowerCase()));
  const isStray = (step: TraceStep) => step.method === 'DELETE' && step.status === 200 && strays.has(JOB_OF_PATH.exec(step.path)?.[1].toLowerCase() ?? '');
  const parts = traces.filter((steps) => steps.some(isStray)).map((steps) => steps.slice(0, steps.length - [...steps].reverse().findIndex(isStray)));
  const callers = [...new Set(parts.flatMap((part) => part.filter(isStray).map((step) => step.as)))];
  const opened = callers.map((as) => openingOf(traces, as)).filter((part): part is TraceStep[] => part !== undefined);
  if (!parts.length || opened.length < callers.length) return undefined;
  const { steps, seqOf } = composeSteps([...opened, ...parts]);
  const stops = parts.flatMap((part, index) => part.filter(isStray).map((step) => ({ $answer: seqOf(opened.length + index, step.seq)! })));
  return { steps, checks: [{ judge: 'settledNothing', args: [stops] }] };
}

/** The scrape and the interact that opened a session of caller `as` in some test of the run. */
function openingOf(traces: TraceStep[][], as: string): TraceStep[] | undefined {
  for (const steps of traces) {
    const interact = steps.find((step) => step.provisions && !step.superseded && step.status === 200 && step.as === as);
    const job = interact && JOB_OF_PATH.exec(interact.path)?.[1].toLowerCase();
    const scrape = job && steps.find((step) => step.createdJob?.toLowerCase() === job);
    if (scrape) return [scrape, interact];
  }
  return undefined;
}

/** The job's last interact in its creator's part, as a reference into the plan: the leak's premise. */
function lastInteract(part: TraceStep[], seqOf: (seq: number) => number): { interact?: { $answer: number } } {
  const last = part.filter((step) => step.method === 'POST' && step.path.endsWith('/interact')).at(-1);
  return last ? { interact: { $answer: seqOf(last.seq) } } : {};
}

/** How long charges queued behind the stops get to land before the account is read again (the hosted service's land about 1.5 s late). */
const ACCOUNT_LANDING_MS = 2_500;

/** A reading of the owner's account, where a part begins without one. */
export const ACCOUNT_READING: TraceStep = {
  seq: 0,
  method: 'GET',
  path: CREDIT_USAGE_PATH,
  as: 'owner',
  on429: 'return-last',
  sentAt: 0,
  receivedAt: 1,
  status: 200,
};

/**
 * The reproduction of `stop-is-final/account`: the account read, the requests that concern what it
 * found (the sessions charged again, or one session alone), the account read until it holds still;
 * judged by `accountCharged` with the run's ACCOUNT_SETTLE_MS, and the interacts that may have
 * opened a session again.
 */
export function composeAccount(parts: TraceStep[][], settleMs: number, alone = false): ComposedReproduction | undefined {
  // The readings after the sessions wait as long as the run's did, and at least as long as charges queued behind them may take to land.
  const readings = parts.at(-1) ?? [];
  const waited = readings.length ? Math.max(...readings.map((step) => step.receivedAt)) - readings[0].sentAt : 0;
  const { steps } = composeSteps(parts, (part) => (part === parts.length - 1 && !alone ? Math.max(ACCOUNT_LANDING_MS, waited) : BETWEEN_PARTS_MS));
  const reading = (step: TraceStep) => step.path === CREDIT_USAGE_PATH;
  const first = steps.findIndex((step) => !reading(step));
  const last = steps.length - 1 - [...steps].reverse().findIndex((step) => !reading(step));
  if (first < 1 || last === steps.length - 1) return undefined;
  const ref = (step: TraceStep) => ({ $answer: step.seq });
  // A provisioning attempt the run retried is not sent again: it has no answer to judge.
  const acts = steps.slice(first, last + 1).filter((step) => !step.superseded);
  const args = [
    ref(steps[first - 1]),
    steps.slice(last + 1).map(ref),
    acts.filter((step) => step.method === 'POST' && step.path === '/v2/scrape').map(ref),
    acts.filter((step) => step.method === 'DELETE' && step.as === 'owner').map(ref),
    settleMs,
    alone,
    acts.filter((step) => step.method === 'POST' && JOB_OF_PATH.test(step.path)).map(ref),
  ];
  return { steps, checks: [{ judge: 'accountCharged', args }] };
}

/** The reproduction of a refusal that charged its caller: the refusing team's account, read around one session it refused, holds still. */
export const refuserUncharged = (composed: ComposedReproduction | undefined): ComposedReproduction | undefined =>
  composed && { steps: composed.steps, checks: [{ judge: 'refuserUncharged', args: composed.checks[0].args.slice(0, 2) }] };

/** The account's reproduction judged by the account alone, as the run judges it: its sessions told apart, none held to one settlement. */
export const accountAlone = (composed: ComposedReproduction): ComposedReproduction => ({
  steps: composed.steps,
  checks: composed.checks.map(({ judge, args }) => ({ judge, args: [...args.slice(0, 6), args[6] ?? { $undefined: true }, false] })),
});

/**
 * `kept` steps of a trace, each kept-alive connection they use with the request it carried before
 * them (whatever its job): a target that ties a connection to the last key it saw shows it only so.
 * Such a request names a job the replay never creates: it opens nothing, and nothing judges it.
 */
function withConnectionsPrimed(all: TraceStep[], kept: TraceStep[]): TraceStep[] {
  const seqs = new Set(kept.map((step) => step.seq));
  const primers = kept.flatMap((step) => {
    const before =
      step.connection === undefined
        ? undefined
        : all
            .slice(0, step.seq)
            .reverse()
            .find((earlier) => earlier.connection === step.connection);
    return before && !seqs.has(before.seq) ? [before] : [];
  });
  const primed = new Set(primers.map((step) => step.seq));
  // One that went long before the history goes just before it: a connection's idle time is not what a fault needs.
  const begins = Math.min(...kept.map((step) => step.sentAt));
  return all
    .filter((step) => seqs.has(step.seq) || primed.has(step.seq))
    .map((step): TraceStep => {
      if (!primed.has(step.seq)) return step;
      const { provisions, superseded, createdJob, limited, capped, ...primer } = step;
      return {
        ...primer,
        primes: true,
        ...(step.receivedAt < begins - 1 ? { sentAt: +(begins - 1 - (step.receivedAt - step.sentAt)).toFixed(1), receivedAt: begins - 1 } : {}),
      };
    });
}

/**
 * The reproduction of the sequences rule: the failing history's part of the test's trace (from its
 * provisioning to the step that broke the model), and the named check that step failed.
 */
export function composeHistory(own: Trace, { call, from, to }: { call: NamedCall; from: number; to: number }): ComposedReproduction | undefined {
  // All of it, other histories' requests too where they ran beside it (the fault may need them), but those on jobs created before it began: they cannot be replayed.
  const part = own.steps.slice(from, to);
  const created = new Set(part.flatMap((step) => (step.createdJob ? [step.createdJob.toLowerCase()] : [])));
  const kept = part.filter((step) => !JOB_OF_PATH.test(step.path) || created.has(JOB_OF_PATH.exec(step.path)![1].toLowerCase()));
  const { steps, seqOf } = composeSteps([withConnectionsPrimed(own.steps, kept)]);
  let outside = false;
  const local = (value: Serialized): Serialized => {
    if (Array.isArray(value)) return value.map(local);
    if (value && typeof value === 'object') {
      if ('$answer' in value && typeof value.$answer === 'number') {
        const seq = seqOf(0, value.$answer);
        outside ||= seq === undefined;
        return { $answer: seq ?? -1 };
      }
      return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, local(item as Serialized)]));
    }
    return value;
  };
  const args = call.args.map((arg) => local(own.serialize(arg)));
  return outside ? undefined : { steps, checks: [{ judge: call.judge, args }] };
}
