import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import { parseDate } from '../dates.js';
import type { DB } from '../db/schema.js';
import { DomainError, invalid } from '../errors.js';
import type { OperationInput } from '../operation-input.js';
import type { AuthenticationRecord, ThreeDsListBody } from './schemas.js';
import { type AuthenticationRow, toAuthenticationRecord } from './store.js';

const DAY_MS = 86_400_000;

async function withTrades(db: Kysely<DB>, rows: AuthenticationRow[]): Promise<AuthenticationRecord[]> {
  if (rows.length === 0) return [];
  const uses = await db
    .selectFrom('three_ds_uses')
    .select(['acs_trans_id', 'trade_id'])
    .where(
      'acs_trans_id',
      'in',
      rows.map((r) => r.acs_trans_id),
    )
    .orderBy('created_at')
    .orderBy('trade_id')
    .execute();
  return rows.map((r) =>
    toAuthenticationRecord(
      r,
      uses.filter((u) => u.acs_trans_id === r.acs_trans_id).map((u) => u.trade_id),
    ),
  );
}

/**
 * One authentication of the merchant's cards (null merchant: the operator's, any), or 2750: another
 * merchant's is answered as an unknown one, and so is an AReq for a number no card has.
 */
export async function queryAuthentication(db: Kysely<DB>, merchantId: string | null, acsTransId: string): Promise<AuthenticationRecord> {
  let q = db.selectFrom('three_ds_authentications').selectAll().where('acs_trans_id', '=', acsTransId).where('card_id', 'is not', null);
  if (merchantId !== null) q = q.where('merchant_id', '=', merchantId);
  const row = await q.executeTakeFirst();
  if (!row) throw new DomainError('authenticationNotFound', 'acsTransID: authentication not found');
  const [record] = await withTrades(db, [row]);
  return record as AuthenticationRecord;
}

export type ThreeDsListInput = OperationInput<Static<typeof ThreeDsListBody>>;

/** A merchant's authentications, newest first, by card and day of creation (UTC), paged (decisions §14.6). */
export async function listAuthentications(
  db: Kysely<DB>,
  merchantId: string,
  input: ThreeDsListInput,
): Promise<{ total: number; authentications: AuthenticationRecord[] }> {
  const from = input.from === undefined ? null : parseDate(input.from);
  const to = input.to === undefined ? null : parseDate(input.to);
  if (input.from !== undefined && !from) throw invalid('from', 'must be a real date written yyyy-MM-dd');
  if (input.to !== undefined && !to) throw invalid('to', 'must be a real date written yyyy-MM-dd');
  if (from && to && to < from) throw invalid('to', 'must not be before from');
  let q = db.selectFrom('three_ds_authentications').where('merchant_id', '=', merchantId);
  if (input.cardId) q = q.where('card_id', '=', input.cardId);
  if (from) q = q.where('created_at', '>=', from.getTime());
  if (to) q = q.where('created_at', '<', to.getTime() + DAY_MS);
  const total = Number((await q.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
  const rows = await q
    .selectAll()
    .orderBy('created_at', 'desc')
    .orderBy('acs_trans_id', 'desc')
    .limit(input.limit ?? 30)
    .offset(input.start)
    .execute();
  return { total, authentications: await withTrades(db, rows) };
}
