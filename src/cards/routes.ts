import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Services } from '../context.js';
import { operationInput, signedRead, signedWrite } from '../http/operation.js';
import { Envelope, errorResponses, ok } from '../http/schemas.js';
import { topUp } from '../ledger/fund.js';
import { TradeEnvelope } from '../trades/schemas.js';
import { applyCard } from './apply.js';
import { closeCard } from './close.js';
import { queryCard } from './query.js';
import { CardApplyBody, CardEnvelope, CardQueryBody, CardQueryModelSchema, CardStatusBody, CardTopUpBody } from './schemas.js';
import { setCardFrozen, statusBefore } from './status.js';

export const cardRoutes: FastifyPluginAsyncTypebox<{ svc: Services }> = async (app, { svc }) => {
  app.post(
    '/api/network/cardApply.html',
    {
      schema: {
        tags: ['Cards'],
        summary: 'Issue a virtual card to an approved cardholder',
        description:
          'Only a cardholder with auditStatus 2 gets a card (2607 otherwise); currency EUR or USDT (2720 otherwise). `controls`: the card’s own spending controls (docs/transactions.md, “Spending controls”); later changed with cardControlsUpdate. A write.',
        body: CardApplyBody,
        response: { 200: CardEnvelope, ...errorResponses },
      },
      config: { operation: 'cardApply' },
    },
    async (req, reply) => {
      const { randomStr, input } = operationInput(req.body);
      const card = await signedWrite(svc, req, reply, randomStr, applyCard, input);
      return ok(card, req.id);
    },
  );

  app.post(
    '/api/network/cardQuery.html',
    {
      schema: {
        tags: ['Cards'],
        summary: 'Query a card, its balances, its spending controls and what its limits have left',
        body: CardQueryBody,
        response: { 200: Envelope(CardQueryModelSchema), ...errorResponses },
      },
      config: { operation: 'cardQuery' },
    },
    async (req) => {
      await signedRead(svc, req, req.body.randomStr);
      return ok(await svc.database.read((db) => queryCard(db, req.merchant.appId, req.body.cardId, svc.clock())), req.id);
    },
  );

  app.post(
    '/api/network/cardTopUp.html',
    {
      schema: {
        tags: ['Cards'],
        summary: 'Fund a card from the merchant’s funding account (trade type 100)',
        body: CardTopUpBody,
        response: { 200: TradeEnvelope, ...errorResponses },
      },
      config: { operation: 'cardTopUp' },
    },
    async (req, reply) => {
      const { randomStr, input } = operationInput(req.body);
      const trade = await signedWrite(svc, req, reply, randomStr, topUp, input);
      return ok(trade, req.id);
    },
  );
};

const PRECEDENCE =
  'A freeze records its source (here the merchant) and reason; the operator’s freeze outranks the merchant’s, which outranks the cardholder’s (from the card page).';

/** The merchant's card controls (decisions §11): freeze, unfreeze, close. Writes, idempotent by randomStr. */
export const cardStatusRoutes: FastifyPluginAsyncTypebox<{ svc: Services }> = async (app, { svc }) => {
  const routes = [
    {
      operation: 'cardFreeze',
      summary: 'Freeze a card: authorizations decline (2724) until it is unfrozen',
      description: `${PRECEDENCE} Freezing a card the cardholder froze takes the freeze over; a card the operator froze, or one already frozen by the merchant, is answered as is. A closed card is 2724. A frozen card can still be topped up and still settles what it authorized before.`,
      frozen: true,
    },
    {
      operation: 'cardUnfreeze',
      summary: 'Unfreeze a card the merchant or the cardholder froze',
      description: `${PRECEDENCE} A card frozen by the operator is 2727 (only the operator can unfreeze it); one frozen for security (statusSource security: 5 CVV2 or expiry mismatches within 24 hours) is unfrozen by the merchant or the operator, and its count starts again; a closed card is 2724; a cardholder not approved is 2607. An active card is answered as is.`,
      frozen: false,
    },
    {
      operation: 'cardClose',
      summary: 'Close a card for good; its available balance returns to the merchant’s funding account',
      description:
        'Closed is final: no unfreeze, authorization, top-up, withdrawal or transfer afterwards (2724). A card the operator froze is closed only by the operator (2727). The whole available balance moves to the merchant’s funding account as a withdrawal record (tradeType 110, remark "Card closed"); what authorizations still hold stays clearable, and what a later reversal, void or refund returns goes to the funding account. A closed card is answered as is.',
      frozen: null,
    },
  ] as const;
  for (const r of routes) {
    app.post(
      `/api/network/${r.operation}.html`,
      {
        schema: {
          tags: ['Cards'],
          summary: r.summary,
          description: `${r.description} A write.`,
          body: CardStatusBody,
          response: { 200: CardEnvelope, ...errorResponses },
        },
        config: { operation: r.operation },
      },
      async (req, reply) => {
        const { randomStr, input: body } = operationInput(req.body);
        const input = { ...body, source: 'merchant' as const };
        const card =
          r.frozen === null
            ? // Final, and the balance moves: recorded in the audit trail, as the operator's close is.
              await signedWrite(svc, req, reply, randomStr, closeCard, input, {
                audit: { action: 'card.close', target: input.cardId, before: (tx) => statusBefore(tx, input.cardId) },
              })
            : await signedWrite(svc, req, reply, randomStr, setCardFrozen, { ...input, frozen: r.frozen });
        return ok(card, req.id);
      },
    );
  }
};
