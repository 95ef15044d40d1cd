/** The rules the suite checks, one spec file each, and the labels every test carries. */
import type { TestDetails } from '@playwright/test';

export const RULES = {
  'owner-stop': { title: "Rule 1: the owner's stop returns 200 with a stop result", section: 'Endpoints › Rules 1; Stop result' },
  billing: { title: 'Rule 2: credits are 2 per browser minute, prorated by the second, for the measured duration', section: 'Endpoints › Rules 2; Limits' },
  'foreign-team': { title: 'Rule 3: a foreign team gets 403 and the session survives', section: 'Endpoints › Rules 3; Authentication 5; Errors' },
  'unknown-job': { title: 'Rule 4: a job with no browser session gets 404', section: 'Endpoints › Rules 4; Errors' },
  authentication: { title: 'Rule 5: a request without a valid key gets 4xx and the session survives', section: 'Authentication 1-4' },
  'rate-limit': { title: 'Rule 6: a burst gets 429 and the limiter recovers', section: 'Errors › Rate and concurrency; Limits' },
  'stop-is-final': { title: 'Rule 7: a stop is final and never charged twice', section: 'States and transitions; Endpoints › Rules 2' },
  'malformed-job-id': { title: 'Rule 8: a malformed jobId gets 4xx, never 5xx', section: 'Endpoints › Path parameter; Errors' },
  'json-answers': { title: 'Rule 9: every answer is JSON and every failure is {success: false, error}', section: 'Endpoints › Failure responses; Errors' },
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
