import { type CardRow, maskedCardNo } from '../cards/model.js';
import { addSpend, checkSpend, parseControls } from '../controls/spending.js';
import { type TradeRecord, toAuthorization, toTradeRecord } from '../trades/record.js';
import { TradeStatus, TradeType } from '../trades/types.js';
import { type AuthorizeInput, authorizationRow, price } from './authorization-input.js';
import { book, tradeRow } from './book.js';
import { resolveBusinessDate, settlingBusinessDate } from './business-date.js';
import type { LedgerCtx } from './context.js';
import { Account, type Leg } from './journal.js';
import { lockCard, lockedTrade } from './locks.js';
import { bookRefund } from './settle.js';
import { type AdviceMessage, overCeiling, type Suspended, suspend } from './suspense.js';
import { updateTrade } from './trade-rows.js';

/**
 * Forced posts (decisions §12.7): what the card network reports as done (an advice: the network
 * stood in, a clearing with no hold left to take it from, a refund with no original) is posted, on a
 * frozen or closed card too and beyond the balance. Only these verbs take a card beyond its balance:
 * what they take beyond the available balance is the card's debt (`cards.debt`, journal account
 * `card:<id>:debt`), so the available balance itself never goes below zero and every other verb keeps
 * its "insufficient balance" (2725). Money that comes to the card later pays the debt first (book()).
 * Each one's `trade` callback carries `forced: true`.
 *
 * An advice given with its `message` is held to the ceilings of §12.13 first (src/ledger/suspense.ts):
 * above them it is not posted but held in suspense (`Suspended`). Without it (an operator posting a
 * held advice, src/ledger/exceptions.ts) it is posted whatever. Credits (refunds) have no ceiling:
 * they pay a debt, never make one.
 */

/** Marks a forced post's `trade` callback. */
const FORCED = { forced: true } as const;

/** The forced-post metric (count and amount), once the post is committed. */
function counted(ctx: LedgerCtx, currency: string, amount: number): void {
  ctx.afterCommit(() => ctx.svc.metrics.forcedPost(currency, amount));
}

/** `amount` taken from the card: from its available balance as far as it goes, the rest its debt. */
export function spendLegs(card: Pick<CardRow, 'id' | 'available_balance'>, amount: number): Leg[] {
  const fromAvailable = Math.min(Math.max(card.available_balance, 0), amount);
  return [
    { account: Account.available(card.id), amount: -fromAvailable },
    { account: Account.debt(card.id), amount: -(amount - fromAvailable) },
  ];
}

/**
 * An authorization advice (0120: the network stood in and approved): an authorization (150, status 1)
 * holding `amount`, whatever the card's status, controls or balance, with its fee. It counts against
 * the spending limits as any approved authorization does (what was spent was spent), even beyond
 * them; their counters stay the replay of the records. Recorded, as an approval, in `authorizations`
 * (tradeQuery) with the message saying so.
 */
export async function forcedAuthorize({
  ctx,
  input,
}: {
  ctx: LedgerCtx;
  input: AuthorizeInput & { message?: AdviceMessage | undefined };
}): Promise<TradeRecord | Suspended> {
  const card = await lockCard(ctx, input.cardId);
  const priced = price(ctx, card, input);
  const { amount, fee } = priced;
  const why = input.message ? overCeiling(ctx, card, amount, amount + fee) : null;
  if (why && input.message) {
    const { message, endpoint: _endpoint, cardId: _cardId, ...details } = input;
    return suspend(ctx, {
      kind: 'authorization',
      message,
      card,
      amount,
      currencyTxn: priced.currencyTxn,
      txnAmount: priced.txnAmount,
      originalId: null,
      details,
      reason: why,
    });
  }
  // Read after the card's lock, as controlsDecision does (src/controls/decide.ts).
  const holderControls =
    (await ctx.tx.selectFrom('cardholders').select('controls').where('id', '=', card.holder_id).executeTakeFirst())?.controls ?? null;
  const spend = await checkSpend(
    ctx,
    {
      card: { id: card.id, currency: card.currency, controls: parseControls(card.controls) },
      holder: { id: card.holder_id, controls: parseControls(holderControls) },
    },
    amount,
    input.mcc,
    ctx.svc.clock,
  );
  // The record's moment is the counters' (as authorize()'s), so a release finds its period.
  const when = spend.at;
  if (input.businessDate === undefined) priced.businessDate = resolveBusinessDate(undefined, when);
  const trade = tradeRow(
    {
      card,
      type: TradeType.authorization,
      status: TradeStatus.success,
      amount,
      fee,
      currencyTxn: priced.currencyTxn,
      txnAmount: priced.txnAmount,
      businessDate: priced.businessDate,
      remark: input.remark ?? '',
      held: amount,
    },
    when,
  );
  const approved = authorizationRow(card, priced, { ...input, endpoint: undefined }, trade.id, when, {
    approved: 1,
    decline_reason: null,
    decline_code: null,
    message: 'Approved by the network (stand-in advice): a forced post',
  });
  await book(
    ctx,
    card.currency,
    [...spendLegs(card, amount + fee), { account: Account.held(card.id), amount }, { account: Account.fees, amount: fee }],
    [trade],
    { authorization: toAuthorization(approved, maskedCardNo(card)), ...FORCED },
  );
  await spend.record();
  await ctx.tx.insertInto('authorizations').values(approved).execute();
  counted(ctx, card.currency, amount);
  return toTradeRecord(trade, maskedCardNo(card));
}

export interface ForcedClearInput {
  cardId: string;
  /** The authorization it clears, when there is one (its hold, whatever is left of it, is taken first). */
  tradeId: string | null;
  /** In the card's currency, minor units. */
  amount: number;
  /** The transaction's currency and amount (minor units of it). */
  currencyTxn: string;
  txnAmount: number;
  remark?: string | undefined;
  /** The advice's message: above the ceilings (§12.13) the clearing is held in suspense, whole. */
  message?: AdviceMessage | undefined;
  /** An operator posting a held clearing: it is drawn from `network:suspense`, where it was owed to the network already. */
  fromSuspense?: boolean | undefined;
}

/**
 * A clearing the rules would refuse (0220): above what its authorization holds, of an authorization
 * that holds nothing any more (reversed, expired, cleared), or with no authorization at all. A
 * payment (151) of `amount`: what the authorization still holds, then the available balance, then
 * the card's debt.
 */
export async function forcedClear({ ctx, input }: { ctx: LedgerCtx; input: ForcedClearInput }): Promise<TradeRecord | Suspended> {
  let card: CardRow;
  let held = 0;
  let original: { id: string; auth_code: string; remark: string; business_date: string } | null = null;
  let holding: Awaited<ReturnType<typeof lockedTrade>>['trade'] | null = null;
  if (input.tradeId) {
    const locked = await lockedTrade(ctx, input.tradeId);
    card = locked.card;
    const auth = locked.trade;
    original = auth;
    if (auth.trade_type === TradeType.authorization && auth.trade_status === TradeStatus.success && auth.held > 0) {
      // Only above the hold is a clearing forced (below it, the sandbox's clear): the hold is taken whole.
      if (auth.held > input.amount) throw new Error('forced clearing below the hold: clear it');
      held = auth.held;
      holding = auth;
    }
  } else card = await lockCard(ctx, input.cardId);
  // The ceilings weigh what is forced: a clearing's excess over what its authorization holds.
  const why = input.message ? overCeiling(ctx, card, input.amount - held, input.amount - held) : null;
  if (why && input.message) {
    // Held whole, its authorization's hold untouched: posting it later takes what is held then.
    return suspend(ctx, {
      kind: 'clearing',
      message: input.message,
      card,
      amount: input.amount,
      currencyTxn: input.currencyTxn,
      txnAmount: input.txnAmount,
      originalId: original?.id ?? null,
      details: input.remark ? { remark: input.remark } : {},
      reason: why,
    });
  }
  if (holding) await updateTrade(ctx, holding, { held: 0 });
  const payment = tradeRow(
    {
      card,
      type: TradeType.payment,
      status: TradeStatus.success,
      amount: input.amount,
      currencyTxn: input.currencyTxn,
      txnAmount: input.txnAmount,
      businessDate: original ? settlingBusinessDate(undefined, ctx.now, original) : resolveBusinessDate(undefined, ctx.now),
      ...(original ? { authCode: original.auth_code, remark: original.remark, originalId: original.id } : { remark: input.remark ?? '' }),
    },
    ctx.now,
  );
  await book(
    ctx,
    card.currency,
    [
      { account: Account.held(card.id), amount: -held },
      ...spendLegs(card, input.amount - held),
      { account: input.fromSuspense ? Account.suspense : Account.settlement, amount: input.amount },
    ],
    [payment],
    FORCED,
  );
  // The records count a payment of an authorization as spent: what it took beyond the hold counts too.
  if (original) await addSpend(ctx, card, original.id, input.amount - held);
  counted(ctx, card.currency, input.amount);
  return toTradeRecord(payment, maskedCardNo(card));
}

export interface ForcedRefundInput {
  cardId: string;
  /** The payments it refunds, when known (a reversal advice after the clearing), each with what it takes; else none. */
  payments: Array<{ tradeId: string; amount: number }>;
  /** Without payments: the amount (card currency, minor units) and the transaction's. */
  amount: number;
  currencyTxn: string;
  txnAmount: number;
  remark?: string | undefined;
}

/**
 * A credit the network reports as done (decisions §12.7): a refund (0220, processing 20) with no
 * original, or a reversal advice (0420) of an authorization already cleared. A refund record (151,
 * status 10) per payment it returns (or one without an original), credited to the card (its debt
 * first; a closed card's goes on to its merchant's funding), on any card status.
 */
export async function forcedRefund({ ctx, input }: { ctx: LedgerCtx; input: ForcedRefundInput }): Promise<TradeRecord[]> {
  const out: TradeRecord[] = [];
  if (input.payments.length === 0) {
    const card = await lockCard(ctx, input.cardId);
    const record = tradeRow(
      {
        card,
        type: TradeType.payment,
        status: TradeStatus.refund,
        amount: input.amount,
        currencyTxn: input.currencyTxn,
        txnAmount: input.txnAmount,
        businessDate: resolveBusinessDate(undefined, ctx.now),
        remark: input.remark ?? '',
      },
      ctx.now,
    );
    await book(
      ctx,
      card.currency,
      [
        { account: Account.settlement, amount: -input.amount },
        { account: Account.available(card.id), amount: input.amount },
      ],
      [record],
      FORCED,
    );
    counted(ctx, card.currency, input.amount);
    return [toTradeRecord(record, maskedCardNo(card))];
  }
  for (const p of input.payments) {
    const { trade: payment, card } = await lockedTrade(ctx, p.tradeId);
    const amount = Math.min(p.amount, payment.amount - payment.refunded);
    if (amount <= 0) continue;
    const record = await bookRefund(ctx, card, payment, amount, settlingBusinessDate(undefined, ctx.now, payment), FORCED);
    counted(ctx, card.currency, amount);
    out.push(toTradeRecord(record, maskedCardNo(card)));
  }
  return out;
}
