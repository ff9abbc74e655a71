import { type CardRow, maskedCardNo } from '../cards/model.js';
import { newId } from '../db/ids.js';
import { type TradeRecord, toTradeRecord } from '../trades/record.js';
import { TradeType } from '../trades/types.js';
import { claimAuthCode } from './auth-codes.js';
import type { LedgerCtx } from './context.js';
import { Account, type FundingMovement, type Leg, moveCardBalances, moveMerchantFunding, postEntry } from './journal.js';
import { insertTrade, type KnownCard, type NewTrade, tradeEvent } from './trade-rows.js';

export interface TradeSpec {
  /** The record's id when it was fixed beforehand (an authorization its endpoint was told of). */
  id?: string;
  card: CardRow;
  type: number;
  status: number;
  amount: number;
  fee?: number;
  currencyTxn?: string;
  txnAmount?: number;
  businessDate: string;
  /** The code of the record this one follows (a clearing's authorization); left out, book() draws one unique to the card. */
  authCode?: string;
  remark?: string;
  originalId?: string;
  held?: number;
}

/** What a trade's auth_code is until book() draws and claims its card's new code (src/ledger/auth-codes.ts). */
export const TO_DRAW = '';

/** A trade row from its essentials; transaction currency and amount default to the card's. */
export function tradeRow(spec: TradeSpec, now: number): NewTrade {
  return {
    id: spec.id ?? newId('trd'),
    merchant_id: spec.card.merchant_id,
    card_id: spec.card.id,
    trade_type: spec.type,
    trade_status: spec.status,
    currency: spec.card.currency,
    amount: spec.amount,
    fee: spec.fee ?? 0,
    currency_txn: spec.currencyTxn ?? spec.card.currency,
    txn_amount: spec.txnAmount ?? Math.abs(spec.amount),
    business_date: spec.businessDate,
    auth_code: spec.authCode ?? TO_DRAW,
    remark: spec.remark ?? '',
    original_id: spec.originalId ?? null,
    held: spec.held ?? 0,
    refunded: 0,
    created_at: now,
  };
}

const CARD_ACCOUNT = /^card:(.+):(available|held|debt)$/;
const MERCHANT_FUNDING = /^merchant:(.+):funding$/;

/**
 * Books a trade that moves `amount` on one card from one account to another (an adjustment from
 * settlement, a fee to the program), and answers its record.
 */
export async function bookTransfer(
  ctx: LedgerCtx,
  card: CardRow,
  trade: NewTrade,
  move: { from: string; to: string; amount: number },
): Promise<TradeRecord> {
  await book(
    ctx,
    card.currency,
    [
      { account: move.from, amount: -move.amount },
      { account: move.to, amount: move.amount },
    ],
    [trade],
  );
  return toTradeRecord(trade, maskedCardNo(card));
}

/**
 * Books one money movement: the card balances first, by card id (so an insufficient balance fails
 * before anything is written), then the balanced journal entry, the listed trades and their
 * callbacks, then merchant funding balances (the last rows locked, in the one lock order of
 * docs/architecture.md, and the hottest: one per merchant), all in the caller's transaction.
 */
export async function book(
  ctx: LedgerCtx,
  currency: string,
  given: Leg[],
  trades: NewTrade[],
  /** Fields added to the first trade's `trade` callback (an authorization's acceptor and decision). */
  eventExtra?: Record<string, unknown>,
  /**
   * A movement with no trade record (a dispute's, src/ledger/dispute-money.ts): the id its journal
   * entry is traced by, and what its funding statement line says.
   */
  origin?: { id: string; kind: FundingMovement['kind']; cardId: string; tradeId: string | null },
  /** A card the verb has read under its lock already (its status and debt are final): not read again. */
  locked?: Pick<CardRow, 'id' | 'status' | 'merchant_id' | 'debt'>,
  /** What a trade of this card's callback needs, read with its lock (else read with the callback). */
  known?: KnownCard,
): Promise<string | null> {
  const { tx, now } = ctx;
  let legs = given;
  const { deltas, funding } = movesOf(legs);
  /** Merchants whose funding receives what a closed card released (a reversal, void or refund after the close). */
  const released = new Set<string>();
  for (const [cardId, delta] of [...deltas].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (delta.available > 0) {
      // The verb holds the card's row lock (lockCard), and a close takes it too, so what is read
      // here (the status, the debt) is final.
      const card =
        locked?.id === cardId
          ? locked
          : await tx.selectFrom('cards').select(['status', 'merchant_id', 'debt']).where('id', '=', cardId).executeTakeFirst();
      if (card) {
        const back = incoming(card, cardId, delta, legs);
        legs = back.legs;
        if (back.released > 0) {
          funding.set(card.merchant_id, (funding.get(card.merchant_id) ?? 0) + back.released);
          released.add(card.merchant_id);
        }
      }
    }
    if (delta.available !== 0 || delta.held !== 0 || delta.debt !== 0) await moveCardBalances(tx, cardId, delta, now);
  }
  const entryId = await postEntry(tx, { tradeId: trades[0]?.id ?? origin?.id ?? null, currency, now, legs });
  // A new code, unique on every card of the trades that need one (a transfer's two share it).
  const fresh = trades.filter((t) => t.auth_code === TO_DRAW);
  if (fresh.length > 0) {
    const code = await claimAuthCode(tx, [...new Set(fresh.map((t) => t.card_id))], fresh[0]?.id ?? '');
    for (const t of fresh) t.auth_code = code;
  }
  for (const [i, t] of trades.entries()) {
    await insertTrade(tx, t);
    await tradeEvent(ctx, t, i === 0 ? eventExtra : undefined, known?.card.id === t.card_id ? known : undefined);
  }
  // The funding balance last: every top-up of a merchant waits for this one row's lock, held from
  // here to the commit, so as few statements as possible come after it (measured on PostgreSQL: a
  // top-up 410 → see docs/architecture.md, "Round trips per operation"). An insufficient balance
  // (2726) rolls back what came before it in the transaction.
  const first = trades[0];
  for (const [merchantId, delta] of funding) {
    if (delta === 0) continue;
    await moveMerchantFunding(
      tx,
      merchantId,
      currency,
      delta,
      now,
      origin
        ? { kind: origin.kind, reference: origin.id, cardId: origin.cardId, tradeId: origin.tradeId }
        : {
            kind: movementKind(first?.trade_type, released.has(merchantId)),
            reference: first?.remark ?? '',
            cardId: first?.card_id ?? null,
            tradeId: first?.id ?? null,
          },
    );
  }
  return entryId;
}

/** What the legs move: each card's balances (by card id) and each merchant's funding (by merchant id). */
export function movesOf(legs: readonly Leg[]) {
  const deltas = new Map<string, { available: number; held: number; debt: number }>();
  const funding = new Map<string, number>();
  for (const leg of legs) {
    const f = MERCHANT_FUNDING.exec(leg.account);
    if (f?.[1]) funding.set(f[1], (funding.get(f[1]) ?? 0) + leg.amount);
    const m = CARD_ACCOUNT.exec(leg.account);
    if (!m?.[1]) continue;
    const d = deltas.get(m[1]) ?? { available: 0, held: 0, debt: 0 };
    if (m[2] === 'available') d.available += leg.amount;
    else if (m[2] === 'held') d.held += leg.amount;
    // The debt account sums to minus the debt: a leg of -x is x more owed.
    else d.debt -= leg.amount;
    deltas.set(m[1], d);
  }
  return { deltas, funding };
}

/**
 * Money coming to a card (`delta.available` > 0) under its lock: it pays the card's debt first
 * (decisions §12.7, left by forced posts: a top-up from the merchant's funding, a release, a refund),
 * the rest is available. A closed card keeps no money: what would come back to it (a reversal, void
 * or refund, a clearing's remainder, of what it authorized before it closed) goes on, in the same
 * journal entry, to its merchant's funding account (`released`). Moves `delta` to match the legs.
 */
export function incoming(
  card: { status: string; merchant_id: string; debt: number | string },
  cardId: string,
  delta: { available: number; held: number; debt: number },
  given: Leg[],
): { legs: Leg[]; released: number } {
  let legs = given;
  const own = Account.available(cardId);
  const cover = Math.min(delta.available, Number(card.debt ?? 0));
  if (cover > 0) {
    legs = [
      ...legs.filter((l) => l.account !== own),
      { account: Account.debt(cardId), amount: cover },
      { account: own, amount: delta.available - cover },
    ];
    delta.available -= cover;
    delta.debt -= cover;
  }
  let released = 0;
  if (card.status === 'closed' && delta.available > 0) {
    legs = [...legs.filter((l) => l.account !== own), { account: Account.merchantFunding(card.merchant_id), amount: delta.available }];
    released = delta.available;
    delta.available = 0;
  }
  return { legs, released };
}

/** What a movement of a merchant's funding account is, in its statement (docs/funding.md). */
export function movementKind(tradeType: number | undefined, release: boolean): FundingMovement['kind'] {
  if (release) return tradeType === TradeType.withdrawal ? 'withdrawalReturn' : tradeType === TradeType.fee ? 'fee' : 'release';
  if (tradeType === TradeType.topUp) return 'topUp';
  if (tradeType === TradeType.withdrawal) return 'cardClose';
  return 'release';
}
