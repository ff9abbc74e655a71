import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import { maskedCardNo } from '../cards/model.js';
import type { DB } from '../db/schema.js';
import { DomainError } from '../errors.js';
import { tradeById } from './by-id.js';
import { networkOrigin } from './network-reads.js';
import { toAuthorization, toTradeRecord } from './record.js';
import type { TradeDetailSchema } from './schemas.js';
import { TradeType } from './types.js';

/** tradeQuery's answer: a record and, for an authorization, its acceptor and decision; the network message behind it. */
export type TradeDetail = Static<typeof TradeDetailSchema>;

/**
 * One of the merchant's trades by id (decisions §11): its 4.1 record and, for an authorization,
 * approved (its 150 trade's id) or declined (`dcl_…`, no record), the acceptor and the decision.
 * Another merchant's id is answered exactly as an unknown one (2730).
 */
export async function queryTrade({
  db,
  merchantId,
  tradeId,
}: {
  db: Kysely<DB>;
  merchantId: string;
  tradeId: string;
}): Promise<TradeDetail> {
  const [trade, authorization, authentication] = await Promise.all([
    tradeById(db, merchantId, tradeId),
    db.selectFrom('authorizations').selectAll().where('id', '=', tradeId).where('merchant_id', '=', merchantId).executeTakeFirst(),
    authenticationOf(db, merchantId, tradeId),
  ]);
  const cardId = trade?.card_id ?? authorization?.card_id;
  if (cardId === undefined) throw new DomainError('tradeState', 'tradeId: transaction not found');
  const card = await db
    .selectFrom('cards')
    .select(['pan_first6', 'pan_last4', 'pan_length'])
    .where('id', '=', cardId)
    .executeTakeFirstOrThrow();
  const cardNo = maskedCardNo(card);
  const isAuthorization = trade ? trade.trade_type === TradeType.authorization : authorization !== undefined;
  const day = trade?.business_date ?? authorization?.business_date;
  const origin = await networkOrigin(
    db,
    tradeId,
    trade?.original_id ?? null,
    isAuthorization && day !== undefined ? { cardId, businessDate: day } : null,
  );
  const rrn = origin ? (JSON.parse(origin.request) as Record<string, string>)['37']?.trim() : undefined;
  return {
    trade: trade ? toTradeRecord(trade, cardNo) : null,
    authorization: authorization ? toAuthorization(authorization, cardNo) : null,
    authentication,
    token: authorization?.token_id ? await tokenOf(db, cardId, authorization.token_id) : null,
    network: origin ? { rrn: rrn || null, acquirer: origin.acquirer, stan: origin.stan, mti: origin.mti } : null,
  };
}

/** The wallet token an authorization carried (decisions §15.5), of its card: its wallet and device now. */
async function tokenOf(db: Kysely<DB>, cardId: string, tokenId: string): Promise<TradeDetail['token']> {
  const row = await db
    .selectFrom('tokens')
    .select(['id', 'wallet_provider', 'device_type', 'device_name'])
    .where('id', '=', tokenId)
    .where('card_id', '=', cardId)
    .executeTakeFirst();
  if (!row) return null;
  return {
    tokenId: row.id,
    walletProvider: row.wallet_provider,
    device: { type: row.device_type, name: row.device_name },
  };
}

/** The 3-D Secure authentication an authorization carried the value of (decisions §14.5), of the merchant's card; null when none. */
async function authenticationOf(db: Kysely<DB>, merchantId: string, tradeId: string): Promise<TradeDetail['authentication']> {
  const row = await db
    .selectFrom('three_ds_uses as u')
    .innerJoin('three_ds_authentications as a', 'a.acs_trans_id', 'u.acs_trans_id')
    .select(['a.acs_trans_id', 'a.trans_status', 'a.eci', 'a.authentication_type', 'a.challenge_method'])
    .where('u.trade_id', '=', tradeId)
    .where('a.merchant_id', '=', merchantId)
    .executeTakeFirst();
  if (!row) return null;
  return {
    acsTransID: row.acs_trans_id,
    transStatus: row.trans_status,
    eci: row.eci,
    method: row.authentication_type === null ? 'frictionless' : (row.challenge_method ?? 'otp'),
  };
}
