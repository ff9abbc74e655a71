import type { CardRow } from '../cards/model.js';
import { newId } from '../db/ids.js';
import type { ExceptionKind } from '../db/schema.js';
import { exponent } from '../money/currency.js';
import { resolveBusinessDate } from './business-date.js';
import type { LedgerCtx } from './context.js';
import { Account, postEntry } from './journal.js';

/**
 * Forced posts have a ceiling (decisions §12.13, docs/network.md): an advice whose forced part is
 * above CARDPROGRAM_FORCED_POST_MAX, or that would take its card's debt above
 * CARDPROGRAM_CARD_DEBT_MAX, is acknowledged (`00`) and recorded, but posted whole to the suspense
 * account, not to the card: it waits in the exceptions queue for an operator (src/ledger/exceptions.ts).
 */

/** The message an advice came in: its identity (decisions §12.6) and MTI, as its exception keeps them. */
export interface AdviceMessage {
  msgClass: 'authorization' | 'financial' | 'reversal';
  acquirer: string;
  stan: string;
  transmitted: string;
  mti: string;
}

/** An advice held in suspense instead of posted to its card; it is acknowledged all the same. */
export interface Suspended {
  exceptionId: string;
  reason: string;
}

export const isSuspended = (r: object): r is Suspended => 'exceptionId' in r;

/** An amount in minor units as the operator reads it: major units with the currency's decimals. */
const major = (minor: number, currency: string) => (minor / 10 ** exponent(currency)).toFixed(exponent(currency));

/**
 * Why posting an advice to this card (the card read under its lock) would pass a ceiling: null when
 * it may be posted. `advice` is the advice's own forced part (the whole amount, or a clearing's
 * excess over its hold), compared with CARDPROGRAM_FORCED_POST_MAX; `taken` is what would leave the
 * card beyond what holds it (with an authorization's fee), the part of it beyond the available
 * balance becoming debt, compared with CARDPROGRAM_CARD_DEBT_MAX.
 */
export function overCeiling(
  ctx: LedgerCtx,
  card: Pick<CardRow, 'currency' | 'available_balance' | 'debt'>,
  advice: number,
  taken: number,
): string | null {
  const currency = card.currency as keyof typeof ctx.svc.config.forcedPosts.postMax;
  const postMax = ctx.svc.config.forcedPosts.postMax[currency];
  const debtMax = ctx.svc.config.forcedPosts.debtMax[currency];
  if (postMax !== undefined && advice > postMax) {
    return `${major(advice, card.currency)} ${card.currency} forced is above CARDPROGRAM_FORCED_POST_MAX (${major(postMax, card.currency)})`;
  }
  const debt = Number(card.debt) + Math.max(0, taken - Math.max(card.available_balance, 0));
  if (debtMax !== undefined && debt > debtMax) {
    return `the card's debt would be ${major(debt, card.currency)} ${card.currency}, above CARDPROGRAM_CARD_DEBT_MAX (${major(debtMax, card.currency)})`;
  }
  return null;
}

export interface Suspension {
  kind: ExceptionKind;
  message: AdviceMessage;
  card: Pick<CardRow, 'id' | 'merchant_id' | 'currency'>;
  /** Minor units of the card's currency; the transaction's currency and amount. */
  amount: number;
  currencyTxn: string;
  txnAmount: number;
  /** The authorization a clearing names. */
  originalId: string | null;
  /** What posting it later needs (src/ledger/exceptions.ts). */
  details: Record<string, unknown>;
  reason: string;
  /** A refund: the held clearing's exception it waits with. */
  heldWith?: string | null | undefined;
}

/**
 * Holds an advice in suspense: its exception, open, and for a clearing (money owed to the network:
 * the network has paid the acquirer) one journal entry from `network:suspense` to
 * `program:settlement`, traced by the exception's id. An authorization advice's hold moves no money:
 * its exception holds nothing (`suspended` 0) until an operator posts the hold to the card.
 */
export async function suspend(ctx: LedgerCtx, s: Suspension): Promise<Suspended> {
  const id = newId('exc');
  const suspended = s.kind === 'clearing' ? s.amount : 0;
  await ctx.tx
    .insertInto('network_exceptions')
    .values({
      id,
      kind: s.kind,
      msg_class: s.message.msgClass,
      acquirer: s.message.acquirer,
      stan: s.message.stan,
      transmitted: s.message.transmitted,
      mti: s.message.mti,
      merchant_id: s.card.merchant_id,
      card_id: s.card.id,
      currency: s.card.currency,
      amount: s.amount,
      currency_txn: s.currencyTxn,
      txn_amount: s.txnAmount,
      suspended,
      original_id: s.originalId,
      details: JSON.stringify(s.details),
      reason: s.reason.slice(0, 300),
      status: 'open',
      business_date: resolveBusinessDate(undefined, ctx.now),
      created_at: ctx.now,
      decided_by: null,
      decided_at: null,
      decided_date: null,
      trade_id: null,
      consumed_by: null,
      held_with: s.heldWith ?? null,
    })
    .execute();
  await postEntry(ctx.tx, {
    tradeId: id,
    currency: s.card.currency,
    now: ctx.now,
    legs: [
      { account: Account.suspense, amount: -suspended },
      { account: Account.settlement, amount: suspended },
    ],
  });
  ctx.afterCommit(() =>
    ctx.svc.log.warn({ exceptionId: id, cardId: s.card.id, kind: s.kind }, `network: advice held in suspense: ${s.reason}`),
  );
  return { exceptionId: id, reason: s.reason };
}
