import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import type { DB, TokenStatus } from '../db/schema.js';
import { DomainError } from '../errors.js';
import type { OperationInput } from '../operation-input.js';
import type { Token, TokenListBody } from './schemas.js';
import { historyOf, listTokens, tokenById, toToken } from './store.js';

/** A page of tokens when the request names none (tokenList). */
export const DEFAULT_TOKEN_PAGE = 30;

/**
 * One token as tokenQuery gives it (decisions §15.6): the merchant's own (another merchant's is
 * 2760, as an unknown one); null merchant: the operator, any token. A read: no transaction of its own.
 */
export async function queryToken(db: Kysely<DB>, merchantId: string | null, tokenId: string): Promise<Token> {
  const row = await tokenById(db, tokenId);
  if (!row || (merchantId !== null && row.merchant_id !== merchantId)) throw new DomainError('tokenNotFound');
  return toToken(row, await historyOf(db, row.id));
}

/** The merchant's tokens, newest first, by card and status, paged (tokenList); another merchant's card lists nothing. */
export function listMerchantTokens(
  db: Kysely<DB>,
  merchantId: string,
  input: OperationInput<Static<typeof TokenListBody>>,
): Promise<{ total: number; tokens: Token[] }> {
  return listTokens(db, {
    merchantId,
    cardId: input.cardId,
    status: input.status,
    start: input.start,
    limit: input.limit ?? DEFAULT_TOKEN_PAGE,
  });
}

/** What the operator's list shows of a token: the token and whose card it is on. */
export type OperatorToken = Token & { merchantId: string };

/**
 * Tokens for the operator (`cardprogram tokens list`): any merchant's, by merchant, card and status,
 * newest first, at most `limit`.
 */
export async function operatorTokens(
  db: Kysely<DB>,
  filter: { merchantId?: string | undefined; cardId?: string | undefined; status?: TokenStatus | undefined; limit: number },
): Promise<OperatorToken[]> {
  let q = db.selectFrom('tokens').selectAll();
  if (filter.merchantId !== undefined) q = q.where('merchant_id', '=', filter.merchantId);
  if (filter.cardId !== undefined) q = q.where('card_id', '=', filter.cardId);
  if (filter.status !== undefined) q = q.where('status', '=', filter.status);
  const rows = await q.orderBy('created_at', 'desc').orderBy('id').limit(filter.limit).execute();
  const out: OperatorToken[] = [];
  for (const row of rows) out.push({ merchantId: row.merchant_id, ...toToken(row, await historyOf(db, row.id)) });
  return out;
}
