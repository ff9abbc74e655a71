import type { Kysely } from 'kysely';
import type { CardRow } from '../cards/model.js';
import { presentedCardData } from '../cards/verification.js';
import { AuditStatus } from '../codes/audit-status.js';
import type { Services } from '../context.js';
import { forUpdate } from '../db/locks.js';
import { type DB, LIVE_TOKEN_STATUSES } from '../db/schema.js';
import type { ProvisionFacts } from './decide.js';
import type { TspProvisionRequest } from './schemas.js';

/** The card with a number's keyed hash (the number itself is never looked up or kept, decisions §15.7). */
export async function cardByAccountNumber(svc: Services, db: Kysely<DB>, pan: string): Promise<CardRow | null> {
  const hash = await svc.vault.hash(db, pan);
  return (await db.selectFrom('cards').selectAll().where('pan_hash', '=', hash).executeTakeFirst()) ?? null;
}

/** The card's row, locked (the first lock of a provisioning: a card before its tokens). */
export async function lockCardRow(db: Kysely<DB>, cardId: string): Promise<CardRow | null> {
  return (await forUpdate(db, db.selectFrom('cards').selectAll().where('id', '=', cardId)).executeTakeFirst()) ?? null;
}

/** What a card's merchant and cardholder bring to a provisioning: its settings, its notify URL, the holder's state. */
export async function partiesOf(db: Kysely<DB>, card: CardRow) {
  const row = await db
    .selectFrom('merchants')
    .innerJoin('cardholders', (join) => join.on('cardholders.id', '=', card.holder_id))
    .leftJoin('merchant_token_settings', 'merchant_token_settings.merchant_id', 'merchants.id')
    .select([
      'merchants.name as merchant_name',
      'merchants.notify_url',
      'merchants.webhook_secret_enc',
      'merchant_token_settings.decision_url',
      'merchant_token_settings.methods',
      'cardholders.audit_status',
      'cardholders.id as holder_id',
      'cardholders.identity_enc',
    ])
    .where('merchants.id', '=', card.merchant_id)
    .executeTakeFirst();
  return row ?? null;
}

/** The card's provisioning requests since a moment, other than `requestId`; and its live tokens (one statement). */
export async function cardCounts(db: Kysely<DB>, cardId: string, since: number, requestId: string) {
  const row = await db
    .selectNoFrom((eb) => [
      eb
        .selectFrom('token_provision_requests')
        .select((e) => e.fn.countAll<number>().as('n'))
        .where('card_id', '=', cardId)
        .where('created_at', '>', since)
        .where('request_id', '!=', requestId)
        .as('requests'),
      eb
        .selectFrom('tokens')
        .select((e) => e.fn.countAll<number>().as('n'))
        .where('card_id', '=', cardId)
        .where('status', 'in', [...LIVE_TOKEN_STATUSES])
        .as('live'),
    ])
    .executeTakeFirst();
  return { recentRequests: Number(row?.requests ?? 0), liveTokens: Number(row?.live ?? 0) };
}

export const DAY_MS = 24 * 3_600_000;

/**
 * The facts of decisions §15.3 for a card: its state, its holder's, its counts, and the expiry and
 * CVV2 as presented (the CVV2 compared in constant time, then forgotten). In a provisioning's
 * transaction after the card's lock, or outside one for the pre-check that decides whether the
 * merchant's endpoint is asked.
 */
export async function provisionFacts(
  svc: Services,
  db: Kysely<DB>,
  card: CardRow,
  holderStatus: number,
  req: TspProvisionRequest,
  now: number,
  verdict: ProvisionFacts['verdict'],
): Promise<ProvisionFacts> {
  const counts = await cardCounts(db, card.id, now - DAY_MS, req.requestId);
  const presented = await presentedCardData(svc, db, card, { expiry: req.expiry, cvv2: req.cvv2 }, req.accountNumber);
  return {
    card: { status: card.status, holderApproved: holderStatus === AuditStatus.approved },
    ...counts,
    mismatch: presented.expiry === 'mismatch' ? 'expiry' : presented.cvv2 === 'mismatch' ? 'cvv2' : null,
    verdict,
    walletRiskScore: req.walletRiskScore,
    walletReasonCodes: req.walletReasonCodes,
    limits: { perCard: svc.config.tokens.perCard, requestsPerDay: svc.config.tokens.requestsPerDay },
  };
}
