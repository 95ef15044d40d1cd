/**
 * Billing checks against durations the suite measured around its own requests.
 *
 * A session exists from some moment inside the interact call that created it until some moment
 * inside the stop call, so its true duration lies in [stop sent - interact answered, stop
 * answered - interact sent]. `sessionDurationMs` must lie in that interval widened by
 * DURATION_TOLERANCE_MS on each side (server clock granularity and rounding); where the target's
 * known-deviations file declares its own clock (`clock.resolutionMs`), by one step of it more and
 * nothing wider. `creditsBilled` must be 2 credits per minute for that duration prorated by the
 * second: between floor(seconds) x 2/60 and ceil(seconds) x 2/60 (per-second floor, ceil, nearest
 * or exact are all accepted), widened by 0.005 credits for rounding in JSON.
 */

import { expect } from '../checks/expect';
import type { BillingRule } from '../config/deviations';
import { DeclaredBehaviour } from '../config/errors';
import type { Settings } from '../config/settings';
import type { Answer, Charged, JsonBody } from './answer';

export const CREDITS_PER_MINUTE = 2;

export interface Interval {
  lo: number;
  hi: number;
}

export type Tolerances = Pick<Settings, 'durationToleranceMs' | 'creditTolerance'> & Partial<Pick<Settings, 'declaredClock'>>;

/** The bounds the billing checks judge with, and nothing else of the settings (a reproduction carries them). */
export function boundsOf(settings: Settings): Tolerances & Pick<Settings, 'declaredBilling'> {
  const { durationToleranceMs, creditTolerance, declaredClock, declaredBilling } = settings;
  return { durationToleranceMs, creditTolerance, declaredClock, declaredBilling };
}

/** One step of the target's declared clock, or 0: how far a duration it reports may lie past the measured interval. */
export const clockStepMs = (settings: Partial<Pick<Settings, 'declaredClock'>>) => settings.declaredClock?.resolutionMs ?? 0;

export function measuredInterval(session: { created: Answer }, stop: Answer): Interval {
  return { lo: stop.sentAt - session.created.receivedAt, hi: stop.receivedAt - session.created.sentAt };
}

/** The measured interval widened by the tolerance and a step of the target's declared clock: the durations the target may bill. */
export function widened(interval: Interval, settings: Tolerances): [number, number] {
  const slack = settings.durationToleranceMs + clockStepMs(settings);
  return [interval.lo - slack, interval.hi + slack];
}

export const describeInterval = (interval: Interval) => `${interval.lo.toFixed(1)}..${interval.hi.toFixed(1)} ms`;

export function proratedRange(loMs: number, hiMs: number): { min: number; max: number } {
  const perSecond = CREDITS_PER_MINUTE / 60;
  return { min: Math.floor(Math.max(0, loMs) / 1000) * perSecond, max: Math.ceil(hiMs / 1000) * perSecond };
}

/**
 * Where sessionDurationMs lies against the measured interval: undefined within it (widened by the
 * tolerance), or else the declared clock's reason and a sentence when one step of that clock more
 * admits it. Anything else throws, saying both bounds.
 */
export function durationVerdict(body: JsonBody, interval: Interval, settings: Tolerances): { message: string; reason: string } | undefined {
  const duration = body?.sessionDurationMs;
  if (duration === undefined) return undefined;
  const tolerance = settings.durationToleranceMs;
  const step = clockStepMs(settings);
  const lo = +(interval.lo - tolerance).toFixed(1);
  const hi = +(interval.hi + tolerance).toFixed(1);
  const where = `sessionDurationMs ${JSON.stringify(duration)} must lie in the measured interval [${lo}, ${hi}] ms (${describeInterval(interval)} measured, ±${tolerance} ms tolerance)`;
  expect(typeof duration, where).toBe('number');
  if (duration >= lo && duration <= hi) return undefined;
  const declared = settings.declaredClock;
  const [wideLo, wideHi] = [+(lo - step).toFixed(1), +(hi + step).toFixed(1)];
  // A clock of whole seconds (the hosted service's) is a deviation to declare, not a fault to hide: the message says how.
  const wholeSeconds = !declared && typeof duration === 'number' && duration % 1000 === 0 && duration > lo - 1000 && duration < hi + 1000;
  const hint = wholeSeconds
    ? `; it is a whole number of seconds within a second of that interval, as from a clock that counts whole seconds (the hosted service's does): if this target's is meant to, declare it in a known-deviations file ("clock": {"resolutionMs": 1000}, docs/known-deviations.md)`
    : '';
  const widened = declared
    ? `${where}; the target's declared clock counts in steps of ${step} ms, so it may lie one step further, in [${wideLo}, ${wideHi}] ms`
    : `${where}${hint}`;
  expect(duration, widened).toBeGreaterThanOrEqual(wideLo);
  expect(duration, widened).toBeLessThanOrEqual(wideHi);
  return { message: `${widened}, and it does`, reason: declared!.reason };
}

/** sessionDurationMs, when given, must lie in the measured interval widened by the tolerance (and one step of a declared clock: its declared behaviour). */
export function expectDurationWithin(body: JsonBody, interval: Interval, settings: Tolerances): void {
  const declared = durationVerdict(body, interval, settings);
  if (declared) throw new DeclaredBehaviour(declared.message, declared.reason);
}

/** What a billing rule charges for a duration; monotone, so an interval of durations gives an interval of charges. */
export function chargeUnder(rule: BillingRule, durationMs: number): number {
  const round = (value: number, step: number) => {
    const units = value / step;
    // A hair of slack against floating point: 3.0000000001 minutes of 2 credits is 6, not 7 when rounding up.
    const whole = rule.rounding === 'up' ? Math.ceil(units - 1e-9) : rule.rounding === 'down' ? Math.floor(units + 1e-9) : Math.round(units);
    return whole * step;
  };
  const ms = rule.durationUnitMs ? round(Math.max(0, durationMs), rule.durationUnitMs) : Math.max(0, durationMs);
  const credits = (ms / 60_000) * rule.creditsPerMinute;
  return Math.max(rule.minimumCredits ?? 0, rule.creditStep ? round(credits, rule.creditStep) : credits);
}

export function describeRule(rule: BillingRule): string {
  const unit = rule.durationUnitMs ? `, the duration rounded ${rule.rounding} to ${rule.durationUnitMs} ms` : '';
  const step = rule.creditStep ? `, the charge rounded ${rule.rounding} to a multiple of ${rule.creditStep}` : '';
  return `${rule.creditsPerMinute} credits/minute${unit}${step}${rule.minimumCredits ? `, at least ${rule.minimumCredits}` : ''}`;
}

/**
 * creditsBilled must be 2 credits/minute prorated by the second, for sessionDurationMs (widened by
 * the tolerance: a server may bill its exact clock and report a coarser one) or else the measured
 * interval. With a billing rule declared for the target, a charge outside the specification's range
 * that the declared rule gives for the same durations is the declared behaviour (DeclaredBehaviour);
 * a charge that neither gives fails, and so does one only the specification gives (the declaration
 * is stale). Each message says what both expect.
 */
export function expectCreditsFor(body: JsonBody, interval: Interval, settings: Tolerances & Pick<Settings, 'declaredBilling'>, charged?: Charged): void {
  // A stop result without its charge is held to what the account moved by around the stop, to the account's precision.
  const byAccount = body?.creditsBilled === undefined && charged && 'credits' in charged ? charged : undefined;
  const credits = byAccount ? byAccount.credits : body?.creditsBilled;
  const creditTolerance = Math.max(settings.creditTolerance, byAccount?.tolerance ?? 0);
  const duration = body?.sessionDurationMs;
  const tolerance = settings.durationToleranceMs;
  // The target bills its own clock: the duration it reports, or else the measured interval widened by a step of its declared clock.
  const [lo, hi] = typeof duration === 'number' ? [duration - tolerance, duration + tolerance] : widened(interval, settings);
  const { min, max } = proratedRange(lo, hi);
  const basis = `${typeof duration === 'number' ? `sessionDurationMs ${duration}` : 'the measured interval'} ±${tolerance} ms, ${Math.max(0, lo).toFixed(1)}..${hi.toFixed(1)} ms`;
  const within = (low: number, high: number) =>
    typeof credits === 'number' && credits >= +(low - creditTolerance).toFixed(6) && credits <= +(high + creditTolerance).toFixed(6);
  const what = byAccount ? `The account's charge around the stop, ${credits} (its answer gives no creditsBilled),` : `creditsBilled ${JSON.stringify(credits)}`;
  let why = `${what} must be 2 credits/minute prorated by the second for ${basis}: between ${min.toFixed(6)} and ${max.toFixed(6)} (±${creditTolerance} for rounding)`;
  const declared = settings.declaredBilling;
  if (declared) {
    const [low, high] = [chargeUnder(declared.rule, lo), chargeUnder(declared.rule, hi)];
    const under = `under the declared billing rule (${describeRule(declared.rule)}) it must be between ${low.toFixed(6)} and ${high.toFixed(6)}`;
    const [bySpecification, byRule] = [within(min, max), within(low, high)];
    if (byRule && !bySpecification) throw new DeclaredBehaviour(`${why}; ${under}, and it is`, declared.reason);
    if (byRule) return; // both agree at this duration
    why = bySpecification
      ? `${why}, and it is; but ${under}: the target bills as the specification says, so remove the billing declaration`
      : `${why}; ${under}`;
    expect(bySpecification ? 'per the specification only' : 'per neither', why).toBe('per the declared rule');
  }
  expect(typeof credits, why).toBe('number');
  expect(credits, why).toBeGreaterThanOrEqual(+(min - creditTolerance).toFixed(6));
  expect(credits, why).toBeLessThanOrEqual(+(max + creditTolerance).toFixed(6));
}

/**
 * Whether the owner's stop after a refusal proves that the session ran on through the refusal:
 * a duration covering the whole session, or a charge no session begun at the refusal could reach.
 * A bare `{"success": true}` proves nothing (a target may answer a repeat stop that way), so the
 * answer is then "not verifiable", never a pass. Against a declared clock, both the whole session
 * and a clock restarted at the refusal may be off by one of its steps; `declared` says when the
 * duration needed that step.
 */
export function expectSurvived(
  stop: Answer,
  session: { created: Answer },
  refusal: Answer,
  settings: Tolerances,
): { notVerifiable?: string; tooSlow?: true; declared?: { message: string; reason: string } } {
  const whole = measuredInterval(session, stop);
  const step = clockStepMs(settings);
  // The most a clock restarted at the refusal could give: a duration or charge within it proves nothing.
  const restartedHi = stop.receivedAt - refusal.sentAt + settings.durationToleranceMs + step;
  if (stop.body?.sessionDurationMs !== undefined) {
    const declared = durationVerdict(stop.body, whole, settings);
    const duration = stop.body.sessionDurationMs as number;
    if (duration > restartedHi) return declared ? { declared } : {};
    return {
      tooSlow: true,
      notVerifiable:
        `sessionDurationMs ${duration} fits the whole session (${describeInterval(whole)}${step ? `, ±${step} ms for the target's clock` : ''}) and a clock restarted at the refusal alike (at most ${restartedHi.toFixed(1)} ms): ` +
        'the exchanges took too long to tell a session that lived through the refusal from one restarted by it',
    };
  }
  // Without its charge in the answer, what the account moved by around the stop, to the account's precision.
  const byAccount = stop.body?.creditsBilled === undefined && stop.charged && 'credits' in stop.charged ? stop.charged : undefined;
  const credits = byAccount ? byAccount.credits : stop.body?.creditsBilled;
  const creditTolerance = Math.max(settings.creditTolerance, byAccount?.tolerance ?? 0);
  if (typeof credits === 'number') {
    const wholeMin = proratedRange(whole.lo - settings.durationToleranceMs - step, 0).min;
    const restartedMax = proratedRange(0, restartedHi).max;
    if (wholeMin > restartedMax + creditTolerance) {
      const what = byAccount ? `the account's charge around the stop, ${credits} (its answer gives no creditsBilled),` : `creditsBilled ${credits}`;
      expect(credits, `${what} must cover the whole session (${describeInterval(whole)}): at least ${wholeMin.toFixed(6)}`).toBeGreaterThanOrEqual(
        +(wholeMin - creditTolerance).toFixed(6),
      );
      return {};
    }
  }
  const unpriced = stop.charged && 'unknown' in stop.charged ? `; the account could not price it: ${stop.charged.unknown}` : '';
  return {
    notVerifiable:
      "the owner's stop answered 200 without a sessionDurationMs, and without a charge only a session that lived through the refusal could reach: " +
      `a refusal that ended the session cannot be told apart from one that did not${unpriced}`,
  };
}
