import type { Kysely } from 'kysely';
import { newId } from '../db/ids.js';
import type { DB } from '../db/schema.js';
import { DomainError } from '../errors.js';

/**
 * Accounts of the double-entry journal. A card has two: what the holder can spend (`available`)
 * and what authorizations hold (`held`); its ledger balance is their sum. The program's accounts
 * are the other side of every card movement.
 */
export const Account = {
  available: (cardId: string) => `card:${cardId}:available`,
  held: (cardId: string) => `card:${cardId}:held`,
  funding: 'program:funding',
  settlement: 'program:settlement',
  fees: 'program:fees',
} as const;

export interface Leg {
  account: string;
  /** Signed minor units: what the account gains. */
  amount: number;
}

/**
 * Writes one journal entry. Its legs must balance to zero: a bug that would create or destroy money
 * fails here, inside the transaction, instead of being committed.
 */
export async function postEntry(
  tx: Kysely<DB>,
  entry: { tradeId: string | null; currency: string; now: number; legs: Leg[] },
): Promise<void> {
  const legs = entry.legs.filter((l) => l.amount !== 0);
  if (legs.length === 0) return;
  const sum = legs.reduce((s, l) => s + l.amount, 0);
  if (sum !== 0 || legs.some((l) => !Number.isSafeInteger(l.amount))) {
    throw new Error(`unbalanced journal entry (${sum}) for trade ${entry.tradeId}`);
  }
  const entryId = newId('ent');
  await tx
    .insertInto('ledger_postings')
    .values(
      legs.map((l) => ({
        entry_id: entryId,
        trade_id: entry.tradeId,
        account: l.account,
        currency: entry.currency,
        amount: l.amount,
        created_at: entry.now,
      })),
    )
    .execute();
}

/**
 * Moves a card's cached balances by the same amounts as its journal legs, in the same transaction.
 * The available balance never goes below zero: the update only applies if it stays ≥ 0, which is
 * atomic under concurrency on both databases (2725 otherwise).
 */
/**
 * The most a card may hold, in minor units (10^14: a trillion in a 2-decimal currency). It keeps
 * every balance far inside the integers a double represents exactly (2^53), which both databases'
 * arithmetic on bound JavaScript numbers relies on.
 */
export const MAX_CARD_BALANCE = 100_000_000_000_000;

export async function moveCardBalances(
  tx: Kysely<DB>,
  cardId: string,
  delta: { available: number; held: number },
  now: number,
): Promise<void> {
  if (delta.available + delta.held > 0) {
    const card = await tx.selectFrom('cards').select('ledger_balance').where('id', '=', cardId).executeTakeFirstOrThrow();
    if (card.ledger_balance + delta.available + delta.held > MAX_CARD_BALANCE) {
      throw new DomainError('incorrectAmount', 'amount: the card would hold more than the program allows');
    }
  }
  const res = await tx
    .updateTable('cards')
    .set((eb) => ({
      available_balance: eb('available_balance', '+', delta.available),
      ledger_balance: eb('ledger_balance', '+', delta.available + delta.held),
      updated_at: now,
    }))
    .where('id', '=', cardId)
    .where('available_balance', '>=', -delta.available)
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) !== 1) throw new DomainError('insufficientBalance');
}
