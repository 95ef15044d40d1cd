/**
 * The `check` and `testId` fixtures: a test's named checks, judged against the target's known
 * deviations (src/checks/checks.ts says how), and the labels that key the report by test id.
 */
import path from 'node:path';
import { type Fixtures, type TestInfo, test } from '@playwright/test';
import { description, displayName, historyId, label, labels, link, testCaseId } from 'allure-js-commons';
import { type Check, type ComposedReproduction, notVerifiable } from '../checks/checks';
import { type Failure, failureOf } from '../checks/failure';
import type { KnownDeviation } from '../config/deviations';
import { DeclaredBehaviour, KnownDeviationError, plain, RunError } from '../config/errors';
import { entryOf, RULES, reportGroupOf, ruleOf, type TestId, testIdOf } from '../config/rules';
import type { Settings } from '../config/settings';
import type { Coordination } from '../coordination/coordination';
import { runCheck } from '../domain/named-checks';
import { redact } from '../http/redact';
import { REPRODUCTION } from '../reproduction/plan';
import type { Trace } from '../reproduction/trace';
import { curlLine, type Reproducible, writeReproduction } from '../reproduction/write';

/** The declared behaviours a test met, each with its reason: the test ends as a known deviation once its checks are done. */
type Declared = { name: string; message: string; reason: string }[];

async function markKnownDeviation(testInfo: TestInfo, name: string, reason: string): Promise<void> {
  testInfo.annotations.push({ type: 'known-deviation', description: `${name}: ${reason}` });
  await label('knownDeviation', reason);
  await displayName(`[known deviation] ${testInfo.title}`);
}

/**
 * A test that could not establish its fact stays skipped in Allure, and says so with its reason.
 * Allure heads a skipped test's message (Playwright's skip reason) "Error", so the reason is its
 * description instead.
 */
async function markNotVerifiable(testInfo: TestInfo): Promise<void> {
  const reason = testInfo.annotations.find((annotation) => annotation.type === 'not-verifiable')?.description;
  if (testInfo.status !== 'skipped' || !reason) return;
  for (const annotation of testInfo.annotations) if (annotation.type === 'skip') delete annotation.description;
  await label('notVerifiable', redact(reason));
  await description(`Not verifiable: ${redact(reason)}`);
  await displayName(`[not verifiable] ${testInfo.title}`);
}

function createCheck(
  id: TestId,
  deviations: KnownDeviation[],
  reproduceDeviations: boolean,
  testInfo: TestInfo,
  outcomes: Map<string, 'passed' | 'deviated'>,
  declared: Declared,
  failures: Failure[],
): Check {
  const { checks } = entryOf(id);
  return async (name, judgement, reproduce) => {
    if (!checks.includes(name)) throw new RunError(`check "${name}" is not in the catalogue of ${id} (src/config/rules.ts)`);
    const deviation = deviations.find((entry) => entry.test === id && entry.check === name);
    let unverifiable: string | undefined;
    await test.step(
      `check ${name}`,
      async () => {
        try {
          if (typeof judgement === 'function') await judgement();
          else unverifiable = runCheck(judgement)?.notVerifiable;
          outcomes.set(name, 'passed');
        } catch (error) {
          const message = plain(String((error as Error)?.message ?? error));
          if (error instanceof DeclaredBehaviour) {
            // The target did what its file states it does instead: recorded, and the test goes on.
            outcomes.set(name, 'deviated');
            if (reproduceDeviations && typeof judgement !== 'function') failures.push(failureOf(name, judgement, error));
            declared.push({ name, message, reason: error.reason });
            await markKnownDeviation(testInfo, name, error.reason);
            return;
          }
          // The target failed exactly as an entry of its file says.
          const reason = deviation && !(error instanceof RunError) && (!deviation.message || deviation.message.test(message)) ? deviation.reason : undefined;
          if (reason === undefined) {
            const call = typeof judgement === 'function' ? undefined : judgement;
            const composed = reproduce && !(error instanceof RunError) ? composedOrNote(reproduce, testInfo) : undefined;
            if ((call || composed) && !(error instanceof RunError)) failures.push(failureOf(name, call, error, composed));
            throw error;
          }
          outcomes.set(name, 'deviated');
          if (reproduceDeviations && typeof judgement !== 'function') failures.push(failureOf(name, judgement, error));
          await markKnownDeviation(testInfo, name, reason);
          testInfo.fail(true, `Known deviation of this target: ${reason}`);
          throw new KnownDeviationError(`${id} › ${name}: ${reason}\n${message}`);
        }
      },
      { box: true },
    );
    if (unverifiable) notVerifiable(unverifiable);
  };
}

/** A composed reproduction, or, where composing it failed, a note saying so: never in place of the check's own failure. */
function composedOrNote(reproduce: () => ComposedReproduction | undefined, testInfo: TestInfo): ComposedReproduction | undefined {
  try {
    return reproduce();
  } catch (error) {
    testInfo.annotations.push({ type: 'note', description: `no reproduction: ${redact(String((error as Error).message))}` });
    return undefined;
  }
}

/**
 * A test whose named checks failed: each failure, typed, goes in the report, and the test leaves a
 * reproduction (src/reproduction/), named in an annotation the summary, JUnit and Allure show.
 */
async function reportFailures(settings: Settings, failed: Reproducible, testInfo: TestInfo): Promise<void> {
  const shown = failed.failures.map(({ call: _, composed: __, ...failure }) => failure);
  await testInfo.attach('failed checks', { body: redact(JSON.stringify(shown, null, 2)), contentType: 'application/json' });
  const file = await writeReproduction(settings, failed).catch((error: Error) => {
    testInfo.annotations.push({ type: 'note', description: `no reproduction: ${redact(error.message)}` });
    return undefined;
  });
  if (!file) return;
  const relative = path.relative(settings.reportsDir, file).split(path.sep).join('/');
  testInfo.annotations.push({ type: REPRODUCTION, description: relative });
  // From the Allure report's page (<reports>/allure-report/index.html) to the file.
  await link(`../${relative}`, `reproduction: ${relative}`);
  const curl = curlLine(failed);
  if (curl) testInfo.annotations.push({ type: 'curl', description: curl });
  await testInfo.attach('reproduction', { path: file, contentType: 'text/javascript' });
}

export const checkFixtures: Fixtures<
  { testId: TestId; check: Check; reproductionsFolder: string | undefined },
  { keepWorkerOnFailure: boolean },
  { requestTrace: Trace; coordination: Coordination },
  { settings: Settings }
> = {
  /**
   * An option for the kit's variant matrix, where most faulty variants fail a test: a test that
   * failed is then marked as expected to, so that Playwright keeps its worker instead of starting
   * another (about half a second of CPU each). Outcomes are read from the results' status and errors.
   */
  keepWorkerOnFailure: [false, { scope: 'worker', option: true }],

  /** Where failed tests leave their reproductions: `<reports>/reproductions` unless the variant matrix gives each variant its own. */
  reproductionsFolder: [undefined, { option: true }],

  testId: [
    async ({ keepWorkerOnFailure }, use, testInfo) => {
      const id = testIdOf(testInfo.annotations);
      if (!id) throw new RunError(`"${testInfo.title}" has no test id: declare it with spec('<rule>/<test>') from src/config/rules.ts`);
      const rule = RULES[ruleOf(id)];
      // One message for all the labels: each runtime call is an attachment, with a step of its own.
      await labels(
        { name: 'feature', value: reportGroupOf(ruleOf(id)) },
        { name: 'rule', value: ruleOf(id) },
        { name: 'testId', value: id },
        { name: 'level', value: entryOf(id).level },
        { name: 'specSection', value: rule.section },
      );
      // History and test case follow the id, so a reworded title keeps its history.
      await historyId(id);
      await testCaseId(id);
      await use(id);
      await markNotVerifiable(testInfo);
      if (keepWorkerOnFailure && testInfo.status === 'failed') testInfo.fail();
    },
    { auto: true },
  ],

  check: async ({ testId, settings, requestTrace: trace, coordination, reproductionsFolder }, use, testInfo) => {
    const outcomes = new Map<string, 'passed' | 'deviated'>();
    const declared: Declared = [];
    const failures: Failure[] = [];
    await use(createCheck(testId, settings.knownDeviations, settings.reproduceDeviations, testInfo, outcomes, declared, failures));
    // For the checks that judge the whole run: their reproductions are made of this test's requests.
    coordination.saveTrace(testId, trace.steps);
    if (failures.length) await reportFailures(settings, { testId, title: testInfo.title, trace, failures, folder: reproductionsFolder }, testInfo);
    const stale = settings.knownDeviations.filter((entry) => entry.test === testId && outcomes.get(entry.check) === 'passed');
    const staleError = stale.length
      ? `Declared as a known deviation, but it passes: ${stale.map((entry) => `${entry.test} › ${entry.check}`).join(', ')}. Remove it from ${settings.knownDeviationsFile}.`
      : undefined;
    if (declared.length && testInfo.status !== 'skipped' && !staleError) {
      // Every other check passed: the test is a known deviation. One failed: it stays a failure, the declared behaviours beside it.
      if (testInfo.status === 'passed') testInfo.fail(true, `Known deviation of this target: ${declared[0].reason}`);
      throw new KnownDeviationError(declared.map(({ name, message, reason }) => `${testId} › ${name}: ${reason}\n${message}`).join('\n'));
    }
    if (staleError) throw new Error(staleError);
  },
};
