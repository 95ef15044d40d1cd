/**
 * The catalogue: every rule and every test the suite owns, by stable id. Titles live in the spec
 * files and may change; ids do not. Reporters, the variant matrix, known-deviations files and the
 * merged verdict all read ids through `testIdOf`, never through titles.
 *
 * A test id is `<rule id>/<test name>`; its checks are the named assertions a known deviation
 * may point at (`check` in src/checks/checks.ts).
 */

export type Level = 'must' | 'should' | 'inferred';

interface TestEntry {
  level: Level;
  checks: readonly string[];
  /** Runs after every other test of the run (its rule's last file), once per shard: it judges the whole run, or a fault it provokes would starve the others. */
  runWide?: true;
  /** Runs last of all (its rule's last file): it spends the owner's limit, which would hold up every other test. */
  last?: true;
}

interface RuleEntry {
  title: string;
  section: string;
  file: string;
  /** Tests of the rule that judge the whole run: they run after every other test (a project teardown). */
  lastFile?: string;
  tests: Record<string, TestEntry>;
}

const REFUSAL = ['refused', 'survives'] as const;
const STATUS_AND_SCHEMA = ['status', 'schema'] as const;
const must = (checks: readonly string[]): TestEntry => ({ level: 'must', checks });
const should = (checks: readonly string[]): TestEntry => ({ level: 'should', checks });
const inferred = (checks: readonly string[]): TestEntry => ({ level: 'inferred', checks });

export const RULES = {
  'owner-stop': {
    title: "Rule 1: the owner's stop returns 200 with a stop result",
    section: 'Endpoints › Rules 1; Stop result',
    file: 'rules/01-owner-stop.spec.ts',
    tests: { 'answers-200': must(['status', 'content-type', 'schema']) },
  },
  billing: {
    title: 'Rule 2: credits are 2 per browser minute, prorated by the second, for the measured duration',
    section: 'Endpoints › Rules 2; Limits',
    file: 'rules/02-billing.spec.ts',
    tests: {
      'past-a-minute': must(['status', 'duration', 'credits']),
      'long-hold': must(['status', 'duration', 'credits']),
      'medium-hold': must(['status', 'duration', 'credits']),
      'short-hold': must(['status', 'duration', 'credits']),
    },
  },
  'foreign-team': {
    title: 'Rule 3: a foreign team gets 403, learns nothing, and the session survives',
    section: 'Endpoints › Rules 3; Authentication 5; Errors',
    file: 'rules/03-foreign-team.spec.ts',
    tests: {
      forbidden: must(STATUS_AND_SCHEMA),
      survives: must(REFUSAL),
      'reveals-nothing': must(['refused', 'reveals-nothing']),
    },
  },
  'unknown-job': {
    title: 'Rule 4: a job with no browser session gets 404',
    section: 'Endpoints › Rules 4; Errors',
    file: 'rules/04-unknown-job.spec.ts',
    tests: { 'random-uuid': must(STATUS_AND_SCHEMA), 'job-without-session': must(STATUS_AND_SCHEMA), 'others-survive': inferred(['status', 'survives']) },
  },
  authentication: {
    title: 'Rule 5: a request without a valid key gets 4xx, learns nothing, and the session survives',
    section: 'Authentication 1-5',
    file: 'rules/05-authentication.spec.ts',
    tests: {
      'no-key': must(REFUSAL),
      'empty-token': must(REFUSAL),
      garbage: must(REFUSAL),
      'unknown-key': must(REFUSAL),
      'key-case-changed': must(REFUSAL),
      'key-extended': must(REFUSAL),
      'key-truncated': must(REFUSAL),
      'basic-scheme': should(REFUSAL),
      'token-scheme': should(REFUSAL),
      'lower-case-bearer': should(STATUS_AND_SCHEMA),
      'lower-case-header-name': inferred(STATUS_AND_SCHEMA),
      'reveals-nothing': should(['refused', 'reveals-nothing']),
    },
  },
  'rate-limit': {
    title: 'Rule 6: a burst gets 429, a throttled stop does nothing, and the limiter recovers',
    section: 'Errors › Rate and concurrency; Limits',
    file: 'rules/06-rate-limit.spec.ts',
    lastFile: 'rules/06-rate-limit.last.spec.ts',
    tests: {
      burst: { level: 'must', checks: ['limited', 'other-answers', 'teams-isolated', 'recovers', 'throttled-reveals-nothing', 'throttled-stop-did-nothing'] },
      'teams-apart': { level: 'inferred', checks: ['teams-isolated'], last: true },
    },
  },
  'stop-is-final': {
    title: 'Rule 7: a stop is final for everyone and never charged twice',
    section: 'States and transitions; Endpoints › Rules 2-4',
    file: 'rules/07-stop-is-final.spec.ts',
    lastFile: 'rules/07-stop-is-final.account.spec.ts',
    tests: {
      'second-stop': inferred(['first-stop', 'second-stop', 'no-second-charge']),
      'simultaneous-stops': inferred(['one-succeeds', 'answers', 'charged-once']),
      'final-for-everyone': must(['first-stop', 'refused', 'reveals-nothing', 'still-stopped']),
      'interact-after-stop': inferred(['first-stop', 'interact', 'nothing-unannounced']),
      'simultaneous-opens': { ...inferred(['opens', 'stop', 'one-session', 'room-left', 'cap-kept', 'caps-apart', 'refusal-starts-nothing']), runWide: true },
      'no-leaks': { ...inferred(['nothing-stopped-unasked', 'nothing-left']), runWide: true },
      account: { ...inferred(['charged-as-settled', 'refusals-charge-nobody']), runWide: true },
    },
  },
  'malformed-job-id': {
    title: 'Rule 8: a malformed jobId gets 4xx, never 5xx',
    section: 'Endpoints › Path parameter; Errors',
    file: 'rules/08-malformed-job-id.spec.ts',
    tests: {
      'not-a-uuid': inferred(['status']),
      'uuid-too-long': inferred(['status']),
      'very-long': inferred(['status']),
      'path-like': inferred(['status']),
      'broken-percent-encoding': inferred(['status']),
      'nul-byte': inferred(['status']),
      'undefined-text': inferred(['status']),
    },
  },
  'json-answers': {
    title: 'Rule 9: every answer is JSON and every failure is {success: false, error}',
    section: 'Endpoints › Failure responses; Errors',
    file: 'rules/09-json-answers.spec.ts',
    tests: {
      'not-found': must(['status', 'json-error']),
      forbidden: must(['status', 'json-error']),
      'no-key': inferred(['json-error']),
      'unknown-key': inferred(['json-error']),
      'malformed-job-id': inferred(['json-error']),
    },
  },
  sequences: {
    title: 'Rule 10: random histories of operations agree with a model of the specification',
    section: 'Endpoints › Rules 1-4; States and transitions; Authentication',
    file: 'rules/10-sequences.spec.ts',
    tests: { 'random-histories': inferred(['model', 'credits']) },
  },
} as const satisfies Record<string, RuleEntry>;

export type RuleId = keyof typeof RULES;
type TestsOf<R extends RuleId> = keyof (typeof RULES)[R]['tests'] & string;
export type TestId = { [R in RuleId]: `${R}/${TestsOf<R>}` }[RuleId];

export const RULE_IDS = Object.keys(RULES) as RuleId[];

/**
 * What each test opens on the target, every team's together: browser sessions, and scrape jobs left
 * without one. Tests not listed open nothing; the sequences rule searches with the budget left.
 */
export const OPENS: Partial<Record<TestId, { sessions: number; jobs?: number }>> = {
  'billing/past-a-minute': { sessions: 1 },
  'billing/long-hold': { sessions: 1 },
  'billing/medium-hold': { sessions: 1 },
  // Two live sessions go into the burst: the second is its spare, should the first stop get through.
  'rate-limit/burst': { sessions: 2 },
  'stop-is-final/simultaneous-stops': { sessions: 1 },
  // The session the opens leave; under a known cap as many as it allows show they left the team's slots free (budget.ts counts them where the cap is stated).
  'stop-is-final/simultaneous-opens': { sessions: 1 },
  // Where the answers cannot explain the account: one session alone, and one the foreign team refuses (account.ts).
  'stop-is-final/account': { sessions: 2 },
};

/**
 * Tests that share requests (shared-run.ts, refusal-chain.ts), and what they open once any of them
 * runs: a test takes one of its own only where the shared session shows a failure (or, in a chain of
 * refusals, decides nothing, or its scheme word is declared ignored: budget.ts counts those).
 */
export const SHARED: { tests: TestId[]; sessions: number; jobs?: number }[] = [
  { tests: ['billing/short-hold', 'owner-stop/answers-200'], sessions: 1 },
  // The chains of requests that must change nothing (chain-members.ts), one per kind of caller; two hold a job without a session too.
  { tests: ['unknown-job/others-survive', 'unknown-job/random-uuid', 'unknown-job/job-without-session', 'json-answers/not-found'], sessions: 1, jobs: 1 },
  { tests: ['foreign-team/forbidden', 'foreign-team/survives', 'foreign-team/reveals-nothing', 'json-answers/forbidden'], sessions: 1, jobs: 1 },
  {
    tests: [
      'authentication/no-key',
      'authentication/empty-token',
      'authentication/garbage',
      'authentication/unknown-key',
      'authentication/key-case-changed',
      'authentication/key-extended',
      'authentication/key-truncated',
      'authentication/basic-scheme',
      'authentication/token-scheme',
      'authentication/reveals-nothing',
    ],
    sessions: 1,
    jobs: 1,
  },
  { tests: ['authentication/lower-case-bearer', 'authentication/lower-case-header-name'], sessions: 1 },
  // An interact on the stopped session may open a second.
  { tests: ['stop-is-final/second-stop', 'stop-is-final/final-for-everyone', 'stop-is-final/interact-after-stop'], sessions: 2 },
];

/** The files of a rule's tests, its last file (tests that judge the whole run) after the rest. */
export function filesOf(rule: RuleId): string[] {
  const entry: RuleEntry = RULES[rule];
  return entry.lastFile ? [entry.file, entry.lastFile] : [entry.file];
}

export const TEST_IDS: TestId[] = RULE_IDS.flatMap((rule) => Object.keys(RULES[rule].tests).map((name) => `${rule}/${name}` as TestId));

export function ruleOf(id: string): RuleId {
  return id.split('/')[0] as RuleId;
}

export function entryOf(id: TestId): TestEntry {
  const [rule, name] = id.split('/') as [RuleId, string];
  return (RULES[rule].tests as Record<string, TestEntry>)[name];
}

export function isTestId(id: string): id is TestId {
  const [rule, name, ...rest] = id.split('/');
  return rest.length === 0 && rule in RULES && name in RULES[rule as RuleId].tests;
}

const TEST_ID = 'test-id';

/** A rule's group in the Allure report: its title with the number in two digits, so that the report, sorting by name, lists the rules in order. */
export const reportGroupOf = (rule: RuleId): string => RULES[rule].title.replace(/^Rule (\d):/, 'Rule 0$1:');

/** The details every test is declared with: its level as a tag, its id as the one annotation. */
export function spec(id: TestId): { tag: string; annotation: { type: string; description: string } } {
  const { level } = entryOf(id);
  return { tag: `@${level}`, annotation: { type: TEST_ID, description: id } };
}

/** The stable id of a test, from its annotations (Playwright's or a JSON report's). */
export function testIdOf(annotations: readonly { type: string; description?: string }[]): TestId | undefined {
  const id = annotations.find((annotation) => annotation.type === TEST_ID)?.description;
  return id && isTestId(id) ? id : undefined;
}
