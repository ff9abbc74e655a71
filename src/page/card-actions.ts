import { type CardDetails, revealCard } from '../cards/details.js';
import type { CardModel } from '../cards/model.js';
import { setCardFrozen } from '../cards/status.js';
import type { Services } from '../context.js';
import { newId } from '../db/ids.js';
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
  await svc.database.write((tx) =>
    tx
      .insertInto('card_reveals')
      .values({
        id: newId('rvl'),
        merchant_id: session.merchantId,
        card_id: card.id,
        session_hash: session.idHash,
        host: host.toLowerCase(),
        created_at: svc.clock(),
      })
      .execute(),
  );
  svc.log.info({ cardId: card.id }, 'card details revealed on the page');
  return revealCard({ db: svc.database.db, vault: svc.vault, merchantId: session.merchantId, cardId: card.id });
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
}: {
  svc: Services;
  session: PageSession;
  cardId: string;
  frozen: boolean;
}): Promise<CardModel | null> {
  const card = await sessionCard(svc, session, cardId);
  if (!card) return null;
  const model = await svc.database.withTx((tx) =>
    setCardFrozen({
      ctx: { tx, now: svc.clock() },
      merchantId: session.merchantId,
      input: { cardId: card.id, frozen, actor: 'cardholder' },
    }),
  );
  svc.notifier.poke();
  return model;
}

/** The merchant's name, shown at the top of its users' page. */
export async function merchantName(svc: Services, merchantId: string): Promise<string> {
  const row = await svc.database.db.selectFrom('merchants').select('name').where('id', '=', merchantId).executeTakeFirst();
  return row?.name ?? 'Virtual card';
}
