import { businessDay } from '../cards/model.js';
import type { ProgramConfig } from '../config.js';
import type { TxCtx } from '../context.js';
import { invalid } from '../errors.js';
import { parseDate } from '../holders/create.js';

/** What every ledger verb is given. */
export interface LedgerCtx extends TxCtx {
  merchantId: string;
  program: ProgramConfig;
}

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

/** A part of an amount in another currency, proportionally, rounded half up. */
export function prorate(total: number, part: number, whole: number): number {
  if (whole === 0) return 0;
  return Number((BigInt(total) * BigInt(part) * 2n + BigInt(whole)) / (BigInt(whole) * 2n));
}
