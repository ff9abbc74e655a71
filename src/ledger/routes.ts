import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Services } from '../context.js';
import { signedRead } from '../http/operation.js';
import { Envelope, errorResponses, ok } from '../http/schemas.js';
import { fundingBalances } from './funding.js';
import { MerchantBalanceBody, MerchantBalanceModel } from './schemas.js';

/** The merchant's own funding balances (docs/funding.md): a signed read. */
export const fundingRoutes: FastifyPluginAsyncTypebox<{ svc: Services }> = async (app, { svc }) => {
  app.post(
    '/api/network/merchantBalance.html',
    {
      schema: {
        tags: ['Funding'],
        summary: "The merchant's funding balance per currency",
        description:
          'Top-ups draw from it; the operator credits it. A top-up that would take it below zero is refused with 2726. A read: randomStr is single-use.',
        body: MerchantBalanceBody,
        response: { 200: Envelope(MerchantBalanceModel), ...errorResponses },
      },
      config: { operation: 'merchantBalance' },
    },
    async (req) => {
      const { currency, randomStr } = req.body;
      await signedRead(svc, req, randomStr);
      const balances = await fundingBalances(svc.database.db, req.merchant.appId, currency === '' ? undefined : currency);
      return ok({ balances }, req.id);
    },
  );
};
