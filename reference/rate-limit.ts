/**
 * Fixed-window limiter: at most `limit` requests per `windowMs` for each key (a team, or a
 * client address when unauthenticated). A window starts with the first request of a key.
 */
export interface RateLimit {
  limit: number;
  windowMs: number;
}

export type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

export function createRateLimiter({ limit, windowMs }: RateLimit, clock: () => number) {
  const windows = new Map<string, { start: number; count: number }>();
  return function take(key: string): RateDecision {
    const now = clock();
    let window = windows.get(key);
    if (!window || now - window.start >= windowMs) {
      if (windows.size > 10_000) windows.clear();
      window = { start: now, count: 0 };
      windows.set(key, window);
    }
    window.count += 1;
    if (window.count <= limit) return { allowed: true };
    const retryAfterSeconds = Math.max(1, Math.ceil((window.start + windowMs - now) / 1000));
    return { allowed: false, retryAfterSeconds };
  };
}
