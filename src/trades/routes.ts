import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Services } from '../context.js';
import { signedRead } from '../http/operation.js';
import { errorResponses } from '../http/schemas.js';
import { listTrades } from './list.js';
import { TradeListBody, TradePageSchema } from './schemas.js';

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
      await signedRead(svc, req, randomStr);
      const orAbsent = (v: string | undefined) => (v === '' ? undefined : v);
      const input = { ...rest, cardId: orAbsent(cardId), cardNo: orAbsent(cardNo), currency: orAbsent(currency) };
      return listTrades({ db: svc.database.db, vault: svc.vault, merchantId: req.merchant.appId, input });
    },
  );
};
