/** The rules the suite checks, one spec file each (`file`, under tests/), and the labels every test carries. */
import type { TestDetails } from '@playwright/test';

export const RULES = {
  'owner-stop': { title: "Rule 1: the owner's stop returns 200 with a stop result", section: 'Endpoints › Rules 1; Stop result', file: 'rules/01-owner-stop.spec.ts' },
  billing: { title: 'Rule 2: credits are 2 per browser minute, prorated by the second, for the measured duration', section: 'Endpoints › Rules 2; Limits', file: 'rules/02-billing-measured.spec.ts' },
  'foreign-team': { title: 'Rule 3: a foreign team gets 403 and the session survives', section: 'Endpoints › Rules 3; Authentication 5; Errors', file: 'rules/03-foreign-team-forbidden.spec.ts' },
  'unknown-job': { title: 'Rule 4: a job with no browser session gets 404', section: 'Endpoints › Rules 4; Errors', file: 'rules/04-unknown-job-not-found.spec.ts' },
  authentication: { title: 'Rule 5: a request without a valid key gets 4xx and the session survives', section: 'Authentication 1-4', file: 'rules/05-authentication-required.spec.ts' },
  'rate-limit': { title: 'Rule 6: a burst gets 429 and the limiter recovers', section: 'Errors › Rate and concurrency; Limits', file: 'rules/06-rate-limit-burst.spec.ts' },
  'stop-is-final': { title: 'Rule 7: a stop is final and never charged twice', section: 'States and transitions; Endpoints › Rules 2', file: 'rules/07-stop-is-final.spec.ts' },
  'malformed-job-id': { title: 'Rule 8: a malformed jobId gets 4xx, never 5xx', section: 'Endpoints › Path parameter; Errors', file: 'rules/08-malformed-job-id.spec.ts' },
  'json-answers': { title: 'Rule 9: every answer is JSON and every failure is {success: false, error}', section: 'Endpoints › Failure responses; Errors', file: 'rules/09-json-answers.spec.ts' },
} as const;

export type RuleId = keyof typeof RULES;
export type Level = 'must' | 'should' | 'inferred';

export function rule(id: RuleId, level: Level): TestDetails {
  return {
    tag: `@${level}`,
    annotation: [
      { type: 'allure.label.rule', description: id },
      { type: 'allure.label.level', description: level },
      { type: 'allure.label.feature', description: RULES[id].title },
      { type: 'allure.label.specSection', description: RULES[id].section },
    ],
  };
}
