/** What a reproduction carries: the failed test's trace, the checks that failed with their arguments, the run's bounds, and where and when it was made. Never a key. */
import path from 'node:path';
import type { Settings } from '../config/settings';
import type { Serialized, TraceStep } from './trace';

export const REPRODUCTIONS = 'reproductions';

/** The annotation that names a test's reproduction, relative to the reports folder. */
export const REPRODUCTION = 'reproduction';

export const reproductionFile = (reportsDir: string, testId: string) => `${path.join(reportsDir, REPRODUCTIONS, ...testId.split('/'))}.mjs`;

export interface ReproducedCheck {
  /** The check's name in the test's catalogue entry. */
  check: string;
  /** The named check, and its arguments against the trace (src/domain/named-checks.ts). */
  judge: string;
  args: Serialized[];
  /** What it said in the run. */
  message: string;
  /** A known deviation of the target (REPRODUCE_DEVIATIONS=1): its declared behaviour shows it too. */
  deviation?: true;
}

export interface Plan {
  test: string;
  title: string;
  steps: TraceStep[];
  checks: ReproducedCheck[];
  /** The target's file declared the owner's key under any scheme word the owner's: such a 429 is waited out. */
  schemeWordIgnored: boolean;
  limits: { requestTimeoutMs: number; maxBodyBytes: number; backoffBudgetMs: number };
  /** The target the run made it against (its address, or EMBEDDED_TARGET) and when (ISO time): `replay` compares it with the target configured now. */
  made?: { target: string; at: string };
}

/** The embedded reference's port changes with each run: it is recorded by name. */
export const EMBEDDED_TARGET = 'embedded reference';

/** The target as a reproduction records it: an external target's address (which carries no credentials), or EMBEDDED_TARGET. */
export const targetOf = (settings: Pick<Settings, 'embedded' | 'baseURL'>) => (settings.embedded || !settings.baseURL ? EMBEDDED_TARGET : settings.baseURL);

const PLAN_LINE = 'const PLAN = ';

/** The line of a reproduction's file that holds its plan. */
export const planLine = (plan: Plan) => `${PLAN_LINE}${JSON.stringify(plan, null, 1)};`;

/** The plan a reproduction's file holds (its JSON ends at the first line that closes it). */
export function planOf(text: string): Plan {
  const start = text.indexOf(PLAN_LINE) + PLAN_LINE.length;
  return JSON.parse(text.slice(start, text.indexOf('};\n', start) + 1));
}
