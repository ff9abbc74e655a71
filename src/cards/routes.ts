import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Services } from '../context.js';
import { ledgerCtx, signedRead, signedWrite } from '../http/operation.js';
import { errorResponses, ok } from '../http/schemas.js';
import { topUp } from '../ledger/fund.js';
import { listTrades } from '../trades/list.js';
import { applyCard } from './apply.js';
import { loadCard, toCardModel } from './model.js';
import { CardApplyBody, CardEnvelope, CardQueryBody, CardTopUpBody, TradeEnvelope, TradeListBody, TradePageSchema } from './schemas.js';

export const cardRoutes: FastifyPluginAsyncTypebox<{ svc: Services }> = async (app, { svc }) => {
  app.post(
    '/api/network/cardApply.html',
    {
      schema: {
        tags: ['Cards'],
        summary: 'Issue a virtual card to an approved cardholder',
        description: 'Only a cardholder with auditStatus 2 gets a card (2607 otherwise); currency EUR or USDT (2720 otherwise). A write.',
        body: CardApplyBody,
        response: { 200: CardEnvelope, ...errorResponses },
      },
      config: { operation: 'cardApply' },
    },
    async (req, reply) => {
      const { holderId, currency, randomStr } = req.body;
      const card = await signedWrite(svc, req, reply, randomStr, (ctx) =>
        applyCard({ ctx, vault: svc.vault, program: svc.config.program, merchantId: req.merchant.appId, input: { holderId, currency } }),
      );
      return ok(card, req.id);
    },
  );

  app.post(
    '/api/network/cardQuery.html',
    {
      schema: {
        tags: ['Cards'],
        summary: 'Query a card and its balances',
        body: CardQueryBody,
        response: { 200: CardEnvelope, ...errorResponses },
      },
      config: { operation: 'cardQuery' },
    },
    async (req) => {
      await signedRead(svc, req, req.body.randomStr);
      return ok(toCardModel(await loadCard(svc.database.db, req.merchant.appId, req.body.cardId)), req.id);
    },
  );

  app.post(
    '/api/network/cardTopUp.html',
    {
      schema: {
        tags: ['Cards'],
        summary: 'Fund a card from the program account (trade type 100)',
        body: CardTopUpBody,
        response: { 200: TradeEnvelope, ...errorResponses },
      },
      config: { operation: 'cardTopUp' },
    },
    async (req, reply) => {
      const { cardId, amount, randomStr } = req.body;
      const trade = await signedWrite(svc, req, reply, randomStr, (ctx) =>
        topUp({ ctx: ledgerCtx(svc, req, ctx), input: { cardId, amount } }),
      );
      return ok(trade, req.id);
    },
  );

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
