import { forUpdate } from '../db/locks.js';
import { DomainError } from '../errors.js';
import { ResponseCode } from '../iso8583/response-codes.js';
import type { LedgerCtx } from '../ledger/context.js';
import { forcedClear, forcedRefund } from '../ledger/forced.js';
import { lockCard, lockedTrade } from '../ledger/locks.js';
import { clear, refund } from '../ledger/settle.js';
import { isSuspended, type Suspended, suspend } from '../ledger/suspense.js';
import { MAX_MINOR, toMajor } from '../money/currency.js';
import { partsOf } from '../trades/network-reads.js';
import { TradeStatus, TradeType } from '../trades/types.js';
import { cardPart, cardTotal, type Whole } from './card-amounts.js';
import { adviceMessage, claim, type LinkAnswer, type LinkRecord } from './identity.js';

/**
 * Financial advices of the card network link (0220, decisions §12.4): the clearing of an approved
 * 0100 (or 0120), and a refund of a cleared payment, each named by field 90, by the sandbox's `clear`
 * and `refund` verbs, and claimed once with the answer. A clearing above what is held, of an
 * authorization that holds nothing any more, or with no original, and a refund with no original,
 * are forced posts (§12.7, src/ledger/forced.ts): posted, `00`, marked `forced`.
 */

export interface LinkFinancialInput {
  record: LinkRecord;
  /** The authorization (clearing) or payment (refund) field 90 names; null: none found (a forced post). */
  tradeId: string | null;
  cardId: string;
  /** Field 4, in minor units of the original's transaction currency (with an original). */
  amount: number;
  /** Without an original: the amount in the card's currency and the transaction's (minor units), from fields 4/49 (6/51). */
  priced?: { amount: number; currencyTxn: string; txnAmount: number; remark?: string | undefined } | undefined;
  /** A refund of a clearing held in suspense (issue 39's attack pass, F6): the clearing's exception; the refund waits with it. */
  heldClearing?: string | undefined;
  /** A clearing of an authorization advice (0120) held in suspense: the advice's identity (its exception's). */
  heldAdvice?: { acquirer: string; stan: string; transmitted: string } | undefined;
}

/**
 * The authorization advice a clearing names was posted by an operator between the look at its
 * message and this clearing's transaction: the clearing is decided again, and then takes its hold.
 */
export class AdviceDecided extends Error {
  override name = 'AdviceDecided';
}

/**
 * A clearing of an authorization advice held in suspense (issue 39's attack pass, F5): the advice's
 * exception, locked before the card (the operator's post takes it first too, so the two are in one
 * order), so that the clearing and the operator's post of the advice cannot both happen. Open: the
 * clearing is posted without it (a forced post), and the exception is marked with what it posted and
 * why its hold must not be posted now. Posted meanwhile: AdviceDecided. Returned: nothing to mark.
 */
async function lockHeldAdvice(ctx: LedgerCtx, advice: NonNullable<LinkFinancialInput['heldAdvice']>) {
  const row = await forUpdate(
    ctx.tx,
    ctx.tx
      .selectFrom('network_exceptions')
      .select(['id', 'status', 'reason'])
      .where('msg_class', '=', 'authorization')
      .where('acquirer', '=', advice.acquirer)
      .where('stan', '=', advice.stan)
      .where('transmitted', '=', advice.transmitted)
      .where('kind', '=', 'authorization'),
  ).executeTakeFirst();
  if (row?.status === 'posted') throw new AdviceDecided();
  return row?.status === 'open' ? row : null;
}

async function markConsumed(ctx: LedgerCtx, advice: { id: string; reason: string }, answer: LinkAnswer): Promise<void> {
  const by = answer.tradeId ?? answer.exceptionId;
  if (answer.code !== ResponseCode.approved || !by) return;
  const why = `its clearing was posted without it (${by}): posting its hold too would charge the card twice; return it`;
  await ctx.tx
    .updateTable('network_exceptions')
    .set({ consumed_by: by, reason: `${why}. Held: ${advice.reason}`.slice(0, 300) })
    .where('id', '=', advice.id)
    .execute();
}

/**
 * A clearing's field 4 (the original's transaction currency) in the card's, at the authorization's
 * own ratio: the first clearing is a total of the authorization, rounded once (as the clearing
 * file's check in src/network-link/clearing.ts converts it); a further one (an authorization
 * cleared before: a forced post) a part after its payments (src/network/link-amounts.ts).
 */
async function clearingInCardCurrency(ctx: LedgerCtx, auth: Whole & { id: string; held: number }, f4: number): Promise<number> {
  const before = auth.held > 0 ? { card: 0, txn: 0 } : await partsOf(ctx.tx, auth.id, TradeStatus.success);
  return cardPart(auth, before, f4);
}

/** Refusals of the verbs before any write, as field 39. */
function refusal(err: unknown): LinkAnswer {
  if (err instanceof DomainError && err.kind === 'tradeState') return { code: ResponseCode.invalidTransaction };
  if (err instanceof DomainError && err.kind === 'incorrectAmount') return { code: ResponseCode.invalidAmount };
  throw err;
}

const answered = (r: { authCode: string; tradeId: string }, forced = false): LinkAnswer => ({
  code: ResponseCode.approved,
  authCode: r.authCode,
  tradeId: r.tradeId,
  ...(forced ? { forced: true } : {}),
});

/** A forced post's answer: `00` also when it was held in suspense above its ceilings (§12.13). */
const forcedAnswer = (r: { authCode: string; tradeId: string } | Suspended): LinkAnswer =>
  isSuspended(r) ? { code: ResponseCode.approved, forced: true, exceptionId: r.exceptionId } : answered(r, true);

/**
 * An 0220 clearing: of an approved 0100 that still holds at least field 4, the sandbox's `clear`
 * (the rest of the hold released); otherwise (above the hold, nothing held any more, no original)
 * a forced post of field 4.
 */
export async function linkClear({ ctx, input }: { ctx: LedgerCtx; input: LinkFinancialInput }): Promise<LinkAnswer> {
  let answer: LinkAnswer;
  try {
    if (input.tradeId === null) {
      const p = input.priced;
      if (!p) throw new Error('a clearing without an original needs its amounts');
      const advice = input.heldAdvice ? await lockHeldAdvice(ctx, input.heldAdvice) : null;
      answer = forcedAnswer(
        await forcedClear({ ctx, input: { cardId: input.cardId, tradeId: null, ...p, message: adviceMessage(input.record) } }),
      );
      if (advice) await markConsumed(ctx, advice, answer);
    } else {
      const { trade: auth, card } = await lockedTrade(ctx, input.tradeId);
      const amount = await clearingInCardCurrency(ctx, auth, input.amount);
      const holds = auth.trade_type === TradeType.authorization && auth.trade_status === TradeStatus.success && auth.held > 0;
      // At the authorization's ratio, beyond the largest amount one operation may move: 13, as a typed one.
      if (amount <= 0 || amount > MAX_MINOR) answer = { code: ResponseCode.invalidAmount };
      else if (holds && amount <= auth.held) {
        const cleared = await clear({
          ctx,
          input: { tradeId: input.tradeId, amount: toMajor(amount, card.currency) },
          txnAmount: input.amount,
        });
        answer = answered(cleared);
      } else {
        const payment = await forcedClear({
          ctx,
          input: {
            cardId: card.id,
            tradeId: auth.id,
            amount,
            currencyTxn: auth.currency_txn,
            txnAmount: input.amount,
            message: adviceMessage(input.record),
          },
        });
        answer = forcedAnswer(payment);
      }
    }
  } catch (err) {
    answer = refusal(err);
  }
  await claim(ctx, input.record, input.cardId, answer);
  return answer;
}

/**
 * A refund of a clearing held in suspense (issue 39's attack pass, F6): the card was not charged, so
 * it is not credited either. The clearing's exception is locked first (as an operator's decision
 * claims it first); still undecided or returned, the refund is held too, as a `refund` exception
 * naming it, moving no money (`suspended` 0): it is posted when its clearing is posted, returned when
 * it is returned (src/ledger/exceptions.ts). Posted meanwhile: AdviceDecided (decided again: a refund
 * of the payment the post made).
 */
async function heldRefund(ctx: LedgerCtx, input: LinkFinancialInput, clearingId: string): Promise<LinkAnswer> {
  const clearing = await forUpdate(
    ctx.tx,
    ctx.tx.selectFrom('network_exceptions').selectAll().where('id', '=', clearingId).where('kind', '=', 'clearing'),
  ).executeTakeFirst();
  if (!clearing) throw new Error(`no held clearing ${clearingId}`);
  if (clearing.status === 'posted') throw new AdviceDecided();
  const card = await lockCard(ctx, input.cardId);
  // Field 4 in the clearing's transaction currency, at its own ratio; at most what it would have charged.
  const amount = cardTotal({ amount: Number(clearing.amount), txn_amount: Number(clearing.txn_amount) }, input.amount);
  if (amount <= 0 || amount > Number(clearing.amount)) return { code: ResponseCode.invalidAmount };
  const why =
    clearing.status === 'open'
      ? `a refund of the clearing held in suspense as ${clearing.id}: it waits with it (posted or returned with it)`
      : `a refund of the clearing ${clearing.id}, returned to the network: the card was never charged; return it`;
  const held = await suspend(ctx, {
    kind: 'refund',
    message: adviceMessage(input.record),
    card,
    amount,
    currencyTxn: clearing.currency_txn,
    txnAmount: input.amount,
    originalId: null,
    details: {},
    reason: why,
    heldWith: clearing.id,
  });
  return { code: ResponseCode.approved, forced: true, exceptionId: held.exceptionId };
}

/** An 0220 with processing code 20: a refund of field 4 of the payment field 90's clearing produced; without one, a forced credit. */
export async function linkRefund({ ctx, input }: { ctx: LedgerCtx; input: LinkFinancialInput }): Promise<LinkAnswer> {
  let answer: LinkAnswer;
  try {
    if (input.heldClearing) answer = await heldRefund(ctx, input, input.heldClearing);
    else if (input.tradeId === null) {
      const p = input.priced;
      if (!p) throw new Error('a refund without an original needs its amounts');
      const [record] = await forcedRefund({ ctx, input: { cardId: input.cardId, payments: [], ...p } });
      answer = record ? answered(record, true) : { code: ResponseCode.invalidTransaction };
    } else {
      const { trade: payment, card } = await lockedTrade(ctx, input.tradeId);
      // A part of the payment: allocated after its refunds so far, so refunds of the whole sum to it.
      const before = await partsOf(ctx.tx, payment.id, TradeStatus.refund);
      const amount = cardPart(payment, { txn: before.txn, card: payment.refunded }, input.amount);
      if (amount <= 0 || amount > MAX_MINOR) answer = { code: ResponseCode.invalidAmount };
      else {
        const record = await refund({
          ctx,
          input: { tradeId: input.tradeId, amount: toMajor(amount, card.currency) },
          txnAmount: input.amount,
        });
        answer = answered(record);
      }
    }
  } catch (err) {
    answer = refusal(err);
  }
  await claim(ctx, input.record, input.cardId, answer);
  return answer;
}

/**
 * A reversal (0400/0420, decisions §12.4) of an 0200 or an 0220 clearing: its payment is returned
 * to the card, all that was not refunded yet (no field 95) or all beyond field 95's actual amount
 * (what the transaction came to, in the original's transaction currency), by the sandbox's `refund`
 * (a status 10 record, its `trade` callback), and the message claimed with its answer, in one
 * transaction. A payment with nothing left to return is `12`; an actual amount above what is left,
 * `13`; an original that is not a payment (a refund's 0220), `12`.
 */
export async function linkReversePayment({
  ctx,
  input,
}: {
  ctx: LedgerCtx;
  input: { record: LinkRecord; tradeId: string; cardId: string; actual: number | null };
}): Promise<LinkAnswer> {
  let answer: LinkAnswer;
  const { trade: payment, card } = await lockedTrade(ctx, input.tradeId);
  const left = payment.amount - payment.refunded;
  // What the payment keeps is field 95's actual amount (a total): the refunds so far and this one
  // take the rest of the transaction amount, allocated as the refunds' parts are.
  const before = await partsOf(ctx.tx, payment.id, TradeStatus.refund);
  const txnPart = payment.txn_amount - before.txn - (input.actual ?? 0);
  const amount = input.actual === null ? left : cardPart(payment, { txn: before.txn, card: payment.refunded }, txnPart);
  if (payment.trade_type !== TradeType.payment || payment.trade_status !== TradeStatus.success || left === 0)
    answer = { code: ResponseCode.invalidTransaction };
  else if (amount < 0 || amount > left) answer = { code: ResponseCode.invalidAmount };
  else if (amount === 0) answer = answered({ authCode: payment.auth_code, tradeId: payment.id });
  else {
    try {
      const asked = { tradeId: payment.id, amount: toMajor(amount, card.currency) };
      answer = answered(await refund({ ctx, input: asked, txnAmount: Math.max(0, txnPart) }));
    } catch (err) {
      answer = refusal(err);
    }
  }
  await claim(ctx, input.record, input.cardId, answer);
  return answer;
}
