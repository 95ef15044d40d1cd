/**
 * Billing rule of the reference: 2 credits per browser minute, prorated by the second.
 *
 * - Every started second counts: billed seconds = ceil(durationMs / 1000). 0 ms bills 0,
 *   1 ms bills 1 s, 1000 ms bills 1 s, 1001 ms bills 2 s.
 * - Credits = billed seconds x 2 / 60, written to JSON rounded half-up to 6 decimal places
 *   (1 s -> 0.033333, 61 s -> 2.033333, 1 h -> 120).
 */
export const CREDITS_PER_MINUTE = 2;

export function creditsFor(durationMs: number): number {
  const billedSeconds = Math.ceil(Math.max(0, durationMs) / 1000);
  return Math.round((billedSeconds * CREDITS_PER_MINUTE * 1e6) / 60) / 1e6;
}
