/** Rate limits as the run knows them: a limit per window, for one of the target's limiters. */

export const LIMITERS = ['scrape', 'interact', 'account'] as const;
export type Limiter = (typeof LIMITERS)[number];

export interface Rate {
  limit: number;
  windowMs: number;
  /** How the run knows it: stated, or what taught it. */
  from: string;
}

/** `10/min`, `100/min`, `5/s`, `10/5s`, `600/h`: a limit and its window. */
export function parseRate(text: string): Omit<Rate, 'from'> | undefined {
  const match = /^\s*(\d+)\s*\/\s*(\d*)\s*(ms|s|min|h)\s*$/.exec(text);
  if (!match || Number(match[1]) < 1) return undefined;
  const unit = { ms: 1, s: 1000, min: 60_000, h: 3_600_000 }[match[3] as 'ms' | 's' | 'min' | 'h'];
  const windowMs = Number(match[2] || 1) * unit;
  return windowMs >= 1 ? { limit: Number(match[1]), windowMs } : undefined;
}

export function describeRate({ limit, windowMs }: Omit<Rate, 'from'>): string {
  const per = windowMs === 60_000 ? 'a minute' : windowMs === 1000 ? 'a second' : windowMs === 3_600_000 ? 'an hour' : `per ${windowMs / 1000} s`;
  return `${limit} request(s) ${per}`;
}
