import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Services } from '../context.js';
import { signedRead } from '../http/operation.js';
import { Envelope, errorResponses, ok } from '../http/schemas.js';
import { fundingBalances } from './funding.js';
import { MerchantBalanceBody, MerchantBalanceModel, MerchantFundingListBody, MerchantFundingListModel } from './schemas.js';
import { fundingStatement } from './statement.js';

/** The merchant's own funding balances (docs/funding.md): a signed read. */
export const fundingRoutes: FastifyPluginAsyncTypebox<{ svc: Services }> = async (app, { svc }) => {
  app.post(
    '/api/network/merchantBalance.html',
    {
      schema: {
        tags: ['Funding'],
        summary: "The merchant's funding balance per currency",
        description:
          "Top-ups draw from it; the operator credits it. A top-up that would take it below zero is refused with 2726. Each balance also gives cardDebt: what the merchant's cards in that currency owe after forced posts of the card network (the merchant's exposure; a top-up pays a card's debt first, and the operator settles a closed card's debt from this account). A read: randomStr is single-use.",
        body: MerchantBalanceBody,
        response: { 200: Envelope(MerchantBalanceModel), ...errorResponses },
      },
      config: { operation: 'merchantBalance' },
    },
    async (req) => {
      const { currency, randomStr } = req.body;
      await signedRead(svc, req, randomStr);
      const balances = await svc.database.read((db) => fundingBalances(db, req.merchant.appId, currency === '' ? undefined : currency));
      return ok({ balances }, req.id);
    },
  );

  app.post(
    '/api/network/merchantFundingList.html',
    {
      schema: {
        tags: ['Funding'],
        summary: "The merchant's funding statement: every movement, with the balance after it",
        description:
          "Oldest first, in pages: every movement of the funding account in one currency (the operator's credits and debits, top-ups, cards closed, money a closed card released later), with its reference, the card and trade it concerns and the balance after it. `seq` numbers the movements without gaps in commit order: page on with `after` = the answer's `next`, until `next` is null. A replay of every movement (the sum of their amounts) is the last one's `balance`. A read: randomStr is single-use.",
        body: MerchantFundingListBody,
        response: { 200: Envelope(MerchantFundingListModel), ...errorResponses },
      },
      config: { operation: 'merchantFundingList' },
    },
    async (req) => {
      const { currency, after, maxSize, randomStr } = req.body;
      await signedRead(svc, req, randomStr);
      return ok(await svc.database.read((db) => fundingStatement(db, req.merchant.appId, currency, { after, maxSize })), req.id);
    },
  );
};
