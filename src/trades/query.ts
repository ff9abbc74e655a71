import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import { maskedCardNo } from '../cards/model.js';
import type { DB } from '../db/schema.js';
import { DomainError } from '../errors.js';
import { tradeById } from './by-id.js';
import { networkOrigin } from './network-reads.js';
import { toAuthorization, toTradeRecord } from './record.js';
import type { TradeDetailSchema } from './schemas.js';

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
  const [trade, authorization] = await Promise.all([
    tradeById(db, merchantId, tradeId),
    db.selectFrom('authorizations').selectAll().where('id', '=', tradeId).where('merchant_id', '=', merchantId).executeTakeFirst(),
  ]);
  const cardId = trade?.card_id ?? authorization?.card_id;
  if (cardId === undefined) throw new DomainError('tradeState', 'tradeId: transaction not found');
  const card = await db
    .selectFrom('cards')
    .select(['pan_first6', 'pan_last4', 'pan_length'])
    .where('id', '=', cardId)
    .executeTakeFirstOrThrow();
  const cardNo = maskedCardNo(card);
  const origin = await networkOrigin(db, tradeId, trade?.original_id ?? null);
  const rrn = origin ? (JSON.parse(origin.request) as Record<string, string>)['37']?.trim() : undefined;
  return {
    trade: trade ? toTradeRecord(trade, cardNo) : null,
    authorization: authorization ? toAuthorization(authorization, cardNo) : null,
    network: origin ? { rrn: rrn || null, acquirer: origin.acquirer, stan: origin.stan, mti: origin.mti } : null,
  };
}
