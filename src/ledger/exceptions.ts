import type { Selectable } from 'kysely';
import { businessDay } from '../cards/model.js';
import type { VerbCtx } from '../context.js';
import type { NetworkExceptionsTable } from '../db/schema.js';
import { DomainError } from '../errors.js';
import type { AuthorizeInput } from './authorization-input.js';
import { settlingBusinessDate } from './business-date.js';
import type { LedgerCtx } from './context.js';
import { type ExceptionRecord, exceptionById, toExceptionRecord } from './exceptions-query.js';
import { forcedAuthorize, forcedClear } from './forced.js';
import { Account, postEntry } from './journal.js';
import { lockedTrade } from './locks.js';
import { bookRefund } from './settle.js';
import { isSuspended } from './suspense.js';

/**
 * The exceptions queue's decisions (decisions §12.13, docs/operations.md "Exceptions"): an operator
 * posts a held advice to its card (a forced post then, into the card's debt if need be: the ceilings
 * are the operator's to pass) or returns it to the network (a clearing's money comes back from the
 * network: the settlement's `exceptions-returned` line). Each exception is decided once: its status moves from
 * `open` by one conditional update, its row count checked, before any money moves, so of two operators
 * deciding at once one wins and the other is refused (2730) with nothing written.
 */

type ExceptionRow = Selectable<NetworkExceptionsTable>;

export interface ExceptionDecisionInput {
  exceptionId: string;
}

/** Claims an open exception for a decision, once; the row as it is then. */
async function claimDecision(ctx: VerbCtx, id: string, status: 'posted' | 'returned'): Promise<ExceptionRow> {
  const res = await ctx.tx
    .updateTable('network_exceptions')
    .set({ status, decided_by: ctx.actor.slice(0, 120), decided_at: ctx.now, decided_date: businessDay(ctx.now) })
    .where('id', '=', id)
    .where('status', '=', 'open')
    .executeTakeFirst();
  const row = await ctx.tx.selectFrom('network_exceptions').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) throw new DomainError('tradeState', `exceptionId: no exception ${id}`);
  if (Number(res.numUpdatedRows) !== 1) {
    const when = row.decided_at === null ? '' : ` at ${new Date(Number(row.decided_at)).toISOString()}`;
    throw new DomainError(
      'tradeState',
      `exceptionId: ${id} is ${row.status} already (by ${row.decided_by ?? 'unknown'}${when}); nothing moved`,
    );
  }
  return row;
}

/** The ledger context of the exception's merchant: the operator acts as its program (as a card's close does). */
const asMerchant = (ctx: VerbCtx, row: ExceptionRow): LedgerCtx => ({ ...ctx, merchantId: row.merchant_id });

/**
 * Posts a held advice to its card, whatever its status, balance or ceilings: an authorization advice
 * as the hold it would have been (its message then names the hold, so its clearing takes it); a
 * clearing as the payment, drawn from the suspense account (the hold of the authorization it names
 * first, whatever is left of it). Its `trade` callback says `forced`.
 */
export async function postException({ ctx, input }: { ctx: VerbCtx; input: ExceptionDecisionInput }): Promise<ExceptionRecord> {
  const row = await claimDecision(ctx, input.exceptionId, 'posted');
  // Its clearing was posted without it (issue 39's attack pass, F5): its hold would charge the card
  // a second time. The clearing marks it under this same row's lock, so one of the two wins.
  if (row.consumed_by !== null)
    throw new DomainError(
      'tradeState',
      `exceptionId: ${row.id}: its clearing was posted without it (${row.consumed_by}); posting its hold would charge the card twice: return it; nothing moved`,
    );
  if (row.kind === 'refund') await refuseRefundAlone(ctx, row);
  const lctx = asMerchant(ctx, row);
  const details = JSON.parse(row.details) as Record<string, unknown>;
  let tradeId: string;
  if (row.kind === 'authorization') {
    const trade = await forcedAuthorize({ ctx: lctx, input: { ...(details as Omit<AuthorizeInput, 'cardId'>), cardId: row.card_id } });
    if (isSuspended(trade)) throw new Error('an operator’s post is not held again');
    tradeId = trade.tradeId;
    await nameTrade(ctx, row, tradeId);
  } else {
    const trade = await forcedClear({
      ctx: lctx,
      input: {
        cardId: row.card_id,
        tradeId: row.original_id,
        amount: Number(row.amount),
        currencyTxn: row.currency_txn,
        txnAmount: Number(row.txn_amount),
        remark: typeof details.remark === 'string' ? details.remark : undefined,
        fromSuspense: true,
      },
    });
    if (isSuspended(trade)) throw new Error('an operator’s post is not held again');
    tradeId = trade.tradeId;
    // The refunds that waited with it are posted with it: refunds of the payment just made.
    await postHeldRefunds(ctx, lctx, row, tradeId);
  }
  await ctx.tx.updateTable('network_exceptions').set({ trade_id: tradeId }).where('id', '=', row.id).execute();
  return toExceptionRecord(await exceptionById(ctx.tx, row.id));
}

/**
 * A refund held with its clearing (issue 39's attack pass, F6) is posted with it (postHeldRefunds),
 * never alone: its clearing still open would credit the card for a charge it has not paid, and one
 * returned never charged it.
 */
/** A held message's claim in network_messages (its identity) names the trade its posting made: the settlement counts it then. */
async function nameTrade(ctx: VerbCtx, row: ExceptionRow, tradeId: string): Promise<void> {
  await ctx.tx
    .updateTable('network_messages')
    .set({ trade_id: tradeId })
    .where('msg_class', '=', row.msg_class)
    .where('acquirer', '=', row.acquirer)
    .where('stan', '=', row.stan)
    .where('transmitted', '=', row.transmitted)
    .where('trade_id', 'is', null)
    .execute();
}

async function refuseRefundAlone(ctx: VerbCtx, row: ExceptionRow): Promise<never> {
  const clearing = row.held_with
    ? await ctx.tx.selectFrom('network_exceptions').select(['id', 'status']).where('id', '=', row.held_with).executeTakeFirst()
    : undefined;
  const why =
    clearing?.status === 'open'
      ? `it waits with the clearing it refunds, ${clearing.id}, still held: post or return that one (this refund follows it)`
      : `the clearing it refunds${clearing ? `, ${clearing.id},` : ''} was returned to the network: the card was never charged; return this refund`;
  throw new DomainError('tradeState', `exceptionId: ${row.id}: ${why}; nothing moved`);
}

/** The refund exceptions held with a clearing, still open, each claimed for the clearing's decision in id order. */
async function heldRefunds(ctx: VerbCtx, clearingId: string, status: 'posted' | 'returned'): Promise<ExceptionRow[]> {
  const ids = await ctx.tx
    .selectFrom('network_exceptions')
    .select('id')
    .where('held_with', '=', clearingId)
    .where('kind', '=', 'refund')
    .where('status', '=', 'open')
    .orderBy('id')
    .execute();
  const out: ExceptionRow[] = [];
  for (const { id } of ids) out.push(await claimDecision(ctx, id, status));
  return out;
}

/** Posts the refunds held with a clearing as refunds of its payment (up to what is left of it), each linked to its message. */
async function postHeldRefunds(ctx: VerbCtx, lctx: LedgerCtx, clearing: ExceptionRow, paymentId: string): Promise<void> {
  for (const r of await heldRefunds(ctx, clearing.id, 'posted')) {
    const { trade: payment, card } = await lockedTrade(lctx, paymentId);
    const amount = Math.min(Number(r.amount), payment.amount - payment.refunded);
    if (amount <= 0) continue;
    const record = await bookRefund(lctx, card, payment, amount, settlingBusinessDate(undefined, ctx.now, payment), { forced: true });
    await ctx.tx.updateTable('network_exceptions').set({ trade_id: record.id }).where('id', '=', r.id).execute();
    // Its message now names the refund: the settlement counts it (`refunded`) on the day it was posted.
    await nameTrade(ctx, r, record.id);
  }
}

/**
 * Returns a held advice to the network: nothing reaches the card. A clearing's money comes back from
 * the network (`network:suspense` ← `program:settlement`, traced by the exception's id), a line of the
 * day's settlement; an authorization advice held nothing, so nothing moves (a clearing of it that
 * comes later is a forced post of its own, held to the ceilings again).
 */
export async function returnException({ ctx, input }: { ctx: VerbCtx; input: ExceptionDecisionInput }): Promise<ExceptionRecord> {
  const row = await claimDecision(ctx, input.exceptionId, 'returned');
  // The refunds that waited with a clearing go back with it: they moved nothing.
  if (row.kind === 'clearing') await heldRefunds(ctx, row.id, 'returned');
  const amount = Number(row.suspended);
  await postEntry(ctx.tx, {
    tradeId: row.id,
    currency: row.currency,
    now: ctx.now,
    legs: [
      { account: Account.suspense, amount },
      { account: Account.settlement, amount: -amount },
    ],
  });
  return toExceptionRecord(await exceptionById(ctx.tx, row.id));
}
