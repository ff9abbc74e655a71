import type { Selectable } from 'kysely';
import { notifyMerchant } from '../callbacks/merchant-event.js';
import type { CardRow } from '../cards/model.js';
import type { MerchantCtx, VerbCtx } from '../context.js';
import type { SecretBox } from '../crypto/secretbox.js';
import { newId } from '../db/ids.js';
import { forUpdate } from '../db/locks.js';
import type { DisputeStatus, DisputesTable } from '../db/schema.js';
import { DomainError } from '../errors.js';
import { lockCard } from '../ledger/locks.js';
import { toMajor } from '../money/currency.js';
import type { CheckedEvidence } from './evidence.js';

export type DisputeRow = Selectable<DisputesTable>;

/** A dispute's explanation is personal data: sealed, bound to its dispute (a copy to another row does not open). */
export const sealExplanation = (box: SecretBox, disputeId: string, text: string): string | null =>
  text === '' ? null : box.seal(text, `dispute-explanation:${disputeId}`);
export const openExplanation = (box: SecretBox, d: Pick<DisputeRow, 'id' | 'explanation_enc'>): string =>
  d.explanation_enc === null ? '' : box.open(d.explanation_enc, `dispute-explanation:${d.id}`);

/** An evidence file's Base64, sealed and bound to its dispute and its own id. */
export const evidenceContext = (disputeId: string, evidenceId: string) => `dispute-evidence:${disputeId}:${evidenceId}`;

export async function insertEvidence(ctx: VerbCtx, d: { id: string; merchant_id: string }, files: CheckedEvidence[]): Promise<void> {
  const disputeId = d.id;
  for (const f of files) {
    const id = newId('dev');
    await ctx.tx
      .insertInto('dispute_evidence')
      .values({
        id,
        dispute_id: disputeId,
        merchant_id: d.merchant_id,
        file_name: f.fileName,
        content_type: f.contentType,
        size: f.bytes.length,
        sha256: f.sha256,
        data_enc: ctx.svc.box.seal(f.bytes.toString('base64'), evidenceContext(disputeId, id)),
        created_at: ctx.now,
      })
      .execute();
  }
}

/** The first moment an unsubmitted dispute is expired: its deadline has passed. */
export const isPastDeadline = (d: Pick<DisputeRow, 'deadline_at'>, now: number): boolean => now >= Number(d.deadline_at);

/**
 * A dispute and its card for a change, in the one lock order (docs/architecture.md, Concurrency):
 * the card's row first (every money movement of the card takes it), then the dispute's. Another
 * merchant's dispute is unknown (2740). Without `merchantId` (the operator, the network) any
 * merchant's. The context answered is the dispute's merchant's, for the ledger's verbs.
 */
export async function lockedDispute(ctx: VerbCtx, disputeId: string): Promise<{ dispute: DisputeRow; card: CardRow; mctx: MerchantCtx }> {
  let first = ctx.tx.selectFrom('disputes').select(['merchant_id', 'card_id']).where('id', '=', disputeId);
  if (ctx.merchantId !== undefined) first = first.where('merchant_id', '=', ctx.merchantId);
  const found = await first.executeTakeFirst();
  if (!found) throw new DomainError('disputeNotFound', 'disputeId: dispute not found');
  const mctx: MerchantCtx = { ...ctx, merchantId: found.merchant_id };
  const card = await lockCard(mctx, found.card_id);
  const dispute = await forUpdate(ctx.tx, ctx.tx.selectFrom('disputes').selectAll().where('id', '=', disputeId)).executeTakeFirstOrThrow();
  return { dispute, card, mctx };
}

/**
 * Moves a dispute from the status it was read in, with its other changes; false when it is no
 * longer in that status (a change by another transaction that committed first).
 */
export async function moveDispute(
  ctx: VerbCtx,
  d: DisputeRow,
  changes: Partial<Omit<DisputeRow, 'id' | 'merchant_id' | 'card_id' | 'trade_id'>>,
): Promise<DisputeRow> {
  const res = await ctx.tx
    .updateTable('disputes')
    .set({ ...changes, updated_at: ctx.now })
    .where('id', '=', d.id)
    .where('status', '=', d.status)
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) !== 1) throw new DomainError('disputeState', 'disputeId: the dispute changed concurrently; try again');
  return { ...d, ...changes, updated_at: ctx.now };
}

/** What a history line and its callback say moved: a kind, and the money with its journal entry. */
export interface DisputeChange {
  kind: 'created' | 'updated' | 'submitted' | 'provisional_credit' | 'won' | 'lost' | 'credit_reversed' | 'expired' | 'withdrawn';
  amount?: number;
  entryId?: string | null;
  note?: string;
}

/**
 * Records a change of a dispute: a line of its history, and a `dispute.updated` callback (docs/callbacks.md)
 * on every change of status and every money movement, in the same transaction.
 */
export async function recordChange(ctx: VerbCtx, d: DisputeRow, change: DisputeChange): Promise<void> {
  await ctx.tx
    .insertInto('dispute_events')
    .values({
      id: newId('dhe'),
      dispute_id: d.id,
      merchant_id: d.merchant_id,
      status: d.status,
      kind: change.kind,
      amount: change.amount ?? 0,
      entry_id: change.entryId ?? null,
      actor: ctx.actor.slice(0, 120),
      note: (change.note ?? '').slice(0, 200),
      created_at: ctx.now,
    })
    .execute();
  if (change.kind === 'updated') return;
  await notifyMerchant(ctx, {
    merchantId: d.merchant_id,
    type: 'dispute.updated',
    subject: `dispute:${d.id}`,
    body: {
      disputeId: d.id,
      tradeId: d.trade_id,
      cardId: d.card_id,
      status: d.status,
      amount: toMajor(Number(d.amount), d.currency),
      currency: d.currency,
      provisionalCredit: toMajor(Number(d.provisional_credit), d.currency),
      outcomeAmount: d.outcome_amount === null ? null : toMajor(Number(d.outcome_amount), d.currency),
      change: change.kind,
      movement:
        change.amount && change.amount !== 0 ? { amount: toMajor(change.amount, d.currency), entryId: change.entryId ?? null } : null,
    },
  });
}

/** Expires a dispute found unsubmitted past its deadline (lazily, by a change, or by the sweep). */
export async function expireLocked(ctx: VerbCtx, d: DisputeRow): Promise<DisputeRow> {
  const expired = await moveDispute(ctx, d, { status: 'expired' satisfies DisputeStatus, decided_at: ctx.now });
  await recordChange(ctx, expired, { kind: 'expired', note: 'not submitted before the deadline' });
  return expired;
}
