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

/** Checks the billing fields of a 200 stop body; returns why it could not when they are absent. */
export function expectBilledFor(body: JsonBody, interval: Interval, settings: Settings): { notVerifiable?: string } {
  const tolerance = settings.durationToleranceMs;
  const lo = +(interval.lo - tolerance).toFixed(1);
  const hi = +(interval.hi + tolerance).toFixed(1);
  const duration = body?.sessionDurationMs;
  if (duration !== undefined) {
    const where = `sessionDurationMs ${duration} must lie in the measured interval [${lo}, ${hi}] ms ` +
      `(${interval.lo.toFixed(1)}..${interval.hi.toFixed(1)} ms measured, ±${tolerance} ms tolerance)`;
    expect(duration, where).toBeGreaterThanOrEqual(lo);
    expect(duration, where).toBeLessThanOrEqual(hi);
  }
  const credits = body?.creditsBilled;
  if (credits === undefined) {
    return { notVerifiable: 'the stop result has no creditsBilled: billing cannot be checked against the measured duration' };
  }
  const { min, max } = duration !== undefined ? proratedRange(duration, duration) : proratedRange(Math.max(0, lo), hi);
  const low = +(min - settings.creditTolerance).toFixed(6);
  const high = +(max + settings.creditTolerance).toFixed(6);
  const basis = duration !== undefined ? `sessionDurationMs ${duration}` : `the measured ${lo}..${hi} ms`;
  const why = `creditsBilled ${credits} must be 2 credits/minute prorated by the second for ${basis}: ` +
    `between ${min.toFixed(6)} and ${max.toFixed(6)} (±${settings.creditTolerance} for rounding)`;
  expect(credits, why).toBeGreaterThanOrEqual(low);
  expect(credits, why).toBeLessThanOrEqual(high);
  return {};
}
