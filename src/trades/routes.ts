import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Services } from '../context.js';
import { databaseFault } from '../db/faults.js';
import { readKey, signedRead } from '../http/operation.js';
import { errorResponses, ok } from '../http/schemas.js';
import { listTrades, listTradesSpendingNonce } from './list.js';
import { queryTrade } from './query.js';
import { TradeDetailEnvelope, TradeListBody, TradePageSchema, TradeQueryBody } from './schemas.js';

export const tradeRoutes: FastifyPluginAsyncTypebox<{ svc: Services }> = async (app, { svc }) => {
  app.post(
    '/api/network/networkAuthTradeList.html',
    {
      schema: {
        tags: ['Transactions'],
        summary: 'Authorized transactions of a card for a date range, paged (interface 4.1)',
        description:
          'At least one of cardId and cardNo; at most 30 days; newest first; statuses 1 and 10 unless tradeStatusList says otherwise. A read: randomStr is single-use.',
        body: TradeListBody,
        response: { 200: TradePageSchema, ...errorResponses },
      },
      config: { operation: 'tradeList' },
    },
    async (req) => {
      const { randomStr, appId: _a, sign: _s, timestamp: _t, cardId, cardNo, currency, ...rest } = req.body;
      const orAbsent = (v: string | undefined) => (v === '' ? undefined : v);
      const input = { ...rest, cardId: orAbsent(cardId), cardNo: orAbsent(cardNo), currency: orAbsent(currency) };
      const primary = svc.database.db;
      const reads = svc.reads();
      // PostgreSQL, a card named by id, no replica in use: the nonce and the whole list in one round trip.
      if (svc.database.dialect === 'postgres' && reads === primary && input.cardId !== undefined && input.cardNo === undefined) {
        const key = readKey(req, randomStr);
        return listTradesSpendingNonce({
          database: svc.database,
          nonces: svc.readNonces,
          merchantId: req.merchant.appId,
          nonce: key,
          now: svc.clock(),
          input: { ...input, cardId: input.cardId },
        });
      }
      await signedRead(svc, req, randomStr);
      // The nonce above is spent on the primary; the records are read where reads may be a moment
      // stale (the replica, when there is one and it is close enough behind).
      const list = (from: typeof reads) =>
        listTrades({ db: primary, reads: from, vault: svc.vault, merchantId: req.merchant.appId, input });
      // SQLite: with the reads of the other requests that arrived together (Database.read).
      if (reads === primary)
        return svc.database.read((db) => listTrades({ db, reads: db, vault: svc.vault, merchantId: req.merchant.appId, input }));
      try {
        return await list(reads);
      } catch (err) {
        // The replica failed under the read (gone, too slow, a query its recovery cancelled): the
        // primary answers this one, and the next probe decides whether the replica is used again.
        if (!databaseFault(err)) throw err;
        req.log.warn({ err }, 'read replica failed: the list was read from the primary');
        return list(primary);
      }
    },
  );

  app.post(
    '/api/network/tradeQuery.html',
    {
      schema: {
        tags: ['Transactions'],
        summary: 'One transaction by tradeId, with the acceptor and decision of an authorization (approved or declined)',
        description:
          'The 4.1 record (null for a declined authorization, which is not a listed trade) and, for an authorization, the acceptor data the network sent and how the program decided; network: the card network message behind it (its RRN, field 37; acquirer, STAN, MTI), null for the sandbox’s. Over the link the record’s remark is the merchant (field 43’s name and city), not the RRN. Another merchant’s tradeId is answered as an unknown one (2730). A read: randomStr is single-use.',
        body: TradeQueryBody,
        response: { 200: TradeDetailEnvelope, ...errorResponses },
      },
      config: { operation: 'tradeQuery' },
    },
    async (req) => {
      const { tradeId, randomStr } = req.body;
      await signedRead(svc, req, randomStr);
      return ok(await svc.database.read((db) => queryTrade({ db, merchantId: req.merchant.appId, tradeId })), req.id);
    },
  );
};
