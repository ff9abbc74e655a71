import type { Kysely, Selectable } from 'kysely';
import type { Static } from 'typebox';
import { parseControls } from '../controls/spending.js';
import type { CardsTable, DB } from '../db/schema.js';
import { DomainError } from '../errors.js';
import { toMajor } from '../money/currency.js';
import { maskPan } from './card-number.js';
import type { CardModelSchema } from './schemas.js';

export type CardRow = Selectable<CardsTable>;

/** The card as every operation returns it (decisions §6): never the full number. */
export type CardModel = Static<typeof CardModelSchema>;

export function maskedCardNo(card: Pick<CardRow, 'pan_first6' | 'pan_last4' | 'pan_length'>): string {
  return maskPan(card.pan_first6, card.pan_last4, card.pan_length);
}

export function toCardModel(card: CardRow): CardModel {
  return {
    cardId: card.id,
    cardNo: maskedCardNo(card),
    currency: card.currency,
    holderId: card.holder_id,
    status: card.status,
    statusSource: card.status_source,
    statusReason: card.status_reason,
    availableBalance: toMajor(card.available_balance, card.currency),
    // The card's net position (decisions §12.13): available + held − debt, negative while it owes more
    // than it has. The stored `ledger_balance` stays available + held (the cap's and the check's).
    ledgerBalance: toMajor(card.ledger_balance - Number(card.debt), card.currency),
    debtBalance: toMajor(Number(card.debt), card.currency),
    controls: parseControls(card.controls),
  };
}

/** One merchant's card; another merchant's is answered exactly as an unknown one (2648). */
export async function loadCard(db: Kysely<DB>, merchantId: string, cardId: string): Promise<CardRow> {
  const card = await db.selectFrom('cards').selectAll().where('id', '=', cardId).where('merchant_id', '=', merchantId).executeTakeFirst();
  if (!card) throw new DomainError('cardNotFound');
  return card;
}

/** Money may move only on an active card (2724 for a frozen or closed one). */
export function assertActive(card: CardRow): void {
  if (card.status !== 'active') throw new DomainError('cardStatus', `cardId: the card is ${card.status}`);
}

/** Today's business date (UTC) at `now`. */
export function businessDay(now: number): string {
  return new Date(now).toISOString().slice(0, 10);
}
