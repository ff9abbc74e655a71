import type { Static } from 'typebox';
import type { MerchantCtx, TxCtx } from '../context.js';
import { parseDate } from '../dates.js';
import { newId } from '../db/ids.js';
import { DomainError } from '../errors.js';
import { lockedTrade } from '../ledger/locks.js';
import { toMajor, toMinor } from '../money/currency.js';
import type { OperationInput } from '../operation-input.js';
import { paymentsOf } from '../trades/books.js';
import { tradeById } from '../trades/by-id.js';
import type { TradeRow } from '../trades/record.js';
import { TradeStatus, TradeType } from '../trades/types.js';
import { checkEvidence } from './evidence.js';
import { type DisputeRecord, queryDispute } from './query.js';
import type { DisputeCreateBody } from './schemas.js';
import { insertEvidence, recordChange, sealExplanation } from './store.js';

/** Days after the clearing's business date a dispute may be submitted (decisions §13.2). */
export const DISPUTE_DAYS = 120;
const DAY_MS = 86_400_000;

/** The first moment past the deadline: the start (UTC) of the day after the 120th day after the clearing. */
export function deadlineOf(clearingDate: string): number {
  const day = parseDate(clearingDate);
  if (!day) throw new Error(`bad business date ${clearingDate}`);
  return day.getTime() + (DISPUTE_DAYS + 1) * DAY_MS;
}

/**
 * Why a transaction cannot be disputed (2730), or nothing: only a cleared purchase (a payment,
 * tradeType 151, status 1, a forced post's too, or named by its authorization's id when that has
 * exactly one: clearedPurchase) can be; an authorization not cleared, a reversed or
 * voided one, a refund, and one refunded in full cannot.
 */
function notDisputable(t: TradeRow): string | null {
  if (t.trade_type === TradeType.authorization) {
    return t.trade_status === TradeStatus.success
      ? 'tradeId: the authorization is not cleared; only a cleared purchase can be disputed'
      : 'tradeId: the authorization was reversed or voided; nothing was charged';
  }
  if (t.trade_type !== TradeType.payment) return 'tradeId: only a purchase (tradeType 151) can be disputed';
  if (t.trade_status !== TradeStatus.success) return 'tradeId: a refund or reversal record cannot be disputed; dispute the purchase';
  if (t.refunded >= t.amount) return 'tradeId: the purchase was refunded in full';
  return null;
}

/**
 * The transaction a dispute is about, locked (its card first): the one named, or, for an
 * authorization's id (the id a merchant sees first), its payment when it has exactly one. An
 * authorization cleared more than once is refused (2730) with its payments' ids named: which one is
 * disputed is the merchant's choice.
 */
async function clearedPurchase(ctx: MerchantCtx, tradeId: string): Promise<Awaited<ReturnType<typeof lockedTrade>>> {
  const named = await lockedTrade(ctx, tradeId);
  if (named.trade.trade_type !== TradeType.authorization) return named;
  // Read under the card's lock: a clearing of this authorization waits for it.
  const payments = await paymentsOf(ctx.tx, ctx.merchantId, named.trade.id);
  if (payments.length === 1) return lockedTrade(ctx, (payments[0] as { id: string }).id);
  if (payments.length > 1)
    throw new DomainError(
      'tradeState',
      `tradeId: the authorization was cleared by ${payments.length} payments (${payments.map((p) => p.id).join(', ')}); dispute one of them by its tradeId`,
    );
  return named;
}

/** What is left to dispute of a payment: cleared, less refunded, less its disputes not withdrawn or expired. */
export async function disputableLeft(ctx: TxCtx, t: TradeRow, except?: string): Promise<number> {
  let q = ctx.tx
    .selectFrom('disputes')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('amount'), eb.lit(0)).as('s'))
    .where('trade_id', '=', t.id)
    .where('status', 'not in', ['withdrawn', 'expired']);
  if (except) q = q.where('id', '<>', except);
  const disputed = Number((await q.executeTakeFirstOrThrow()).s);
  return t.amount - t.refunded - disputed;
}

/** The amount asked for (default: all that is left), checked against what is left. */
export function disputedAmount(asked: number | undefined, left: number, currency: string, then?: string): number {
  const more = then ? `; ${then}` : '';
  if (left <= 0) throw new DomainError('incorrectAmount', `amount: nothing is left to dispute on this transaction${more}`);
  const amount = asked === undefined ? left : toMinor(asked, currency);
  if (amount > left) {
    throw new DomainError(
      'incorrectAmount',
      `amount: at most ${toMajor(left, currency)} ${currency} can be disputed (cleared, less refunds and earlier disputes)${more}`,
    );
  }
  return amount;
}

export type DisputeCreateInput = OperationInput<Static<typeof DisputeCreateBody>>;

/**
 * Opens a dispute (`unsubmitted`) on one of the merchant's cleared purchases (decisions §13.1, §13.2).
 * The card is locked first (lockedTrade), then the transaction's disputes are read: two creations on
 * one transaction at once give one dispute and one 2741 (the partial unique index `disputes_one_open`
 * is the last guard). Another merchant's transaction is unknown (2730), as a declined authorization
 * is refused (2730) without saying whose it is.
 */
export async function createDispute({ ctx, input }: { ctx: MerchantCtx; input: DisputeCreateInput }): Promise<DisputeRecord> {
  // Every file is checked before anything is read or written: a refused one writes nothing.
  const files = (input.evidence ?? []).map((f, i) => checkEvidence(f, `evidence[${i}]`));
  uniqueNames(files.map((f) => f.fileName));
  if (!(await tradeById(ctx.tx, ctx.merchantId, input.tradeId))) {
    const declined = await ctx.tx
      .selectFrom('authorizations')
      .select('id')
      .where('id', '=', input.tradeId)
      .where('merchant_id', '=', ctx.merchantId)
      .where('approved', '=', 0)
      .executeTakeFirst();
    throw new DomainError(
      'tradeState',
      declined ? 'tradeId: a declined authorization charged nothing; it cannot be disputed' : 'tradeId: transaction not found',
    );
  }
  const { trade, card } = await clearedPurchase(ctx, input.tradeId);
  const why = notDisputable(trade);
  if (why) throw new DomainError('tradeState', why);
  const open = await ctx.tx
    .selectFrom('disputes')
    .select('id')
    .where('trade_id', '=', trade.id)
    .where('status', 'in', ['unsubmitted', 'submitted'])
    .executeTakeFirst();
  if (open) throw new DomainError('disputeOpen', `tradeId: dispute ${open.id} is open on this transaction`);
  const deadline = deadlineOf(trade.business_date);
  if (ctx.now >= deadline) {
    throw new DomainError(
      'disputeDeadline',
      `tradeId: cleared on ${trade.business_date}; disputes are accepted until ${DISPUTE_DAYS} days after the clearing`,
    );
  }
  const amount = disputedAmount(input.amount, await disputableLeft(ctx, trade), card.currency);
  const id = newId('dsp');
  const row = {
    id,
    merchant_id: ctx.merchantId,
    card_id: card.id,
    trade_id: trade.id,
    reason: input.reason,
    amount,
    currency: card.currency,
    status: 'unsubmitted' as const,
    explanation_enc: sealExplanation(ctx.svc.box, id, input.explanation ?? ''),
    clearing_date: trade.business_date,
    deadline_at: deadline,
    provisional_credit: 0,
    outcome_amount: null,
    decided_by: null,
    sandbox_decide_at: null,
    created_at: ctx.now,
    updated_at: ctx.now,
    submitted_at: null,
    decided_at: null,
  };
  try {
    await ctx.tx.insertInto('disputes').values(row).execute();
  } catch (err) {
    // The last guard (the partial unique index): an open dispute committed by a transaction that did
    // not take the card's lock first would be found here instead.
    if (/disputes_one_open|disputes\.trade_id/.test(String((err as Error).message))) {
      throw new DomainError('disputeOpen', 'tradeId: another dispute is open on this transaction');
    }
    throw err;
  }
  await insertEvidence(ctx, row, files);
  await recordChange(ctx, row, { kind: 'created' });
  return queryDispute(ctx.tx, ctx.svc.box, ctx.merchantId, id, ctx.now);
}

/** A file name used twice on one dispute is refused (2744). */
export function uniqueNames(names: string[]): void {
  const seen = new Set<string>();
  for (const [i, n] of names.entries()) {
    if (seen.has(n)) throw new DomainError('disputeEvidence', `evidence[${i}].fileName: ${n} is already a file of this dispute`);
    seen.add(n);
  }
}
