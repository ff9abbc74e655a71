import { randomInt } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import type { Part, PartRows } from '../db/one-statement.js';
import { precompiled, type Slots } from '../db/prepared.js';
import type { DB } from '../db/schema.js';
import { DomainError } from '../errors.js';

/**
 * An authCode is six digits, unique per card (docs/transactions.md, "Authorization codes"): a
 * clearing (151), a reversal or a refund carries the code of the record it follows, and names that
 * record alone. The ISO 8583 link's field 38 will carry the same code.
 */
export const AUTH_CODE_DIGITS = 6;

/** How many codes there are to draw from: 10^6. Tests make it small to force collisions. */
export const authCodeSpace = { size: 10 ** AUTH_CODE_DIGITS };

/** Random draws before the free codes are listed and one of them taken. */
const DRAWS = 8;

export function drawAuthCode(): string {
  return String(randomInt(authCodeSpace.size)).padStart(AUTH_CODE_DIGITS, '0');
}

/** The claim: inserts nothing when the card already used the code. Built once (src/db/prepared.ts). */
const claim = precompiled((db, slot: Slots<{ cardId: string; code: string; tradeId: string }>) =>
  db
    .insertInto('trade_auth_codes')
    .values({ card_id: slot('cardId'), auth_code: slot('code'), trade_id: slot('tradeId') })
    .onConflict((oc) => oc.columns(['card_id', 'auth_code']).doNothing()),
);

async function tryClaim(tx: Kysely<DB>, cardIds: readonly string[], code: string, tradeId: string): Promise<boolean> {
  const claimed: string[] = [];
  for (const cardId of cardIds) {
    const res = await claim.execute(tx, { cardId, code, tradeId });
    if (Number(res.numAffectedRows ?? 0) !== 1) {
      // Taken on this card: give back what this draw claimed on the cards before it (a transfer's two).
      for (const c of claimed) {
        await tx.deleteFrom('trade_auth_codes').where('card_id', '=', c).where('auth_code', '=', code).execute();
      }
      return false;
    }
    claimed.push(cardId);
  }
  return true;
}

/**
 * A code that none of the cards has used, claimed for them in the caller's transaction (so a
 * rollback frees it). The caller holds the cards' row locks, so no other transaction draws for them
 * meanwhile; on PostgreSQL the primary key would make a concurrent claim wait and then insert
 * nothing all the same. Collisions redraw; after a few, one of the free codes is taken.
 */
export async function claimAuthCode(tx: Kysely<DB>, cardIds: readonly string[], tradeId: string): Promise<string> {
  for (let i = 0; i < DRAWS; i++) {
    const code = drawAuthCode();
    if (await tryClaim(tx, cardIds, code, tradeId)) return code;
  }
  const used = new Set(
    (
      await tx
        .selectFrom('trade_auth_codes')
        .select('auth_code')
        .where('card_id', 'in', [...cardIds])
        .execute()
    ).map((r) => r.auth_code),
  );
  const free: string[] = [];
  for (let n = 0; n < authCodeSpace.size && free.length < 1000; n++) {
    const code = String(n).padStart(AUTH_CODE_DIGITS, '0');
    if (!used.has(code)) free.push(code);
  }
  const code = free[randomInt(Math.max(free.length, 1))];
  if (code !== undefined && (await tryClaim(tx, cardIds, code, tradeId))) return code;
  throw new DomainError('internal', 'authCode: every code of this card is used');
}

/**
 * A write in one statement (src/ledger/book-at-once.ts) draws its candidates before it knows which
 * are free: its first statement reads which of them the card has used (`usedCodesPart`), its last
 * claims the first free one (`claimPart`).
 */
export function codeCandidates(): string[] {
  return [...new Set(Array.from({ length: DRAWS }, drawAuthCode))];
}

export function usedCodesPart(tx: Kysely<DB>, cardId: string, candidates: readonly string[]): Part {
  return {
    name: 'usedCodes',
    rows: true,
    query: tx
      .selectFrom('trade_auth_codes')
      .select('auth_code')
      .where('card_id', '=', cardId)
      .where('auth_code', 'in', [...candidates]),
  };
}

/** The first candidate the card has not used, if any. */
export function freeCandidate(candidates: readonly string[], rows: PartRows): string | undefined {
  const used = new Set((rows.usedCodes ?? []).map((r) => String(r.auth_code)));
  return candidates.find((c) => !used.has(c));
}

export function claimPart(tx: Kysely<DB>, cardId: string, code: string, tradeId: string): Part {
  return {
    name: 'code',
    rows: true,
    query: tx
      .insertInto('trade_auth_codes')
      .values({ card_id: cardId, auth_code: code, trade_id: tradeId })
      .onConflict((oc) => oc.columns(['card_id', 'auth_code']).doNothing())
      .returning(sql<number>`1`.as('claimed')),
  };
}

/**
 * The code was claimed by a transaction that committed while this one waited for the card's lock
 * (PostgreSQL: the first statement read the codes as they were when it began). Never on SQLite,
 * where the read and the claim are in one write transaction. Rare (a chance in 10^6 per code the card
 * used meanwhile); the transaction is run again, whole, as after a serialization conflict.
 */
export class CodeTakenMeanwhile extends Error {
  /** Read by withTx (src/db/index.ts, lostConflict) as a serialization conflict: tried again. */
  readonly code = '40001';
}

export function checkClaim(rows: PartRows): void {
  if ((rows.code ?? []).length !== 1) throw new CodeTakenMeanwhile('authCode: claimed meanwhile by another transaction');
}
