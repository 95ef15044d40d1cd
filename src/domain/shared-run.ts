/**
 * Requests several tests judge, sent once: the first test to ask runs them (`run`, for the tests
 * the run chose) and every test judges its own part, waiting as long as a test may (a limited plan
 * spaces the requests out). A part that fails there runs again alone, on a
 * session of its own where the budget has one, so that the test whose request caused it fails.
 */
import type { Check } from '../checks/checks';
import { extendTimeout, note } from '../checks/recorder';
import { ruleOf, type TestId } from '../config/rules';
import type { Settings } from '../config/settings';
import type { Client } from './client';
import type { CheckCall } from './named-checks';
import { judgedOf } from './refusals';
import type { Sessions } from './sessions';
import type { Identities } from './target';

/** Each test's named checks on the requests it shares. */
export type Parts = Partial<Record<TestId, [string, CheckCall][]>>;

export interface SharedContext {
  api: Client;
  sessions: Sessions;
  settings: Settings;
  check: Check;
}

/** What a test that shares requests has at hand: its client, sessions, settings, checks and callers. */
export interface TestContext extends SharedContext {
  identities: Identities;
}

export async function judgedShared(
  { api, sessions, settings, check }: SharedContext,
  name: string,
  tests: TestId[],
  run: (tests: TestId[]) => Promise<Parts>,
  id: TestId,
  againAlone = true,
): Promise<void> {
  const chosen = tests.filter((test) => !settings.selectedRules || settings.selectedRules.includes(ruleOf(test)));
  const alone = async () => judgeAll(check, (await run([id]))[id] ?? []);
  if (chosen.length < 2 || !api.coordination || sessions.budgetLeft() === 0) return alone();
  // Waiting for the test that runs them in another worker may take as long as a test.
  extendTimeout(settings.testTimeoutMs);
  const shared = await api.coordination.readOnce(`shared-${name}`, () => run(chosen), settings.testTimeoutMs, api.signal);
  if ('unavailable' in shared) {
    note(`the requests ${chosen.length} tests share: ${shared.unavailable}`);
    return alone();
  }
  // A part that failed may have been led there by an earlier one: alone it tells which.
  const failed = (shared[id] ?? []).map(([, call]) => judgedOf(call)).find((judged) => judged && 'fails' in judged);
  if (failed && againAlone && sessions.budgetLeft() > 0) {
    note(`its part of the requests ${chosen.length} tests share failed (${'fails' in failed ? failed.fails : ''}): alone, on a session of its own`);
    return alone();
  }
  note(`judged on requests ${chosen.length} tests share (${chosen.join(', ')})`);
  await judgeAll(check, shared[id] ?? []);
}

async function judgeAll(check: Check, checks: [string, CheckCall][]): Promise<void> {
  for (const [name, call] of checks) await check(name, call);
}
