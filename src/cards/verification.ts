import { timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import { recordAudit } from '../audit/trail.js';
import type { Actor, Services, VerbCtx } from '../context.js';
import { forUpdate } from '../db/locks.js';
import type { DB } from '../db/schema.js';
import { DomainError } from '../errors.js';
import { type CardRow, toCardModel } from './model.js';
import { applyStatus, cardChanged, outranks } from './status.js';
import { recordCardStatus } from './status-events.js';

/**
 * Card verification (decisions §12.13, "Card verification failures are counted"): a CVV2 or expiry
 * that is not the card's, wherever it is presented (the card network link, the sandbox, 3-D Secure,
 * a wallet's provisioning), counts against the card; 5 within 24 hours freeze it with source
 * `security`, so that the 1 000 CVV2s cannot be tried one after the other. The count resets on an
 * approval that carried both and on an unfreeze. A value left out is not a mismatch: where it is
 * required, the caller declines without counting.
 */

/** Failures within the window that freeze the card. */
export const VERIFICATION_LIMIT = 5;
export const VERIFICATION_WINDOW_MS = 24 * 3_600_000;

export type VerificationKind = 'cvv2' | 'expiry';
/** Where the card data was presented: the link, the sandbox's authorize, 3-D Secure's AReq, a token provisioning request. */
export type VerificationVia = 'link' | 'sandbox' | '3ds' | 'tsp';

/** One value as presented: the card's, another, or not sent. */
export type Presented = 'match' | 'mismatch' | 'absent';

/** What an authorization's card data came to (src/ledger/authorize.ts decides on it under the card's lock). */
export interface CardVerification {
  expiry: Presented;
  cvv2: Presented;
  /** Whether leaving the CVV2 out declines (`card_verification_missing`): a key-entered or e-commerce message on the link. */
  cvv2Required: boolean;
  via: VerificationVia;
}

/** The card's expiry as YYMM. */
export const expiryOf = (card: Pick<CardRow, 'expiry_month' | 'expiry_year'>) =>
  `${String(card.expiry_year % 100).padStart(2, '0')}${String(card.expiry_month).padStart(2, '0')}`;

/**
 * Compares what was presented with the card (the CVV2 in constant time): `pan` when the caller has
 * it (the link), else it is opened from the vault. Nothing of it is kept or logged.
 */
export async function presentedCardData(
  svc: Services,
  db: Kysely<DB>,
  card: CardRow,
  given: { cvv2?: string | undefined; expiry?: string | undefined },
  pan?: string,
): Promise<{ expiry: Presented; cvv2: Presented }> {
  const expiry: Presented = given.expiry === undefined ? 'absent' : given.expiry === expiryOf(card) ? 'match' : 'mismatch';
  if (given.cvv2 === undefined) return { expiry, cvv2: 'absent' };
  const number = pan ?? (await svc.vault.decrypt(db, card.id, card.pan_enc, card.pan_key_id));
  const expected = await svc.vault.cvv(db, number, card.expiry_month, card.expiry_year);
  const same = given.cvv2.length === expected.length && timingSafeEqual(Buffer.from(given.cvv2), Buffer.from(expected));
  return { expiry, cvv2: same ? 'match' : 'mismatch' };
}

/** The failure a verification is declined for, first the expiry then the CVV2; `missing`: a required CVV2 left out; null: it passes. */
export function verificationFailure(v: CardVerification | undefined): VerificationKind | 'missing' | null {
  if (!v) return null;
  if (v.expiry === 'mismatch') return 'expiry';
  if (v.cvv2 === 'mismatch') return 'cvv2';
  if (v.cvv2 === 'absent' && v.cvv2Required) return 'missing';
  return null;
}

/** Whether an approval with this verification resets the card's count: it carried both, and both were the card's. */
export const verifiedBoth = (v: CardVerification | undefined) => v?.expiry === 'match' && v.cvv2 === 'match';

/** The moments of a card's failures still within the window at `now`. */
function failuresOf(card: Pick<CardRow, 'verification_failures'>, now: number): number[] {
  if (!card.verification_failures) return [];
  try {
    const list = JSON.parse(card.verification_failures) as unknown;
    return Array.isArray(list) ? list.filter((t): t is number => typeof t === 'number' && t > now - VERIFICATION_WINDOW_MS) : [];
  } catch {
    return [];
  }
}

/** How many failures count against the card now (its page in the console). */
export const failureCount = (card: Pick<CardRow, 'verification_failures'>, now: number) => failuresOf(card, now).length;

const SECURITY_REASON = `${VERIFICATION_LIMIT} card verification failures (CVV2 or expiry) within 24 hours`;

/**
 * Counts one CVV2 or expiry mismatch against the card, in the caller's transaction: the card's row
 * locked first (the lock order of docs/architecture.md, Concurrency: the card), so that concurrent
 * mismatches count one after the other and exactly the 5th freezes. The freeze takes over a
 * cardholder's (whom a thief may imitate), not the merchant's or the operator's, and a closed card
 * is left as it is. The freeze sends a `card.status` callback, goes in the audit trail under `by`
 * (the network for the link, the merchant for the sandbox), and is counted in the metrics. The one
 * function the link, the sandbox, 3-D Secure and token provisioning call.
 */
export async function recordVerificationFailure(
  ctx: VerbCtx,
  cardId: string,
  failure: { kind: VerificationKind; via: VerificationVia },
  by: Actor,
): Promise<{ failures: number; frozen: boolean }> {
  const card = await forUpdate(ctx.tx, ctx.tx.selectFrom('cards').selectAll().where('id', '=', cardId)).executeTakeFirst();
  if (!card) throw new DomainError('cardNotFound');
  const { svc } = ctx;
  ctx.afterCommit(() => svc.metrics.cardVerificationFailure(failure.kind, failure.via));
  if (card.status === 'closed') return { failures: 0, frozen: false };
  const failures = [...failuresOf(card, ctx.now), ctx.now].slice(-VERIFICATION_LIMIT);
  await ctx.tx
    .updateTable('cards')
    .set({ verification_failures: JSON.stringify(failures) })
    .where('id', '=', card.id)
    .execute();
  if (failures.length < VERIFICATION_LIMIT) return { failures: failures.length, frozen: false };
  if (card.status === 'frozen' && !outranks('security', card.status_source ?? 'operator'))
    return { failures: failures.length, frozen: false };
  const before = { status: card.status, statusSource: card.status_source, statusReason: card.status_reason };
  const next = { status: 'frozen' as const, source: 'security' as const, reason: SECURITY_REASON };
  // Under the lock just taken: the status read is the one the update replaces.
  if (!(await applyStatus(ctx, card, next)))
    throw new DomainError('cardStatus', 'cardId: the card’s status changed concurrently; try again');
  await recordCardStatus(ctx.tx, card.id, 'frozen', ctx.now);
  const model = toCardModel({ ...card, status: 'frozen', status_source: 'security', status_reason: SECURITY_REASON, updated_at: ctx.now });
  await cardChanged(ctx, model, card.merchant_id, 'security');
  await recordAudit(ctx.tx, { action: 'card.freeze', target: card.id, by }, ctx.now, before, {
    ...model,
    verificationFailures: failures.length,
    via: failure.via,
  });
  ctx.afterCommit(() => svc.metrics.securityFreeze(failure.via));
  return { failures: failures.length, frozen: true };
}

/** Resets the card's count (an approval that carried both), in the caller's transaction, which holds the card's lock. */
export async function resetVerificationFailures(tx: Kysely<DB>, cardId: string): Promise<void> {
  await tx.updateTable('cards').set({ verification_failures: null }).where('id', '=', cardId).execute();
}
