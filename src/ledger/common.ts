import { businessDay, loadCard } from '../cards/model.js';
import type { ProgramConfig } from '../config.js';
import type { TxCtx } from '../context.js';
import { DomainError, invalid } from '../errors.js';
import { parseDate } from '../holders/create.js';
import { toMajor, toMinor } from '../money/currency.js';
import { loadTrade } from '../trades/store.js';
import { TradeStatus, TradeType } from '../trades/types.js';

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

/**
 * The authorization a clearing or a reversal acts on: it must still hold funds (2730 otherwise).
 * Returns it, its card, and the amount asked for: all that is held unless less is given (2723 if more).
 */
export async function heldAuthorization(
  ctx: LedgerCtx,
  input: { tradeId: string; amount?: number | undefined },
  action: 'cleared' | 'reversed',
) {
  const auth = await loadTrade(ctx.tx, ctx.merchantId, input.tradeId);
  if (auth.trade_type !== TradeType.authorization || auth.trade_status !== TradeStatus.success || auth.held <= 0) {
    throw new DomainError('tradeState', `tradeId: only an authorization that still holds funds can be ${action}`);
  }
  const card = await loadCard(ctx.tx, ctx.merchantId, auth.card_id);
  const amount = input.amount === undefined ? auth.held : toMinor(input.amount, card.currency);
  if (amount > auth.held) {
    throw new DomainError('incorrectAmount', `amount: at most the ${toMajor(auth.held, card.currency)} ${card.currency} still held`);
  }
  return { auth, card, amount };
}
