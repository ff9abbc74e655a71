import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import { notifyMerchant } from '../callbacks/merchant-event.js';
import { AuditStatus } from '../codes/audit-status.js';
import type { TxCtx, VerbCtx } from '../context.js';
import type { CardStatus, DB, StatusSource } from '../db/schema.js';
import { DomainError } from '../errors.js';
import type { OperationInput } from '../operation-input.js';
import { type CardModel, type CardRow, toCardModel } from './model.js';
import type { CardStatusBody } from './schemas.js';
import { recordCardStatus } from './status-events.js';

/**
 * Precedence of who sets a card's status (decisions §11): a freeze by a higher party takes over a
 * lower one's; a freeze is lifted only by its own party or the operator. `security` (the service,
 * after repeated card verification failures, decisions §12.13) ranks with the merchant: it takes
 * over a cardholder's freeze, the merchant's stays, and the merchant may lift it.
 */
const RANK: Record<StatusSource, number> = { cardholder: 1, merchant: 2, security: 2, operator: 3 };

/** Whether a freeze by `source` takes over one by `by`. */
export const outranks = (source: StatusSource, by: StatusSource) => RANK[source] > RANK[by];

/**
 * Who may lift a freeze by `by`: its own party and the operator; a security freeze also the merchant
 * (whose program it protects), never the cardholder (a thief with the card page would lift it).
 */
const mayLift = (source: StatusSource, by: StatusSource) =>
  source === by || source === 'operator' || (by === 'security' && source === 'merchant');

/** Who a `card.status` event names as `actor` (kept for compatibility; `source` says the same). */
export type StatusActor = StatusSource | 'review';

/**
 * A freeze, unfreeze or close: the body (`cardId`, `reason`: ≤ 200 characters, "" or absent: none)
 * without the signed envelope, and who asks (not in the body: the route says merchant, the page
 * cardholder, the console and the CLI operator).
 */
export type StatusChangeInput = Omit<OperationInput<Static<typeof CardStatusBody>>, 'reason'> & {
  source: StatusSource;
  /** The console and the CLI send null for none. */
  reason?: string | null | undefined;
  /** Defaults to the source; `review` when a withdrawn approval freezes the cards. */
  actor?: StatusActor;
};

/** The card as the change will act on it: the merchant's own (null: the operator's CLI, any card). */
export async function cardForChange(ctx: TxCtx, merchantId: string | null, cardId: string): Promise<CardRow> {
  let q = ctx.tx.selectFrom('cards').selectAll().where('id', '=', cardId);
  if (merchantId !== null) q = q.where('merchant_id', '=', merchantId);
  const card = await q.executeTakeFirst();
  if (!card) throw new DomainError('cardNotFound');
  return card;
}

/**
 * Writes a status only if the card still has the status and source it was decided on, so two
 * concurrent changes cannot both apply a decision valid only before the other (on PostgreSQL the
 * update waits for the other's row lock, then re-checks its condition). False: decide again.
 */
export async function applyStatus(
  ctx: TxCtx,
  card: CardRow,
  next: { status: CardStatus; source: StatusSource | null; reason: string | null },
): Promise<boolean> {
  const res = await ctx.tx
    .updateTable('cards')
    .set({
      status: next.status,
      status_source: next.source,
      status_reason: next.reason,
      updated_at: ctx.now,
      // An unfreeze resets the card verification count (decisions §12.13): whoever lifted it vouched for the card.
      ...(next.status === 'active' ? { verification_failures: null } : {}),
    })
    .where('id', '=', card.id)
    .where('status', '=', card.status)
    .where((eb) => (card.status_source === null ? eb('status_source', 'is', null) : eb('status_source', '=', card.status_source)))
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** A change (not a repeat) sends the merchant a `card.status` callback, in the same transaction. */
export async function statusEvent(ctx: TxCtx, model: CardModel, merchantId: string, actor: StatusActor): Promise<void> {
  await notifyMerchant(ctx, {
    merchantId,
    type: 'card.status',
    // The card's own sequence: ordered with its trade events.
    subject: `card:${model.cardId}`,
    body: {
      cardId: model.cardId,
      cardNo: model.cardNo,
      currency: model.currency,
      status: model.status,
      actor,
      source: model.statusSource,
      reason: model.statusReason,
    },
  });
}

/**
 * What every change of a card's status does once its row is written, in the change's transaction:
 * the merchant's `card.status` callback, and what follows the card (its wallet tokens suspended,
 * resumed or deleted, decisions §15.4: `svc.cardLife`, handed in by src/services.ts).
 */
export async function cardChanged(ctx: VerbCtx, model: CardModel, merchantId: string, actor: StatusActor): Promise<void> {
  await statusEvent(ctx, model, merchantId, actor);
  await ctx.svc.cardLife(ctx, { cardId: model.cardId, status: model.status });
}

export const reasonOf = (reason: string | null | undefined): string | null => (reason ? reason.slice(0, 200) : null);

/** The 2727 message: who froze the card and who may lift it. */
function liftedOnlyBy(source: StatusSource): string {
  if (source === 'security') {
    return 'cardId: frozen for security after repeated card verification failures (CVV2 or expiry); only the merchant or the operator can unfreeze it';
  }
  const who = source === 'operator' ? 'the operator' : `the ${source} or the operator`;
  return `cardId: frozen by the ${source}; only ${who} can unfreeze it`;
}

/**
 * Freezes or unfreezes a card. A frozen card declines authorizations (2724) but can still be
 * funded and still settles what it authorized before. Freezing records who froze it and why; a
 * freeze by a party of higher precedence takes over (new source and reason, a callback), one by an
 * equal or lower party is answered as is. Unfreezing is allowed to the freeze's own source or the
 * operator (2727 otherwise) and needs an approved cardholder (2607). A closed card is final (2724).
 * Without `ctx.merchantId` (the operator's CLI) any merchant's card may be changed.
 */
export async function setCardFrozen({ ctx, input }: { ctx: VerbCtx; input: StatusChangeInput & { frozen: boolean } }): Promise<CardModel> {
  for (let attempt = 1; ; attempt++) {
    const card = await cardForChange(ctx, ctx.merchantId ?? null, input.cardId);
    if (card.status === 'closed') throw new DomainError('cardStatus', 'cardId: the card is closed');
    // A frozen card without a recorded source predates sources: only the operator lifts it.
    const by: StatusSource = card.status_source ?? 'operator';
    let next: { status: CardStatus; source: StatusSource | null; reason: string | null };
    if (input.frozen) {
      if (card.status === 'frozen' && !outranks(input.source, by)) return toCardModel(card);
      next = { status: 'frozen', source: input.source, reason: reasonOf(input.reason) };
    } else {
      if (card.status === 'active') return toCardModel(card);
      if (!mayLift(input.source, by)) throw new DomainError('statusSource', liftedOnlyBy(by));
      const holder = await ctx.tx
        .selectFrom('cardholders')
        .select('audit_status')
        .where('id', '=', card.holder_id)
        .executeTakeFirstOrThrow();
      if (holder.audit_status !== AuditStatus.approved) {
        throw new DomainError(
          'holderNotApproved',
          `cardId: the cardholder's auditStatus is ${holder.audit_status}; a card is unfrozen only for an approved cardholder`,
        );
      }
      next = { status: 'active', source: null, reason: null };
    }
    if (await applyStatus(ctx, card, next)) {
      // Under the row lock just taken: `ledger check` proves from these that nothing was spent after it.
      await recordCardStatus(ctx.tx, card.id, next.status, ctx.now);
      const model = toCardModel({
        ...card,
        status: next.status,
        status_source: next.source,
        status_reason: next.reason,
        updated_at: ctx.now,
      });
      await cardChanged(ctx, model, card.merchant_id, input.actor ?? input.source);
      return model;
    }
    if (attempt === 3) throw new DomainError('cardStatus', 'cardId: the card’s status changed concurrently; try again');
  }
}

/** A card's status before a change, for the change's audit record; null for no such card. */
export async function statusBefore(tx: Kysely<DB>, cardId: string) {
  const row = await tx.selectFrom('cards').select(['status', 'status_source', 'status_reason']).where('id', '=', cardId).executeTakeFirst();
  return row ? { status: row.status, statusSource: row.status_source, statusReason: row.status_reason } : null;
}
