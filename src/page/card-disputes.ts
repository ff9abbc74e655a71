import type { Kysely } from 'kysely';
import { setCardFrozen } from '../cards/status.js';
import type { MerchantCtx, Services } from '../context.js';
import type { DB } from '../db/schema.js';
import { createDispute } from '../disputes/create.js';
import { DomainError } from '../errors.js';
import { runVerb } from '../runner.js';
import { tradeById } from '../trades/by-id.js';
import { tradesFollowing } from '../trades/card-history.js';
import { TradeStatus, TradeType } from '../trades/types.js';
import { sessionCard } from './holder-view.js';
import type { PageSession } from './links.js';

/**
 * "I don't recognise this" on the card page (issue 29.7): a cleared purchase of the session's own
 * card disputed as `fraudulent`, `unsubmitted`, for the merchant to complete and submit; the
 * card frozen at the same time when the cardholder asks. Both in one transaction, through the
 * dispute's and the freeze's own verbs, recorded in the audit trail with the cardholder as actor.
 */

/** What the merchant reads as the dispute's explanation (the cardholder types nothing on the page). */
export const PAGE_EXPLANATION = 'Reported on the card page: the cardholder does not recognise this purchase.';

/** A purchase's clearings (payments, tradeType 151, done) that may still be disputed. */
const clearings = (parts: Awaited<ReturnType<typeof tradesFollowing>>) =>
  parts.filter(
    (p) => p.trade_type === TradeType.payment && p.trade_status === TradeStatus.success && Number(p.refunded) < Number(p.amount),
  );

export interface PageDisputeInput {
  purchaseId: string;
  freeze: boolean;
}

/** The verb: a dispute on each clearing of the purchase without an open one, and the card frozen if asked. */
export async function reportUnrecognised({
  ctx,
  input,
}: {
  ctx: MerchantCtx;
  input: PageDisputeInput & { cardId: string };
}): Promise<{ purchaseId: string; disputeIds: string[]; frozen: boolean }> {
  const payments = clearings(await tradesFollowing(ctx.tx, [input.purchaseId])).filter((p) => p.card_id === input.cardId);
  const open = await openOn(
    ctx.tx,
    payments.map((p) => p.id),
  );
  if (payments.length === 0) {
    throw new DomainError('tradeState', 'tradeId: the purchase has no clearing left to dispute (pending, reversed or refunded)');
  }
  const todo = payments.filter((p) => !open.has(p.id));
  if (todo.length === 0) throw new DomainError('disputeOpen', 'tradeId: this purchase is already reported');
  const disputeIds: string[] = [];
  for (const p of todo) {
    const d = await createDispute({ ctx, input: { tradeId: p.id, reason: 'fraudulent', explanation: PAGE_EXPLANATION } });
    disputeIds.push(d.disputeId);
  }
  let frozen = false;
  if (input.freeze) {
    const card = await setCardFrozen({ ctx, input: { cardId: input.cardId, frozen: true, source: 'cardholder' } });
    frozen = card.status === 'frozen';
  }
  return { purchaseId: input.purchaseId, disputeIds, frozen };
}

async function openOn(db: Kysely<DB>, tradeIds: string[]): Promise<Set<string>> {
  if (tradeIds.length === 0) return new Set();
  const rows = await db
    .selectFrom('disputes')
    .select('trade_id')
    .where('trade_id', 'in', tradeIds)
    .where('status', 'in', ['unsubmitted', 'submitted'])
    .execute();
  return new Set(rows.map((r) => r.trade_id));
}

/**
 * From the page: the purchase must be one of the session's own card's (an approved cardholder's card
 * that is not closed) and of its merchant, else null (404) and nothing is written. A refusal of the
 * dispute (the deadline passed, nothing left) is a DomainError, and nothing is written either.
 */
export async function reportOnPage({
  svc,
  session,
  cardId,
  input,
  host,
}: {
  svc: Services;
  session: PageSession;
  cardId: string;
  input: PageDisputeInput;
  host: string;
}): Promise<{ disputeIds: string[]; frozen: boolean } | null> {
  const card = await sessionCard(svc, session, cardId);
  if (!card) return null;
  const purchase = await svc.database.read((db) => tradeById(db, session.merchantId, input.purchaseId));
  if (!purchase || purchase.card_id !== card.id || purchase.trade_type !== TradeType.authorization) return null;
  return runVerb(svc, reportUnrecognised, {
    input: { ...input, cardId: card.id, freeze: input.freeze && card.status === 'active' },
    merchantId: session.merchantId,
    actor: { kind: 'cardholder', via: 'page', holderId: card.holder_id, host: host.toLowerCase().slice(0, 200) },
    audit: { action: 'dispute.report', target: input.purchaseId },
  });
}
