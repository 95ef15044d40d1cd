/**
 * The cost lines: tallies of several processes add up, and against a rate-limited target the floor
 * is the busiest team's requests that got through, at the rate its limiter let them through.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addSpend, costOf, describeCost, mergeCosts, type Spend } from '../src/coordination/cost';
import { limitedPlanRequests, ONE_STEP_REQUESTS } from '../src/domain/budget';
import { REQUESTS_FOR_EVERY_ONE_STEP_PATTERN } from '../src/sequences/systematic';

const at = (seconds: number) => 1_700_000_000_000 + seconds * 1000;

test("against 10 requests a minute, the floor is the busiest team's requests that got through at 10 a minute", () => {
  // The owner: 60 requests through, 10 a minute for 6 minutes, 200 refused in between; the foreign team: 5 through, none refused.
  const owner = { limited: 260, throttled: 200, through: Array.from({ length: 60 }, (_, i) => at(i * 6)), firstThrottled: at(1), lastThrottled: at(355) };
  const first: Spend = { sessions: 10, scrapes: 12, credits: 20, teams: { owner: { ...owner, through: owner.through.slice(0, 30) } } };
  const second: Spend = {
    sessions: 5,
    scrapes: 5,
    credits: 10,
    teams: {
      owner: { ...owner, limited: 0, throttled: 0, through: owner.through.slice(30) },
      foreign: { limited: 5, throttled: 0, through: [at(1), at(2), at(3), at(4), at(5)] },
    },
  };
  const total = addSpend(addSpend({ sessions: 0, scrapes: 0, credits: 0, teams: {} }, first), second);
  const cost = costOf(total, 7.5 * 60_000);
  assert.equal(cost.sessions, 15);
  assert.equal(cost.limitedRequests, 265);
  assert.equal(cost.throttled, 200);
  assert.equal(cost.floor?.team, 'owner');
  assert.ok(Math.abs(cost.floor!.perMinute - 10) < 0.3, `${cost.floor!.perMinute} a minute`);
  assert.ok(Math.abs(cost.floor!.floorMs - 360_000) < 10_000, `${cost.floor!.floorMs} ms`);
  assert.ok(Math.abs(cost.floor!.ratio - 1.25) < 0.05, `ratio ${cost.floor!.ratio}`);
  assert.match(
    describeCost(cost).join('\n'),
    /COST: 15 session\(s\) created and 17 scrape\(s\), by every team the run used; 30 credit\(s\) billed as the stops' answers reported them \(creditsBilled; [^)]*\); 265 request\(s\) to stop and interact, 200 answered 429; 450\.0 s from the workers' start to the verdict\n {2}floor: the owner team's 60 requests that got through, at the [\d.]+ request\(s\) a minute its limiter allowed, take \d+ s; the run took 1\.\d+x that/,
  );
});

test('refusals over less than a minute give no floor; shards add up without one', () => {
  const burst: Spend = {
    sessions: 2,
    scrapes: 2,
    credits: 0.1,
    teams: { burst: { limited: 755, throttled: 607, through: [at(0), at(0.1)], firstThrottled: at(0.05), lastThrottled: at(0.4) } },
  };
  const cost = costOf(burst, 7_000);
  assert.equal(cost.floor, undefined);
  const merged = mergeCosts([cost, { ...cost, wallMs: 9_000 }])!;
  assert.deepEqual([merged.sessions, merged.limitedRequests, merged.throttled, merged.wallMs, merged.credits], [4, 1510, 1214, 9_000, 0.2]);
});

test("429s the team's own schedule did not earn add up across processes and shards, and the cost lines say so", () => {
  const owner = (unearned?: number) => ({ limited: 10, throttled: 3, through: [at(0)], ...(unearned ? { unearned } : {}) });
  const total = addSpend(addSpend({ sessions: 0, scrapes: 0, credits: 0, teams: {} }, { sessions: 1, scrapes: 1, credits: 0, teams: { owner: owner(2) } }), {
    sessions: 1,
    scrapes: 1,
    credits: 0,
    teams: { owner: owner(1), foreign: owner() },
  });
  const cost = costOf(total, 5_000);
  assert.deepEqual(cost.unearned, { owner: 3 });
  assert.match(
    describeCost(cost).join('\n'),
    /\n {2}429 not earned: the owner team's requests met 429 3 time\(s\) while its own schedule had room in the window/,
  );
  assert.deepEqual(mergeCosts([cost, cost])!.unearned, { owner: 6 });
  // None met: no line.
  assert.doesNotMatch(describeCost(costOf({ sessions: 0, scrapes: 0, credits: 0, teams: { owner: owner() } }, 5_000)).join('\n'), /not earned/);
});

test("the prediction counts what every 1-step pattern of the sequences search takes, whatever a limited plan's ceiling", () => {
  assert.equal(ONE_STEP_REQUESTS, REQUESTS_FOR_EVERY_ONE_STEP_PATTERN);
  assert.equal(limitedPlanRequests({ limit: 10, windowMs: 60_000 }), 10);
  assert.equal(limitedPlanRequests({ limit: 10, windowMs: 6_000 }), Number.POSITIVE_INFINITY);
  assert.equal(limitedPlanRequests(undefined), Number.POSITIVE_INFINITY);
});
