import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import { revealCard } from '../cards/details.js';
import { CardDetailsSchema } from '../cards/schemas.js';
import type { Services } from '../context.js';
import { type OperationInput, operationInput, type SignedBody, signedRead, signedWrite, writeKey } from '../http/operation.js';
import { Envelope, errorResponses, ok } from '../http/schemas.js';
import { adjust } from '../ledger/adjust.js';
import { authorize } from '../ledger/authorize.js';
import { balanceInquiry } from '../ledger/balance-inquiry.js';
import { reverse, voidTrade } from '../ledger/cancel.js';
import { chargeFee } from '../ledger/charge-fee.js';
import type { LedgerCtx } from '../ledger/context.js';
import { clear, refund } from '../ledger/settle.js';
import { transfer } from '../ledger/transfer.js';
import { withdraw } from '../ledger/withdraw.js';
import type { TradeRecord } from '../trades/record.js';
import { TradeEnvelope } from '../trades/schemas.js';
import { authorizeWithEndpoint } from './authorize-with-endpoint.js';
import * as S from './schemas.js';

/**
 * The sandbox card network (decisions §6): what a card scheme would send, as signed operations, so
 * a merchant can produce every kind of record. Registered only in the sandbox; each is a write,
 * idempotent by randomStr, and answers the record it produced.
 */
export const networkSandboxRoutes: FastifyPluginAsyncTypebox<{ svc: Services }> = async (app, { svc }) => {
  /** A simulation's route options: its body schema, the record as its answer. */
  const simulation = <B extends TSchema>(operation: string, summary: string, body: B, description?: string) => ({
    schema: {
      tags: ['Sandbox'],
      summary: `${summary} (sandbox only)`,
      ...(description ? { description } : {}),
      body,
      response: { 200: TradeEnvelope, ...errorResponses },
    },
    config: { operation },
  });
  /** Runs a simulation's verb once per randomStr, on the body without its envelope. */
  const simulate = async <B extends SignedBody>(
    req: FastifyRequest & { body: B },
    reply: FastifyReply,
    verb: (args: { ctx: LedgerCtx; input: OperationInput<B> }) => Promise<TradeRecord>,
  ) => {
    const { randomStr, input } = operationInput(req.body);
    const trade = await signedWrite(svc, req, reply, randomStr, verb, input);
    return ok(trade, req.id);
  };

  app.post(
    '/sandbox/network/authorize',
    simulation(
      'sandboxAuthorize',
      'Authorize a card payment: holds funds (150, status 1)',
      S.AuthorizeBody,
      'What a card network sends, with its acceptor (mcc, merchantName, merchantCity, merchantCountry, channel). Checked in order: the card’s status (2724), the card data when sent (expiry, then cvv2: not the card’s is 2731, counted against the card; 5 within 24 hours freeze it, statusSource security), 3-D Secure (authenticationValue and eci from /sandbox/3ds/authenticate: good once, for this card, up to the authenticated amount, else 2732; with CARDPROGRAM_3DS_REQUIRED on, an ecommerce authorization without one, outside the low-value exemption, is 2733), its spending controls and its cardholder’s: channel, merchant category, country, then spending limits (2728), the available balance (2725), then the merchant’s authorization endpoint when it has one (2729). A decline is recorded and answers detail {tradeId, declineReason}; read it with tradeQuery. A write.',
    ),
    async (req, reply) => {
      const endpoint = req.merchant.authorizationEndpoint;
      if (!endpoint) return simulate(req, reply, authorize);
      // The merchant decides too, in real time (decisions §11): src/sandbox/authorize-with-endpoint.ts.
      const { randomStr, input } = operationInput(req.body);
      const key = { ...writeKey(req, reply, randomStr), origin: req.ip };
      return ok(await authorizeWithEndpoint(svc, req.merchant.appId, endpoint, key, input), req.id);
    },
  );
  app.post('/sandbox/network/clear', simulation('sandboxClear', 'Clear an authorization into a payment (151)', S.ClearBody), (req, reply) =>
    simulate(req, reply, clear),
  );
  app.post(
    '/sandbox/network/reverse',
    simulation('sandboxReverse', 'Reverse part or all of an authorization (status 2; 3 when fully reversed)', S.ReverseBody),
    (req, reply) => simulate(req, reply, reverse),
  );
  app.post(
    '/sandbox/network/void',
    simulation('sandboxVoid', 'Void an authorization or payment (original 6, a status 7 record)', S.VoidBody),
    (req, reply) => simulate(req, reply, voidTrade),
  );
  app.post(
    '/sandbox/network/refund',
    simulation('sandboxRefund', 'Refund part or all of a payment (status 10)', S.RefundBody),
    (req, reply) => simulate(req, reply, refund),
  );
  app.post(
    '/sandbox/network/withdraw',
    simulation(
      'sandboxWithdraw',
      'Cash withdrawal at an ATM (110)',
      S.WithdrawBody,
      'The card’s spending controls decide it as an authorization at an ATM (channel atm, MCC 6011, merchantCountry when sent; 2728) and it counts against the limits; a refused withdrawal is not recorded (no detail) and the authorization endpoint is not asked. The amount goes to the network’s settlement, with the withdrawal fee. A write.',
    ),
    (req, reply) => simulate(req, reply, withdraw),
  );
  app.post(
    '/sandbox/network/transfer',
    simulation('sandboxTransfer', 'Transfer between two cards (121 out, 120 in)', S.TransferBody),
    (req, reply) => simulate(req, reply, transfer),
  );
  app.post('/sandbox/network/adjust', simulation('sandboxAdjust', 'Settlement adjustment (200)', S.AdjustBody), (req, reply) =>
    simulate(req, reply, adjust),
  );
  app.post(
    '/sandbox/network/balanceInquiry',
    simulation('sandboxBalanceInquiry', 'Balance inquiry (300, no money)', S.InquiryBody),
    (req, reply) => simulate(req, reply, balanceInquiry),
  );
  app.post('/sandbox/network/fee', simulation('sandboxFee', 'Charge a fee (500)', S.FeeBody), (req, reply) =>
    simulate(req, reply, chargeFee),
  );

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
      return ok(await svc.database.read((db) => revealCard({ db, vault: svc.vault, merchantId: req.merchant.appId, cardId })), req.id);
    },
  );
};
