import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { latestTradeSeq } from '../trades/books.js';

/**
 * Records a change of a card's status, after the card's row was updated (so under its row lock).
 * `after_seq` is the largest trade seq then: every trade of this card with a larger seq was booked
 * after the change, which is how `ledger check` proves that nothing was spent on a frozen card.
 */
export async function recordCardStatus(tx: Kysely<DB>, cardId: string, status: string, now: number): Promise<void> {
  await tx
    .insertInto('card_status_events')
    .values({
      card_id: cardId,
      status,
      after_seq: latestTradeSeq(),
      created_at: now,
    })
    .execute();
}
