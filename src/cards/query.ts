import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import { parseControls, spendingState } from '../controls/spending.js';
import type { DB } from '../db/schema.js';
import { loadCard, toCardModel } from './model.js';
import type { CardQueryModelSchema } from './schemas.js';

export type CardQueryModel = Static<typeof CardQueryModelSchema>;

/** cardQuery: one of the merchant's cards, with what each spending limit that applies has left now. */
export async function queryCard(db: Kysely<DB>, merchantId: string, cardId: string, now: number): Promise<CardQueryModel> {
  const card = await loadCard(db, merchantId, cardId);
  const holder = await db.selectFrom('cardholders').select(['id', 'controls']).where('id', '=', card.holder_id).executeTakeFirstOrThrow();
  const spending = await spendingState(
    db,
    {
      card: { id: card.id, currency: card.currency, controls: parseControls(card.controls) },
      holder: { id: holder.id, controls: parseControls(holder.controls) },
    },
    now,
  );
  return { ...toCardModel(card), holderControls: parseControls(holder.controls), spending };
}
