import type { Static } from 'typebox';
import type { MerchantCtx } from '../context.js';
import { CommittedFailure, DomainError } from '../errors.js';
import type { OperationInput } from '../operation-input.js';
import { tradeById } from '../trades/by-id.js';
import { disputableLeft, disputedAmount, uniqueNames } from './create.js';
import { checkEvidence } from './evidence.js';
import { type DisputeRecord, queryDispute } from './query.js';
import { type DisputeUpdateBody, MAX_EVIDENCE_FILES } from './schemas.js';
import {
  type DisputeRow,
  expireLocked,
  insertEvidence,
  isPastDeadline,
  lockedDispute,
  moveDispute,
  recordChange,
  sealExplanation,
} from './store.js';

export type DisputeUpdateInput = OperationInput<Static<typeof DisputeUpdateBody>>;

/**
 * A change of an unsubmitted dispute past its deadline expires it, and the refusal (2743) is
 * answered with that expiry committed (a replay answers the same).
 */
export async function refuseIfPastDeadline(ctx: MerchantCtx, d: DisputeRow, what: string): Promise<void> {
  if (d.status !== 'unsubmitted' || !isPastDeadline(d, ctx.now)) return;
  await expireLocked(ctx, d);
  throw new CommittedFailure(
    new DomainError('disputeDeadline', `disputeId: the deadline (120 days after the clearing of ${d.clearing_date}) has passed; ${what}`),
  );
}

/** The 2742 refusal naming the status. */
export const notUnsubmitted = (d: DisputeRow, what: string) =>
  new DomainError('disputeState', `disputeId: the dispute is ${d.status}; only an unsubmitted dispute can be ${what}`);

/**
 * Changes an unsubmitted dispute (decisions §13.1): its reason, amount, explanation, and files
 * (`removeEvidence` by name first, then `evidence` added; at most 10 in all). Locks the card, then the
 * dispute (store.ts lockedDispute); every file is checked before anything is written.
 */
export async function updateDispute({ ctx, input }: { ctx: MerchantCtx; input: DisputeUpdateInput }): Promise<DisputeRecord> {
  const { dispute: d } = await lockedDispute(ctx, input.disputeId);
  await refuseIfPastDeadline(ctx, d, 'the dispute is expired');
  if (d.status !== 'unsubmitted') throw notUnsubmitted(d, 'changed');
  const files = (input.evidence ?? []).map((f, i) => checkEvidence(f, `evidence[${i}]`));
  const existing = await ctx.tx.selectFrom('dispute_evidence').select('file_name').where('dispute_id', '=', d.id).execute();
  const names = existing.map((e) => e.file_name);
  for (const [i, name] of (input.removeEvidence ?? []).entries()) {
    if (!names.includes(name)) throw new DomainError('disputeEvidence', `removeEvidence[${i}]: ${name} is not a file of this dispute`);
  }
  const kept = names.filter((n) => !(input.removeEvidence ?? []).includes(n));
  uniqueNames([...kept, ...files.map((f) => f.fileName)]);
  if (kept.length + files.length > MAX_EVIDENCE_FILES) {
    throw new DomainError(
      'disputeEvidence',
      `evidence: the dispute would have ${kept.length + files.length} files; at most ${MAX_EVIDENCE_FILES}`,
    );
  }
  const changes: Partial<DisputeRow> = {};
  if (input.reason !== undefined) changes.reason = input.reason;
  if (input.explanation !== undefined) changes.explanation_enc = sealExplanation(ctx.svc.box, d.id, input.explanation);
  if (input.amount !== undefined) {
    const trade = await tradeById(ctx.tx, d.merchant_id, d.trade_id);
    if (!trade) throw new Error(`dispute ${d.id}: trade ${d.trade_id} not found`);
    changes.amount = disputedAmount(input.amount, await disputableLeft(ctx, trade, d.id), d.currency);
  }
  if (input.removeEvidence && input.removeEvidence.length > 0) {
    await ctx.tx.deleteFrom('dispute_evidence').where('dispute_id', '=', d.id).where('file_name', 'in', input.removeEvidence).execute();
  }
  await insertEvidence(ctx, d, files);
  const after = await moveDispute(ctx, d, changes);
  await recordChange(ctx, after, {
    kind: 'updated',
    note: Object.keys(changes)
      .map((k) => k.replace(/_enc$/, ''))
      .concat(files.length ? ['evidence added'] : [], input.removeEvidence?.length ? ['evidence removed'] : [])
      .join(', '),
  });
  return queryDispute(ctx.tx, ctx.svc.box, ctx.merchantId, d.id, ctx.now);
}
