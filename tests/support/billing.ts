/**
 * Billing checks against durations the suite measured around its own requests.
 *
 * The session exists from some moment inside the interact call until some moment inside the
 * stop call, so its true duration lies in [stop sent - interact answered, stop answered -
 * interact sent]. `sessionDurationMs` must lie in that interval widened by
 * DURATION_TOLERANCE_MS on each side (server clock granularity and rounding), and
 * `creditsBilled` must be 2 credits per minute for that duration prorated by the second:
 * between floor(seconds) x 2/60 and ceil(seconds) x 2/60 (per-second floor, ceil, nearest or
 * exact are all accepted), widened by 0.005 credits for rounding in JSON.
 */
import { expect, type Exchange, type JsonBody, type Session } from './fixtures';
import type { Settings } from './config';

export const CREDITS_PER_MINUTE = 2;

/**
 * Pause between a refused stop and the owner's stop. A session that the refused request ended
 * anyway then reports a duration at least this much shorter than the measured interval.
 */
export const REFUSAL_GAP_MS = 250;

export interface Interval {
  lo: number;
  hi: number;
}

export function measuredInterval(session: Session, stop: Exchange): Interval {
  return { lo: stop.sentAt - session.created.receivedAt, hi: stop.receivedAt - session.created.sentAt };
}

export function proratedRange(loMs: number, hiMs: number): { min: number; max: number } {
  const perSecond = CREDITS_PER_MINUTE / 60;
  return { min: Math.floor(loMs / 1000) * perSecond, max: Math.ceil(hiMs / 1000) * perSecond };
}

/** sessionDurationMs, when given, must lie in the measured interval widened by the tolerance. */
export function expectDurationWithin(body: JsonBody, interval: Interval, settings: Settings): void {
  const duration = body?.sessionDurationMs;
  if (duration === undefined) return;
  const tolerance = settings.durationToleranceMs;
  const lo = +(interval.lo - tolerance).toFixed(1);
  const hi = +(interval.hi + tolerance).toFixed(1);
  const where = `sessionDurationMs ${duration} must lie in the measured interval [${lo}, ${hi}] ms ` +
    `(${interval.lo.toFixed(1)}..${interval.hi.toFixed(1)} ms measured, ±${tolerance} ms tolerance)`;
  expect(duration, where).toBeGreaterThanOrEqual(lo);
  expect(duration, where).toBeLessThanOrEqual(hi);
}

/** creditsBilled must be 2 credits/minute prorated by the second; returns why not when it is absent. */
export function expectCreditsFor(body: JsonBody, interval: Interval, settings: Settings): { notVerifiable?: string } {
  const credits = body?.creditsBilled;
  if (credits === undefined) {
    return { notVerifiable: 'the stop result has no creditsBilled: billing cannot be checked against the measured duration' };
  }
  const duration = body?.sessionDurationMs;
  const lo = Math.max(0, interval.lo - settings.durationToleranceMs);
  const hi = interval.hi + settings.durationToleranceMs;
  const { min, max } = typeof duration === 'number' ? proratedRange(duration, duration) : proratedRange(lo, hi);
  const basis = typeof duration === 'number' ? `sessionDurationMs ${duration}` : `the measured ${lo.toFixed(1)}..${hi.toFixed(1)} ms`;
  const why = `creditsBilled ${credits} must be 2 credits/minute prorated by the second for ${basis}: ` +
    `between ${min.toFixed(6)} and ${max.toFixed(6)} (±${settings.creditTolerance} for rounding)`;
  expect(credits, why).toBeGreaterThanOrEqual(+(min - settings.creditTolerance).toFixed(6));
  expect(credits, why).toBeLessThanOrEqual(+(max + settings.creditTolerance).toFixed(6));
  return {};
}
