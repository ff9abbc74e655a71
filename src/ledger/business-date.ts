import { businessDay } from '../cards/model.js';
import { parseDate } from '../dates.js';
import { invalid } from '../errors.js';

/**
 * The business date of a record: today (UTC) unless a sandbox simulation places it on another day
 * (decisions §6). Not later than tomorrow, to allow for time zones.
 */
export function resolveBusinessDate(input: string | undefined, now: number): string {
  if (input === undefined) return businessDay(now);
  if (!parseDate(input)) throw invalid('businessDate', 'must be a real date written yyyy-MM-dd');
  if (input > businessDay(now + 86_400_000)) throw invalid('businessDate', 'must not be later than tomorrow');
  if (input < '2000-01-01') throw invalid('businessDate', 'must not be before 2000-01-01');
  return input;
}

/**
 * The business date of a record that settles another (a clearing, reversal, refund or void): not
 * earlier than the original's, so a date-range list never shows the settlement without what it
 * settles (1002).
 */
export function settlingBusinessDate(input: string | undefined, now: number, original: { business_date: string }): string {
  const date = resolveBusinessDate(input, now);
  if (date < original.business_date) {
    throw invalid('businessDate', `must not be earlier than ${original.business_date}, the business date of the record it settles`);
  }
  return date;
}
