import { type CardDetails, revealCard } from '../cards/details.js';
import type { CardModel } from '../cards/model.js';
import { setCardFrozen } from '../cards/status.js';
import type { MerchantCtx, Services } from '../context.js';
import { newId } from '../db/ids.js';
import { runVerb } from '../runner.js';
import { sessionCard } from './holder-view.js';
import type { PageSession } from './links.js';

/**
 * "Show card details" on the page: one of the session's own active cards, recorded in
 * `card_reveals` before anything is decrypted (no reveal without its record). Null when the card
 * is not the session's; 'notActive' for a frozen or closed card.
 */
export async function revealOnPage({
  svc,
  session,
  cardId,
  host,
}: {
  svc: Services;
  session: PageSession;
  cardId: string;
  host: string;
}): Promise<CardDetails | 'notActive' | null> {
  const card = await sessionCard(svc, session, cardId);
  if (!card) return null;
  if (card.status !== 'active') return 'notActive';
  await runVerb(svc, recordReveal, {
    input: { cardId: card.id, sessionHash: session.idHash, host },
    merchantId: session.merchantId,
    actor: { kind: 'cardholder', via: 'page', holderId: card.holder_id, host },
  });
  svc.log.info({ cardId: card.id }, 'card details revealed on the page');
  return svc.database.read((db) => revealCard({ db, vault: svc.vault, merchantId: session.merchantId, cardId: card.id }));
}

/** A reveal's record: which session saw which card's details, on which host, when. */
async function recordReveal({
  ctx,
  input,
}: {
  ctx: MerchantCtx;
  input: { cardId: string; sessionHash: string; host: string };
}): Promise<void> {
  await ctx.tx
    .insertInto('card_reveals')
    .values({
      id: newId('rvl'),
      merchant_id: ctx.merchantId,
      card_id: input.cardId,
      session_hash: input.sessionHash,
      host: input.host.toLowerCase(),
      created_at: ctx.now,
    })
    .execute();
}

/**
 * Freeze or unfreeze from the page, as the cardholder (the merchant gets its `card.status`
 * callback). Null when the card is not the session's; a DomainError when the change is not allowed.
 */
export async function setFrozenOnPage({
  svc,
  session,
  cardId,
  frozen,
  host,
}: {
  svc: Services;
  session: PageSession;
  cardId: string;
  frozen: boolean;
  host: string;
}): Promise<CardModel | null> {
  const card = await sessionCard(svc, session, cardId);
  if (!card) return null;
  return runVerb(svc, setCardFrozen, {
    input: { cardId: card.id, frozen, source: 'cardholder' },
    merchantId: session.merchantId,
    actor: { kind: 'cardholder', via: 'page', holderId: card.holder_id, host },
  });
}

/** The merchant's name, shown at the top of its users' page. */
export async function merchantName(svc: Services, merchantId: string): Promise<string> {
  const row = await svc.database.read((db) => db.selectFrom('merchants').select('name').where('id', '=', merchantId).executeTakeFirst());
  return row?.name ?? 'Virtual card';
}
