import type { Static } from 'typebox';
import type { CardRow } from '../cards/model.js';
import { DomainError } from '../errors.js';
import { toMajor, toMinor } from '../money/currency.js';
import type { OperationInput } from '../operation-input.js';
import type { TradeRow } from '../trades/record.js';
import { TradeStatus, type TradeStatusValue, TradeType } from '../trades/types.js';
import { allocatePart } from './amounts.js';
import { tradeRow } from './book.js';
import { settlingBusinessDate } from './business-date.js';
import type { LedgerCtx } from './context.js';
import { lockedTrade } from './locks.js';
import type { ClearBody } from './schemas.js';
import type { NewTrade } from './trade-rows.js';

// A part of what an authorization holds, cleared (settle.ts) or reversed (cancel.ts).

/** What a clearing and a reversal are given (their bodies are one schema): the authorization, and how much of what it holds. */
export type HeldPartInput = OperationInput<Static<typeof ClearBody>>;

/**
 * The authorization a clearing or a reversal acts on: it must still hold funds (2730 otherwise).
 * Returns it, its card (locked), and the amount asked for: all that is held unless less is given
 * (2723 if more).
 */
export async function heldAuthorization(ctx: LedgerCtx, input: HeldPartInput, action: 'cleared' | 'reversed') {
  const { trade: auth, card } = await lockedTrade(ctx, input.tradeId);
  if (auth.trade_type !== TradeType.authorization || auth.trade_status !== TradeStatus.success || auth.held <= 0) {
    throw new DomainError('tradeState', `tradeId: only an authorization that still holds funds can be ${action}`);
  }
  const amount = input.amount === undefined ? auth.held : toMinor(input.amount, card.currency);
  if (amount > auth.held) {
    throw new DomainError('incorrectAmount', `amount: at most the ${toMajor(auth.held, card.currency)} ${card.currency} still held`);
  }
  return { auth, card, amount };
}

/**
 * The record of a part of an authorization (a clearing's payment, a reversal): its amount, the
 * transaction amount's share of it (or the network's own figure), the authorization's code and
 * remark, dated on the request's business date (not before the authorization's).
 */
export function heldPartRow(
  ctx: LedgerCtx,
  part: {
    auth: TradeRow;
    card: CardRow;
    amount: number;
    businessDate: string | undefined;
    /** The transaction amount as the card network gave it (the link's clearing, field 4); else the allocated share. */
    txnAmount?: number | undefined;
  },
  kind: { type: number; status: TradeStatusValue; fee?: number },
): NewTrade {
  const { auth, card, amount } = part;
  return tradeRow(
    {
      card,
      type: kind.type,
      status: kind.status,
      amount,
      ...(kind.fee === undefined ? {} : { fee: kind.fee }),
      currencyTxn: auth.currency_txn,
      txnAmount: part.txnAmount ?? allocatePart(auth.txn_amount, auth.amount - auth.held, amount, auth.amount),
      businessDate: settlingBusinessDate(part.businessDate, ctx.now, auth),
      authCode: auth.auth_code,
      remark: auth.remark,
      originalId: auth.id,
    },
    ctx.now,
  );
}
