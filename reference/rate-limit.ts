/**
 * Fixed-window limiter: at most `limit` requests per `windowMs` for each key (a team, or a
 * client address when unauthenticated). A window starts with the first request of a key.
 * `perTeam` gives some teams a plan of their own, limit and window, as plans differ (keys
 * `<team id>:<group>`).
 */
export interface RateLimit {
  limit: number;
  windowMs: number;
  perTeam?: Record<string, { limit: number; windowMs: number }>;
}

export type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

export function createRateLimiter({ limit, windowMs, perTeam }: RateLimit, clock: () => number) {
  const windows = new Map<string, { start: number; count: number; limit: number; windowMs: number }>();
  return function take(key: string): RateDecision {
    const now = clock();
    let window = windows.get(key);
    if (!window || now - window.start >= window.windowMs) {
      if (windows.size > 10_000) windows.clear();
      window = { start: now, count: 0, ...(perTeam?.[key.slice(0, key.indexOf(':'))] ?? { limit, windowMs }) };
      windows.set(key, window);
    }
    window.count += 1;
    if (window.count <= window.limit) return { allowed: true };
    const retryAfterSeconds = Math.max(1, Math.ceil((window.start + window.windowMs - now) / 1000));
    return { allowed: false, retryAfterSeconds };
  };
}
