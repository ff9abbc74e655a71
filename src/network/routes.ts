import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import { revealCard } from '../cards/details.js';
import { CardDetailsSchema, TradeEnvelope } from '../cards/schemas.js';
import type { Services } from '../context.js';
import { ledgerCtx, signedRead, signedWrite } from '../http/operation.js';
import { Envelope, errorResponses, ok } from '../http/schemas.js';
import { authorize } from '../ledger/authorize.js';
import { reverse, voidTrade } from '../ledger/cancel.js';
import type { LedgerCtx } from '../ledger/common.js';
import { adjust, balanceInquiry, chargeFee, transfer, withdraw } from '../ledger/other.js';
import { clear, refund } from '../ledger/settle.js';
import type { TradeRecord } from '../trades/store.js';
import * as S from './schemas.js';

type Verb = (args: { ctx: LedgerCtx; input: any }) => Promise<TradeRecord>;

/**
 * The sandbox card network (decisions §6): what a card scheme would send, as signed operations, so
 * a merchant can produce every kind of record. Registered only in the sandbox; each is a write,
 * idempotent by randomStr, and answers the record it produced.
 */
export const networkSandboxRoutes: FastifyPluginAsyncTypebox<{ svc: Services }> = async (app, { svc }) => {
  const simulation = (path: string, operation: string, summary: string, body: TSchema, verb: Verb) =>
    app.post(
      path,
      {
        schema: { tags: ['Sandbox'], summary: `${summary} (sandbox only)`, body, response: { 200: TradeEnvelope, ...errorResponses } },
        config: { operation },
      },
      async (req: FastifyRequest, reply: FastifyReply) => {
        const { appId: _a, sign: _s, timestamp: _t, randomStr, ...input } = req.body as Record<string, unknown> & { randomStr: string };
        const trade = await signedWrite(svc, req, reply, randomStr, (ctx) => verb({ ctx: ledgerCtx(svc, req, ctx), input }));
        return ok(trade, req.id);
      },
    );

  simulation(
    '/sandbox/network/authorize',
    'sandboxAuthorize',
    'Authorize a card payment: holds funds (150, status 1)',
    S.AuthorizeBody,
    authorize,
  );
  simulation('/sandbox/network/clear', 'sandboxClear', 'Clear an authorization into a payment (151)', S.ClearBody, clear);
  simulation(
    '/sandbox/network/reverse',
    'sandboxReverse',
    'Reverse part or all of an authorization (status 2; 3 when fully reversed)',
    S.ReverseBody,
    reverse,
  );
  simulation(
    '/sandbox/network/void',
    'sandboxVoid',
    'Void an authorization or payment (original 6, a status 7 record)',
    S.VoidBody,
    voidTrade,
  );
  simulation('/sandbox/network/refund', 'sandboxRefund', 'Refund part or all of a payment (status 10)', S.RefundBody, refund);
  simulation('/sandbox/network/withdraw', 'sandboxWithdraw', 'Cash withdrawal (110)', S.WithdrawBody, withdraw);
  simulation('/sandbox/network/transfer', 'sandboxTransfer', 'Transfer between two cards (121 out, 120 in)', S.TransferBody, transfer);
  simulation('/sandbox/network/adjust', 'sandboxAdjust', 'Settlement adjustment (200)', S.AdjustBody, adjust);
  simulation('/sandbox/network/balanceInquiry', 'sandboxBalanceInquiry', 'Balance inquiry (300, no money)', S.InquiryBody, balanceInquiry);
  simulation('/sandbox/network/fee', 'sandboxFee', 'Charge a fee (500)', S.FeeBody, chargeFee);

  app.post(
    '/sandbox/network/cardDetails',
    {
      schema: {
        tags: ['Sandbox'],
        summary: 'Full card number, expiry and CVV (sandbox only)',
        body: S.CardDetailsBody,
        response: { 200: Envelope(CardDetailsSchema), ...errorResponses },
      },
      config: { operation: 'sandboxCardDetails' },
    },
    async (req) => {
      const { cardId, randomStr } = req.body;
      await signedRead(svc, req, randomStr);
      return ok(await revealCard({ db: svc.database.db, vault: svc.vault, merchantId: req.merchant.appId, cardId }), req.id);
    },
  );
};
