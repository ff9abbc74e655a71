import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import type { DB } from '../db/schema.js';
import type { PanVault } from '../vault/pan-vault.js';
import { loadCard } from './model.js';
import type { CardDetailsSchema } from './schemas.js';

export type CardDetails = Static<typeof CardDetailsSchema>;

/**
 * The full card number, expiry (MM/YY) and CVV. Only the sandbox card-details operation and the
 * cardholder page call this; the result must never be logged.
 */
export async function revealCard({
  db,
  vault,
  merchantId,
  cardId,
}: {
  db: Kysely<DB>;
  vault: PanVault;
  merchantId: string;
  cardId: string;
}): Promise<CardDetails> {
  const card = await loadCard(db, merchantId, cardId);
  const pan = await vault.decrypt(db, card.id, card.pan_enc, card.pan_key_id);
  return {
    cardId: card.id,
    cardNo: pan,
    expiry: `${String(card.expiry_month).padStart(2, '0')}/${String(card.expiry_year % 100).padStart(2, '0')}`,
    cvv: await vault.cvv(db, pan, card.expiry_month, card.expiry_year),
  };
}
