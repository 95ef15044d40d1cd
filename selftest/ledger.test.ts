/**
 * The ledger believes a refusal: a job every one of whose interacts was refused holds nothing, one
 * with an interact in flight or answered otherwise may hold a session, and each attempt has one outcome.
 */

import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { lastStatusOf, RunError } from '../src/config/errors';
import { type Answer, summary } from '../src/domain/answer';
import { capBelowPeak, capHeldFlag, capsHeld, openingOf } from '../src/domain/cap-discovery';
import type { Client } from '../src/domain/client';
import { Ledger } from '../src/domain/ledger';
import { judge, runCheck } from '../src/domain/named-checks';
import type { Identity } from '../src/domain/target';
import { tempDir } from './temp';

const TARGET = 'http://target';
const owner = { name: 'owner team' } as Identity;
const refusedForRate = { status: 429, refusal: { kind: 'rate' } } as unknown as Answer;

test('a job whose interacts were all refused holds nothing; one with an interact in flight, or answered 202, may hold a session', async () => {
  const ledger = new Ledger(path.join(tempDir('ledger-'), 'ledger.jsonl'));
  const options = { api: { target: { baseURL: TARGET } } as Client, ledger, settings: { requestTimeoutMs: 1_000 } };
  const job = (jobId: string) => (ledger.created({ target: TARGET, embedded: false, jobId, identity: owner.name }), jobId);

  // Two interacts at once: the first refused for the rate, given up after its budget (its 429 marked once, not again at its end).
  const atOnce = job('11111111-1111-4111-8111-111111111111');
  const [a, b] = [openingOf(options, owner, atOnce, true), openingOf(options, owner, atOnce, true)];
  a.onAttempt();
  b.onAttempt();
  assert.equal(await a.giveUpOn429(1, refusedForRate), false);
  a.ended(lastStatusOf(new RunError('still answered 429: the back-off budget is used up', 429)));
  assert.equal(ledger.heldNothing(TARGET, atOnce), false, 'the second is still in flight');
  b.ended(429);
  assert.equal(ledger.heldNothing(TARGET, atOnce), true, 'both refused');

  // Answered 202, or cut off in flight: perhaps a session.
  const accepted = job('22222222-2222-4222-8222-222222222222');
  const c = openingOf(options, owner, accepted, true);
  c.onAttempt();
  c.ended(202);
  assert.equal(ledger.heldNothing(TARGET, accepted), false);
  const cut = job('33333333-3333-4333-8333-333333333333');
  const d = openingOf(options, owner, cut, true);
  d.onAttempt();
  d.ended(lastStatusOf(new Error('socket hang up')));
  assert.equal(ledger.heldNothing(TARGET, cut), false);

  // Cancelled before it was ever sent: nothing.
  const unsent = job('44444444-4444-4444-8444-444444444444');
  openingOf(options, owner, unsent, true).ended(undefined);
  assert.equal(ledger.heldNothing(TARGET, unsent), true);

  // Every job stays in the ledger's open list: the teardowns stop them all the same, in case the target opens what it refuses.
  assert.equal(ledger.open().length, 4);
});

test('a session opened again on a stopped job counts as live, its refusals before forgotten', () => {
  const ledger = new Ledger(path.join(tempDir('ledger-'), 'ledger.jsonl'));
  const jobId = '55555555-5555-4555-8555-555555555555';
  const entry = { target: TARGET, jobId, identity: owner.name };
  ledger.created({ ...entry, embedded: false });
  ledger.session('opening', entry);
  ledger.session('live', entry);
  ledger.ended({ ...entry, status: 200 });
  assert.equal(ledger.open().length, 0);
  // An interact on the stopped job opens a session: 'created' comes between its 'opening' and its 'live'.
  ledger.session('opening', entry);
  ledger.created({ ...entry, embedded: false });
  ledger.session('live', entry);
  assert.equal(ledger.liveSessions(TARGET, owner.name), 1);
  assert.equal(ledger.heldNothing(TARGET, jobId), false);
});

test('a session stopped by answers without a charge is silent, its life from its interact sent to the first such answer; a reopened job starts a new one', () => {
  const ledger = new Ledger(path.join(tempDir('ledger-'), 'ledger.jsonl'));
  const jobId = '33333333-3333-4333-8333-333333333333';
  const lines = [
    { event: 'created', at: '2026-01-01T00:00:00.000Z', target: TARGET, embedded: false, jobId, identity: owner.name },
    { event: 'opening', at: '2026-01-01T00:00:00.100Z', target: TARGET, jobId, identity: owner.name },
    { event: 'live', at: '2026-01-01T00:00:00.150Z', target: TARGET, jobId, identity: owner.name, status: 200 },
    { event: 'reported', at: '2026-01-01T00:00:02.100Z', target: TARGET, jobId, identity: owner.name },
    { event: 'reported', at: '2026-01-01T00:00:03.000Z', target: TARGET, jobId, identity: owner.name },
    { event: 'opening', at: '2026-01-01T00:00:04.000Z', target: TARGET, jobId, identity: owner.name },
    { event: 'created', at: '2026-01-01T00:00:04.050Z', target: TARGET, embedded: false, jobId, identity: owner.name },
    { event: 'reported', at: '2026-01-01T00:00:05.000Z', target: TARGET, jobId, identity: owner.name },
    { event: 'created', at: '2026-01-01T00:00:06.000Z', target: TARGET, embedded: false, jobId: '44444444-4444-4444-8444-444444444444', identity: owner.name },
    { event: 'opening', at: '2026-01-01T00:00:06.100Z', target: TARGET, jobId: '44444444-4444-4444-8444-444444444444', identity: owner.name },
    {
      event: 'settled',
      at: '2026-01-01T00:00:07.100Z',
      target: TARGET,
      jobId: '44444444-4444-4444-8444-444444444444',
      identity: owner.name,
      credits: 0.033333,
    },
    // A stop that said it billed 0: stated, not silent.
    { event: 'created', at: '2026-01-01T00:00:07.500Z', target: TARGET, embedded: false, jobId: '66666666-6666-4666-8666-666666666666', identity: owner.name },
    { event: 'opening', at: '2026-01-01T00:00:07.600Z', target: TARGET, jobId: '66666666-6666-4666-8666-666666666666', identity: owner.name },
    { event: 'reported', at: '2026-01-01T00:00:07.700Z', target: TARGET, jobId: '66666666-6666-4666-8666-666666666666', identity: owner.name, stated: true },
    // Priced by the account: a settlement, not one more answer.
    { event: 'created', at: '2026-01-01T00:00:08.000Z', target: TARGET, embedded: false, jobId: '55555555-5555-4555-8555-555555555555', identity: owner.name },
    { event: 'opening', at: '2026-01-01T00:00:08.100Z', target: TARGET, jobId: '55555555-5555-4555-8555-555555555555', identity: owner.name },
    { event: 'reported', at: '2026-01-01T00:00:09.100Z', target: TARGET, jobId: '55555555-5555-4555-8555-555555555555', identity: owner.name },
    { event: 'priced', at: '2026-01-01T00:00:10.100Z', target: TARGET, jobId: '55555555-5555-4555-8555-555555555555', identity: owner.name, credits: 0.033333 },
  ];
  writeFileSync(ledger.file, `${lines.map((line) => JSON.stringify(line)).join('\n')}\n`);
  const spending = ledger.spending(TARGET, owner.name);
  assert.deepEqual(spending.silent, [
    { jobId, lifeMs: 2_002, reports: 2 },
    { jobId, lifeMs: 1_002, reports: 1 },
  ]);
  assert.deepEqual(
    spending.settlements.map(({ settled, reports }) => [settled.length, reports]),
    [
      [1, 1],
      [1, 1],
    ],
  );
});

test('a cap that refused a team empty-handed is asked again: still refused for a cap, the slot is kept; a session opened, it was freed late; a rate refusal tells neither', async () => {
  const team = (name: string) => ({ name }) as Identity;
  const teams = [team('owner team'), team('foreign team'), team('burst team'), team('quiet team')];
  // Raised long enough ago for each but the last, which never met the cap.
  const flags = new Map(teams.slice(0, 3).map((one) => [capHeldFlag(one), { what: `${one.name} refused`, at: Date.now() - 30_000 }]));
  const api = { coordination: { readShared: (name: string) => flags.get(name) }, signal: undefined } as unknown as Client;
  const answer = (status: number, refusal?: Answer['refusal']) =>
    ({
      method: 'POST',
      path: '/v2/scrape/x/interact',
      status,
      headers: {},
      text: '',
      body: undefined,
      sentAt: 0,
      receivedAt: 0,
      attempts: 1,
      refusal,
    }) as Answer;
  const asked: string[] = [];
  const held = await capsHeld(api, teams, true, async (as) => {
    asked.push(as.name);
    return as.name === 'owner team' ? answer(429, { kind: 'cap' }) : as.name === 'foreign team' ? answer(200) : answer(429, { kind: 'rate' });
  });
  assert.deepEqual(asked, ['owner team', 'foreign team', 'burst team']);
  assert.equal(held.kept.length, 1);
  assert.match(held.kept[0], /^owner team refused; 30 s later, with every session of the run stopped, an interact that would open one answered/);
  assert.match(held.freed[0], /^foreign team refused/);
  assert.match(held.untold[0], /^burst team refused/);
  // Another client may hold the team's sessions: nothing is asked, nothing told.
  asked.length = 0;
  const shared = await capsHeld(api, teams, false, async () => answer(200));
  assert.deepEqual([asked, shared.kept, shared.freed, shared.untold.length], [[], [], [], 3]);
});

test('the most sessions surely live at once run from an interact answered 200 to the sending of its stop; a cap below them, shown one after the other, fails cap-kept', async () => {
  const ledger = new Ledger(path.join(tempDir('ledger-'), 'ledger.jsonl'));
  const at = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms).toISOString();
  const life = (jobId: string, live: number, sent: number, identity = owner.name) => [
    { event: 'created', at: at(live - 1), target: TARGET, embedded: false, jobId, identity },
    { event: 'live', at: at(live), target: TARGET, jobId, identity },
    { event: 'ended', at: at(sent + 5), target: TARGET, jobId, identity, status: 200, sent: at(sent) },
  ];
  const jobs = ['a', 'b', 'c', 'd', 'e'].map((letter) => `${letter.repeat(8)}-1111-4111-8111-111111111111`);
  const entries = [
    ...life(jobs[0], 0, 100),
    ...life(jobs[1], 10, 100),
    ...life(jobs[2], 20, 100),
    // Its stop was sent as the fourth went live: never live together.
    ...life(jobs[3], 100, 200),
    // Another team's session counts for that team alone.
    ...life(jobs[4], 30, 90, 'foreign team'),
  ].sort((x, y) => x.at.localeCompare(y.at));
  writeFileSync(ledger.file, `${entries.map((entry) => JSON.stringify(entry)).join('\n')}\n`);
  const peak = ledger.mostLive(TARGET, owner.name);
  assert.deepEqual([peak.count, peak.jobs], [3, jobs.slice(0, 3)]);
  assert.equal(ledger.mostLive(TARGET, 'foreign team').count, 1);

  const answer = (status: number, text: string) => ({ status, text, headers: {}, method: 'POST', path: '/v2/scrape/x/interact' }) as unknown as Answer;
  const capped = answer(429, '{"success":false,"error":"Concurrency limit exceeded: at most 2 browser sessions at once."}');
  const opens = (...answers: Answer[]) => {
    const left = [...answers];
    return async () => left.shift()!;
  };
  const below = await capBelowPeak(opens(answer(200, '{}'), answer(200, '{}'), capped, capped), 3, 1500);
  assert.deepEqual(below && 'refused' in below && below.live, 2);
  assert.throws(
    () => runCheck(judge.capKeptAllRun(peak, 2, `sessions opened one after the other were refused for a cap once 2 were live (${summary(capped)})`)),
    /refused for a cap once 2 were live[\s\S]*held 3 live at once[\s\S]*got past the cap/,
  );
  assert.doesNotThrow(() => runCheck(judge.capKeptAllRun(peak, 3, 'the target states a cap of 3 live sessions')));
  assert.equal(await capBelowPeak(opens(answer(200, '{}'), answer(200, '{}'), answer(200, '{}')), 3), undefined, 'each opened: any cap is above');
  // A slot released late: the refusal asked again opens.
  assert.equal(
    await capBelowPeak(opens(answer(200, '{}'), capped, answer(200, '{}'), answer(200, '{}')), 3, 1500),
    undefined,
    'a late release is no cap below',
  );
  const rate = await capBelowPeak(opens(answer(429, '{"success":false,"error":"Rate limit exceeded"}')), 3);
  assert.match(rate && 'untold' in rate ? rate.untold : '', /number 1 was answered [^\n]*429[\s\S]*not a cap's refusal in words/);
});
