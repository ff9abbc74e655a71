import type { Kysely, Selectable } from 'kysely';
import { forUpdate } from '../db/locks.js';
import type { DB, TokenStatus, TokensTable } from '../db/schema.js';
import type { Token, TspAuthMethod } from './schemas.js';

/** A token's row as stored. */
export type TokenRow = Selectable<TokensTable>;

const iso = (ms: number | string) => new Date(Number(ms)).toISOString();

/** A token's history, oldest first. */
export async function historyOf(db: Kysely<DB>, tokenId: string): Promise<Token['history']> {
  const rows = await db.selectFrom('token_history').selectAll().where('token_id', '=', tokenId).orderBy('seq').execute();
  return rows.map((h) => ({ status: h.status, source: h.source, at: iso(h.at), reason: h.reason }));
}

/** The token as tokenQuery gives it (decisions §15.6), from its row and history. */
export function toToken(row: TokenRow, history: Token['history']): Token {
  return {
    tokenId: row.id,
    cardId: row.card_id,
    status: row.status,
    walletProvider: row.wallet_provider,
    tokenRequestorName: row.token_requestor_name,
    tokenLast4: row.token_last4,
    device: { type: row.device_type, name: row.device_name },
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    history,
  };
}

/** The token with its history, or null. */
export async function loadToken(db: Kysely<DB>, tokenId: string): Promise<Token | null> {
  const row = await tokenById(db, tokenId);
  return row ? toToken(row, await historyOf(db, row.id)) : null;
}

export async function tokenById(db: Kysely<DB>, tokenId: string): Promise<TokenRow | null> {
  return (await db.selectFrom('tokens').selectAll().where('id', '=', tokenId).executeTakeFirst()) ?? null;
}

export async function tokenByReference(db: Kysely<DB>, tokenReferenceId: string): Promise<TokenRow | null> {
  return (await db.selectFrom('tokens').selectAll().where('token_reference_id', '=', tokenReferenceId).executeTakeFirst()) ?? null;
}

/**
 * A token's row locked for a change (FOR UPDATE on PostgreSQL; SQLite's write transaction is
 * exclusive). Lock order: a card before its tokens (docs/architecture.md, Concurrency): a caller that
 * needs the card's lock takes it first.
 */
export async function lockToken(db: Kysely<DB>, by: { id: string } | { tokenReferenceId: string }): Promise<TokenRow | null> {
  const q = db.selectFrom('tokens').selectAll();
  const where = 'id' in by ? q.where('id', '=', by.id) : q.where('token_reference_id', '=', by.tokenReferenceId);
  return (await forUpdate(db, where).executeTakeFirst()) ?? null;
}

/** A card's tokens, newest first (optionally only some statuses). */
export async function tokensOfCard(db: Kysely<DB>, cardId: string, statuses?: readonly TokenStatus[]): Promise<TokenRow[]> {
  let q = db.selectFrom('tokens').selectAll().where('card_id', '=', cardId);
  if (statuses) q = q.where('status', 'in', [...statuses]);
  return q.orderBy('created_at', 'desc').orderBy('id').execute();
}

/** A merchant's tokens, newest first, a page of them with the total (tokenList, decisions §15.6). */
export async function listTokens(
  db: Kysely<DB>,
  filter: { merchantId: string; cardId?: string | undefined; status?: TokenStatus | undefined; start: number; limit: number },
): Promise<{ total: number; tokens: Token[] }> {
  let q = db.selectFrom('tokens').where('merchant_id', '=', filter.merchantId);
  if (filter.cardId !== undefined) q = q.where('card_id', '=', filter.cardId);
  if (filter.status !== undefined) q = q.where('status', '=', filter.status);
  const count = await q.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst();
  const rows = await q.selectAll().orderBy('created_at', 'desc').orderBy('id').offset(filter.start).limit(filter.limit).execute();
  const ids = rows.map((r) => r.id);
  const history =
    ids.length === 0 ? [] : await db.selectFrom('token_history').selectAll().where('token_id', 'in', ids).orderBy('seq').execute();
  const byToken = new Map<string, Token['history']>();
  for (const h of history) {
    const list = byToken.get(h.token_id) ?? [];
    list.push({ status: h.status, source: h.source, at: iso(h.at), reason: h.reason });
    byToken.set(h.token_id, list);
  }
  return { total: Number(count?.n ?? 0), tokens: rows.map((r) => toToken(r, byToken.get(r.id) ?? [])) };
}

/** The step-up methods offered to a pending token (stored masked; no address in clear). */
export function authMethodsOf(row: Pick<TokenRow, 'auth_methods'>): TspAuthMethod[] {
  if (!row.auth_methods) return [];
  try {
    const parsed = JSON.parse(row.auth_methods) as unknown;
    return Array.isArray(parsed) ? (parsed as TspAuthMethod[]) : [];
  } catch {
    return [];
  }
}

/**
 * Inserts a new token and its first history entry, in the caller's transaction; returns the token as
 * tokenQuery gives it, from what was written (not read back).
 */
export async function insertToken(
  tx: Kysely<DB>,
  row: TokenRow,
  first: { source: Selectable<DB['token_history']>['source']; reason: string | null },
): Promise<Token> {
  await tx.insertInto('tokens').values(row).execute();
  await tx
    .insertInto('token_history')
    .values({ token_id: row.id, seq: 1, status: row.status, source: first.source, at: row.created_at, reason: first.reason })
    .execute();
  return toToken(row, [{ status: row.status, source: first.source, at: iso(row.created_at), reason: first.reason }]);
}

/**
 * Appends one history entry (the next `seq`), in the caller's transaction, which holds the token's
 * lock; returns its `seq`: the order of the token's changes as their locks were taken (their `at`,
 * the moment each transaction began, may not be).
 */
export async function appendHistory(
  tx: Kysely<DB>,
  entry: { tokenId: string; status: TokenStatus; source: Selectable<DB['token_history']>['source']; at: number; reason: string | null },
): Promise<number> {
  const last = await tx
    .selectFrom('token_history')
    .select((eb) => eb.fn.max('seq').as('seq'))
    .where('token_id', '=', entry.tokenId)
    .executeTakeFirst();
  const seq = Number(last?.seq ?? 0) + 1;
  await tx
    .insertInto('token_history')
    .values({
      token_id: entry.tokenId,
      seq,
      status: entry.status,
      source: entry.source,
      at: entry.at,
      reason: entry.reason,
    })
    .execute();
  return seq;
}
