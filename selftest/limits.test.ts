/**
 * The two kinds of 429 told apart from their words, and the schedule a team's limiter keeps: what a
 * refusal teaches, the places it gives, stops first.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseRate } from '../src/config/rates';
import { scheduleFor } from '../src/coordination/schedule';
import { readRefusal } from '../src/http/limits';
import { tempDir } from './temp';

const FIRECRAWL_RATE =
  'Rate limit exceeded. Consumed (req/min): 11, Remaining (req/min): 0. Upgrade your plan at https://firecrawl.dev/pricing for increased rate limits or please retry after 13s, resets at Tue Sep 22 2026 10:21:38 GMT+0000';

test("the hosted service's words: a rate's refusal with its window, its wait and its count; a cap's", () => {
  assert.deepEqual(readRefusal(FIRECRAWL_RATE, {}), { kind: 'rate', windowMs: 60_000, resetMs: 13_000, consumed: 11, remaining: 0 });
  assert.deepEqual(readRefusal('You have reached the maximum number of concurrent jobs (2). Please wait for existing jobs to complete.', {}), {
    kind: 'cap',
    cap: 2,
  });
  assert.deepEqual(readRefusal('Concurrency limit exceeded: at most 2 browser sessions at once.', {}), { kind: 'cap', cap: 2 });
  assert.deepEqual(readRefusal('Too many browser sessions at once.', {}), { kind: 'cap' });
  // A number that says when to try again is no cap.
  assert.equal(readRefusal('Concurrency limit reached, retry in (1) s.', {}).cap, undefined);
  // A window other than a minute, named the same way; Retry-After before the words.
  assert.deepEqual(readRefusal('Rate limit exceeded. Consumed (req/5s): 11, Remaining (req/5s): 0. retry after 3s', { 'retry-after': '2' }), {
    kind: 'rate',
    windowMs: 5_000,
    resetMs: 2_000,
    consumed: 11,
    remaining: 0,
  });
  // Words that say nothing: the run judges from what it holds.
  assert.deepEqual(readRefusal('Too Many Requests', {}), {});
  assert.deepEqual(readRefusal('<html><body><h1>429 Too Many Requests</h1></body></html>', {}), {});
});

test('a limit stated in words is read only with the window named with it', () => {
  assert.deepEqual(readRefusal('Rate limit exceeded. Limit (req/min): 20. Please retry after 13s.', {}).limit, { limit: 20, windowMs: 60_000 });
  assert.deepEqual(readRefusal('Too many requests: limit of 10 requests per second', {}).limit, { limit: 10, windowMs: 1_000 });
  assert.deepEqual(readRefusal('rate limit: 40/2s', {}).limit, { limit: 40, windowMs: 2_000 });
  assert.deepEqual(readRefusal('Rate limit exceeded: 20 stop/interact requests per minute for the free plan. Retry after 13s.', {}).limit, {
    limit: 20,
    windowMs: 60_000,
  });
  // A number and a window apart, or words about limits in general, state nothing.
  assert.deepEqual(readRefusal('Rate limit: 10 per second. Plan: 1000 requests per hour', {}).limit, { limit: 10, windowMs: 1_000 });
  assert.equal(readRefusal('Rate limit reached (10). Plan: 1000 requests per hour', {}).limit, undefined);
  assert.equal(readRefusal(FIRECRAWL_RATE, {}).limit, undefined);
  assert.equal(readRefusal('Rate limit exceeded, retry after 2s.', {}).limit, undefined);
});

test('RATE_LIMIT values: requests over a window', () => {
  assert.deepEqual(parseRate('10/min'), { limit: 10, windowMs: 60_000 });
  assert.deepEqual(parseRate('20/10s'), { limit: 20, windowMs: 10_000 });
  assert.deepEqual(parseRate(' 5 / s '), { limit: 5, windowMs: 1_000 });
  for (const wrong of ['10', '0/min', '10/minute', 'ten/min', '10/0s']) assert.equal(parseRate(wrong), undefined, wrong);
});

const fresh = (limiter: 'interact' | 'scrape' = 'interact') => scheduleFor(tempDir('schedule-'), 'http://target', 'owner', limiter);
const signal = new AbortController().signal;

test("a refusal that names its window teaches the rate: the limiter's own count where it gives one, else the requests that got through in the window", () => {
  const counted = fresh();
  const now = Date.now();
  for (let i = 0; i < 12; i++) counted.sent(now - 1000 + i);
  assert.equal(counted.rate(), undefined);
  assert.deepEqual(counted.learn(now, readRefusal(FIRECRAWL_RATE, {})), { limit: 10, windowMs: 60_000, from: 'learnt from a 429 that names its window' });
  // A later refusal further into the window says more was consumed: it cannot raise the limit.
  assert.equal(counted.learn(now + 10, readRefusal(FIRECRAWL_RATE.replace('11', '14'), {}))!.limit, 10);

  const unworded = fresh();
  for (let i = 0; i < 7; i++) unworded.answered(unworded.sent(now - 500 + i), false);
  // One refused before: it did not count.
  unworded.answered(unworded.sent(now - 100), true);
  // The refused request took its place too; it is marked refused once judged.
  unworded.sent(now);
  // A window no answer names is not guessed.
  assert.equal(unworded.learn(now, readRefusal('Rate limit exceeded, retry after 1s.', { 'retry-after': '1' })), undefined);
  const rate = unworded.learn(now, readRefusal('Rate limit exceeded: 10 requests per second, retry after 1s.', { 'retry-after': '1' }));
  assert.deepEqual(rate, { limit: 7, windowMs: 1_000, from: 'learnt from a 429 that names its window' });

  // Sent at once: the request refused may have been sent before others the target counted first. Those sent before its answer came count.
  const atOnce = fresh();
  for (let i = 0; i < 20; i++) atOnce.sent(now - 50 + i);
  assert.deepEqual(atOnce.learn(now - 48, readRefusal('Rate limit exceeded: 10 requests per second.', {}), now), {
    limit: 19,
    windowMs: 1_000,
    from: 'learnt from a 429 that names its window',
  });
});

test('once the rate is known, places keep to it: no more than the limit in any window, the room and the window judged from the log', async () => {
  const schedule = fresh();
  const now = Date.now();
  // A limit of 3 per 400 ms, learnt from a refusal whose window is named.
  for (let i = 0; i < 3; i++) schedule.answered(schedule.sent(now - 50 + i), false);
  schedule.learn(schedule.sent(now), { kind: 'rate', windowMs: 400, resetMs: 350 });
  schedule.answered(now, true);
  assert.equal(schedule.rate()?.limit, 3);
  assert.equal(schedule.room(), 0);
  assert.equal(schedule.hadRoom(now), false);
  const places: number[] = [];
  for (let i = 0; i < 6; i++) places.push((await schedule.admit(false, Date.now(), signal)).at);
  const all = [now - 50, now - 49, now - 48, ...places];
  // A refusal counted over another window keeps the stricter rate of the two: 100 a minute is stricter than 3 per 400 ms (450 a minute), 1,000 a minute is not.
  assert.deepEqual(schedule.learn(Date.now(), { kind: 'rate', windowMs: 60_000, consumed: 1001, remaining: 0 }), {
    limit: 3,
    windowMs: 400,
    from: 'learnt from a 429 that names its window',
  });
  assert.deepEqual(schedule.learn(Date.now(), { kind: 'rate', windowMs: 60_000, consumed: 101, remaining: 0 }), {
    limit: 100,
    windowMs: 60_000,
    from: 'learnt from a 429 that names its window',
  });
  for (const at of all)
    assert.ok(all.filter((other) => other >= at && other < at + 400).length <= 3, `more than 3 places within 400 ms of ${at}: ${all.map((t) => t - now)}`);
});

test('a refusal of a request that had its place widens the margin between places, doubling, up to 5 % of the window', async () => {
  const schedule = fresh();
  const now = Date.now();
  // A limit of 1 per 2 s: the margin is 40 ms (2 %), at most 100 ms more once widened.
  schedule.learn(schedule.sent(now - 100), { kind: 'rate', windowMs: 2000, consumed: 2, remaining: 0 });
  const gap = async () => {
    const first = (await schedule.admit(false, Date.now(), signal)).at;
    const second = (await schedule.admit(false, Date.now(), signal)).at;
    return { first, gap: second - first - 2000 };
  };
  const plain = await gap();
  assert.ok(plain.gap >= 40, `margin ${plain.gap}`);
  // The limiter refused a request sent at its place: arrivals vary more than the margin allows.
  schedule.answered(plain.first, true);
  assert.equal((schedule as unknown as { widened: number }).widened, 40);
  const wider = await gap();
  assert.ok(wider.gap >= 80, `margin once widened: ${wider.gap}`);
  // A refusal before any place was planned (learning the rate) widens nothing.
  const other = fresh();
  other.answered(other.sent(now), true);
  assert.equal((other as unknown as { widened: number }).widened, 0);
});

test('a stop waiting for a place goes before requests that asked earlier', async () => {
  const schedule = fresh();
  const now = Date.now();
  schedule.answered(schedule.sent(now), false);
  // A window of 1.5 s: both must be waiting before it opens, on a busy machine too.
  schedule.learn(now, { kind: 'rate', windowMs: 1500, consumed: 2, remaining: 0 });
  assert.equal(schedule.rate()?.limit, 1);
  const order: string[] = [];
  const other = schedule.admit(false, now - 1000, signal).then(() => order.push('other'));
  const stop = schedule.admit(true, now, signal).then(() => order.push('stop'));
  await Promise.all([other, stop]);
  assert.deepEqual(order, ['stop', 'other']);
});
