import type { SpendInterval } from './schemas.js';

/**
 * The UTC calendar interval a moment falls in: its start, and its end (the next one's start).
 * Days start at 00:00 UTC, weeks on Monday, months on the 1st, years on 1 January;
 * `all_time` is one interval from 0 to never (end null), as is `per_authorization`, which counts nothing.
 */
export function period(interval: SpendInterval, at: number): { start: number; end: number | null } {
  const d = new Date(at);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  const day = d.getUTCDate();
  switch (interval) {
    case 'daily':
      return { start: Date.UTC(y, m, day), end: Date.UTC(y, m, day + 1) };
    case 'weekly': {
      // getUTCDay: 0 is Sunday; the ISO week starts on Monday.
      const back = (d.getUTCDay() + 6) % 7;
      return { start: Date.UTC(y, m, day - back), end: Date.UTC(y, m, day - back + 7) };
    }
    case 'monthly':
      return { start: Date.UTC(y, m, 1), end: Date.UTC(y, m + 1, 1) };
    case 'yearly':
      return { start: Date.UTC(y, 0, 1), end: Date.UTC(y + 1, 0, 1) };
    default:
      return { start: 0, end: null };
  }
}
