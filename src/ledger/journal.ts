import { CompiledQuery, type Kysely, PostgresAdapter, sql } from 'kysely';
import { newId } from '../db/ids.js';
import { precompiled, preparedText, type Slots } from '../db/prepared.js';
import type { DB } from '../db/schema.js';
import { DomainError } from '../errors.js';
import { toMajor } from '../money/currency.js';
import type { FUNDING_MOVEMENT_KINDS } from './schemas.js';

/** The journal's accounts are named in src/codes/accounts.ts, the one table the ledger and its readers share. */
export { Account } from '../codes/accounts.js';

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
): Promise<string | null> {
  const rows = entryRows(entry);
  if (rows.length === 0) return null;
  await tx.insertInto('ledger_postings').values(rows).execute();
  return rows[0]?.entry_id ?? null;
}

/** A journal entry's rows, one per leg that moves money, under one new entry id; checked balanced first. */
export function entryRows(entry: { tradeId: string | null; currency: string; now: number; legs: Leg[] }) {
  const legs = entry.legs.filter((l) => l.amount !== 0);
  if (legs.length === 0) return [];
  const sum = legs.reduce((s, l) => s + l.amount, 0);
  if (sum !== 0 || legs.some((l) => !Number.isSafeInteger(l.amount))) {
    throw new Error(`unbalanced journal entry (${sum}) for trade ${entry.tradeId}`);
  }
  const entryId = newId('ent');
  return legs.map((l) => ({
    entry_id: entryId,
    trade_id: entry.tradeId,
    account: l.account,
    currency: entry.currency,
    amount: l.amount,
    created_at: entry.now,
  }));
}

/**
 * The most a card may hold, in minor units (10^14: a trillion in a 2-decimal currency). It keeps
 * every balance far inside the integers a double represents exactly (2^53), which both databases'
 * arithmetic on bound JavaScript numbers relies on.
 */
export const MAX_CARD_BALANCE = 100_000_000_000_000;

/** A card's balances moved, only if they stay within their bounds. Built once (src/db/prepared.ts). */
const cardBalances = precompiled(
  (db, slot: Slots<{ cardId: string; available: number; total: number; debt: number; now: number; floor: number; ceiling: number }>) =>
    db
      .updateTable('cards')
      .set((eb) => ({
        available_balance: eb('available_balance', '+', slot('available')),
        ledger_balance: eb('ledger_balance', '+', slot('total')),
        debt: eb('debt', '+', slot('debt')),
        updated_at: slot('now'),
      }))
      .where('id', '=', slot('cardId'))
      .where('available_balance', '>=', slot('floor'))
      .where('ledger_balance', '<=', slot('ceiling')),
);

/**
 * Moves a card's cached balances by the same amounts as its journal legs, in the same transaction.
 * One conditional update decides both limits, atomically under any interleaving on both databases:
 * the available balance stays ≥ 0 (2725) and the ledger balance at most the cap (2723). The caller
 * holds the card's row lock (lockCard), so the re-read that names the broken limit is exact. `debt`
 * is what the card's debt grows by (minus its journal leg): only a forced post makes it grow.
 */
export async function moveCardBalances(
  tx: Kysely<DB>,
  cardId: string,
  delta: { available: number; held: number; debt?: number },
  now: number,
): Promise<void> {
  const total = delta.available + delta.held;
  const res = await cardBalances.execute(tx, {
    cardId,
    available: delta.available,
    total,
    debt: delta.debt ?? 0,
    now,
    floor: -delta.available,
    ceiling: MAX_CARD_BALANCE - total,
  });
  if (Number(res.numAffectedRows) !== 1) await refuseCardBalance(tx, cardId, delta);
}

/** Why a card's balances could not move (the caller holds its lock, so the re-read is exact): 2725 or 2723. */
export async function refuseCardBalance(tx: Kysely<DB>, cardId: string, delta: { available: number }): Promise<never> {
  const card = await tx.selectFrom('cards').select('available_balance').where('id', '=', cardId).executeTakeFirstOrThrow();
  if (card.available_balance + delta.available < 0) throw new DomainError('insufficientBalance');
  throw new DomainError('incorrectAmount', 'amount: the card would hold more than the program allows');
}

/** A merchant's funding balance debited, only if it stays at or above zero. Built once (src/db/prepared.ts). */
const fundingDebit = precompiled((db, slot: Slots<{ merchantId: string; currency: string; delta: number; floor: number; now: number }>) =>
  db
    .updateTable('merchant_balances')
    .set((eb) => ({ available: eb('available', '+', slot('delta')), seq: eb('seq', '+', 1), updated_at: slot('now') }))
    .where('merchant_id', '=', slot('merchantId'))
    .where('currency', '=', slot('currency'))
    .where('available', '>=', slot('floor'))
    .returning(['available', 'seq']),
);

/** PostgreSQL: a funding debit (as `fundingDebit`) and its statement line, one statement; no row when the balance is short. */
const DEBIT_WITH_LINE = preparedText(`with b as (
  update merchant_balances set available = available + $3, seq = seq + 1, updated_at = $5
  where merchant_id = $1 and currency = $2 and available >= $4
  returning available, seq
)
insert into funding_movements (merchant_id, currency, seq, kind, amount, balance, reference, card_id, trade_id, credit_id, created_at)
select $1, $2, b.seq, $6, $3, b.available, $7, $8, $9, $10, $5 from b
returning seq`);

/** Why a merchant's funding could not be debited by `delta` (< 0): 2726, naming what is available. */
export async function refuseFunding(tx: Kysely<DB>, merchantId: string, currency: string, delta: number): Promise<never> {
  const row = await tx
    .selectFrom('merchant_balances')
    .select('available')
    .where('merchant_id', '=', merchantId)
    .where('currency', '=', currency)
    .executeTakeFirst();
  const available = toMajor(row?.available ?? 0, currency);
  throw new DomainError(
    'insufficientFunding',
    `amount: the merchant's ${currency} funding balance is ${available} ${currency}, ${toMajor(-delta, currency)} ${currency} needed`,
  );
}

/** A line of the funding statement (docs/funding.md): what moved the balance, and what it concerns. */
export interface FundingMovement {
  kind: (typeof FUNDING_MOVEMENT_KINDS)[number];
  reference: string;
  cardId?: string | null;
  tradeId?: string | null;
  creditId?: string | null;
}

/** The statement's line, numbered and with the balance after it, both read under the balance row's lock. Built once. */
const movementInsert = precompiled(
  (
    db,
    slot: Slots<{
      merchantId: string;
      currency: string;
      seq: number;
      kind: string;
      amount: number;
      balance: number;
      reference: string;
      cardId: string | null;
      tradeId: string | null;
      creditId: string | null;
      now: number;
    }>,
  ) =>
    db.insertInto('funding_movements').values({
      merchant_id: slot('merchantId'),
      currency: slot('currency'),
      seq: slot('seq'),
      kind: slot('kind'),
      amount: slot('amount'),
      balance: slot('balance'),
      reference: slot('reference'),
      card_id: slot('cardId'),
      trade_id: slot('tradeId'),
      credit_id: slot('creditId'),
      created_at: slot('now'),
    }),
);

/**
 * Moves a merchant's funding balance in one currency with its journal leg. A debit is one
 * conditional update (never below zero: 2726, naming what is available); a credit creates the row
 * on first use. Merchant balance rows are the last rows a transaction locks (docs/architecture.md).
 */
export async function moveMerchantFunding(
  tx: Kysely<DB>,
  merchantId: string,
  currency: string,
  delta: number,
  now: number,
  movement: FundingMovement,
): Promise<void> {
  const line = {
    merchantId,
    currency,
    kind: movement.kind,
    amount: delta,
    reference: movement.reference,
    cardId: movement.cardId ?? null,
    tradeId: movement.tradeId ?? null,
    creditId: movement.creditId ?? null,
    now,
  };
  let after: { available: number; seq: number } | undefined;
  if (delta < 0) {
    if (tx.getExecutor().adapter instanceof PostgresAdapter) {
      // PostgreSQL: the debit and its statement line in one round trip (the row stays locked to the commit).
      const { rows } = await tx.executeQuery<{ seq: number }>(
        CompiledQuery.raw(DEBIT_WITH_LINE, [
          merchantId,
          currency,
          delta,
          -delta,
          now,
          line.kind,
          line.reference,
          line.cardId,
          line.tradeId,
          line.creditId,
        ]),
      );
      if (rows.length === 1) return;
    } else {
      const res = await fundingDebit.execute(tx, { merchantId, currency, delta, floor: -delta, now });
      after = res.rows[0];
    }
    if (!after) return refuseFunding(tx, merchantId, currency, delta);
  } else {
    after = await tx
      .insertInto('merchant_balances')
      .values({ merchant_id: merchantId, currency, available: delta, seq: 1, updated_at: now })
      .onConflict((oc) =>
        oc.columns(['merchant_id', 'currency']).doUpdateSet({
          available: sql<number>`merchant_balances.available + ${delta}`,
          seq: sql<number>`merchant_balances.seq + 1`,
          updated_at: now,
        }),
      )
      .returning(['available', 'seq'])
      .executeTakeFirstOrThrow();
  }
  // The statement's line, still under the row's lock: numbered without gaps in commit order.
  await movementInsert.execute(tx, { ...line, seq: Number(after.seq), balance: Number(after.available) });
}
