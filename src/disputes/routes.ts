import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Services } from '../context.js';
import { operationInput, signedRead, signedWrite } from '../http/operation.js';
import { Envelope, errorResponses, ok } from '../http/schemas.js';
import { createDispute } from './create.js';
import { listDisputes, queryDispute } from './query.js';
import { decideDisputeNow } from './sandbox.js';
import {
  DisputeCreateBody,
  DisputeDecideBody,
  DisputeEnvelope,
  DisputeListBody,
  DisputePageSchema,
  DisputeRefBody,
  DisputeUpdateBody,
} from './schemas.js';
import { submitDispute } from './submit.js';
import { updateDispute } from './update.js';
import { withdrawDispute } from './withdraw.js';

/** What a body carrying evidence may weigh: one file of 5 MB in Base64 (6.7 MiB) and the rest of the body. */
export const EVIDENCE_BODY_LIMIT = 8 * 1024 * 1024;

const RULES =
  'Disputable: a cleared purchase (tradeType 151, status 1; a forced post too; or its authorization’s tradeId when exactly one payment cleared it, the dispute then being that payment’s; with more than one, 2730 names their tradeIds), not refunded in full (2730), within 120 days of its clearing (2743), one open dispute per transaction (2741), at most what was cleared less refunds and earlier disputes (2723). Evidence: PDF, PNG or JPEG recognised by its first bytes, ≤ 5 MB decoded, ≤ 10 per dispute (2744); the body at most 8 MiB. docs/disputes.md.';

/** The merchant's disputes (decisions §13.1): writes idempotent by randomStr, reads single-use. */
export const disputeRoutes: FastifyPluginAsyncTypebox<{ svc: Services }> = async (app, { svc }) => {
  app.post(
    '/api/network/disputeCreate.html',
    {
      bodyLimit: EVIDENCE_BODY_LIMIT,
      schema: {
        tags: ['Disputes'],
        summary: 'Open a dispute on a cleared purchase (status unsubmitted)',
        description: `${RULES} \`amount\` absent: all that can be disputed. A write.`,
        body: DisputeCreateBody,
        response: { 200: DisputeEnvelope, ...errorResponses },
      },
      config: { operation: 'disputeCreate' },
    },
    async (req, reply) => {
      const { randomStr, input } = operationInput(req.body);
      return ok(await signedWrite(svc, req, reply, randomStr, createDispute, input), req.id);
    },
  );

  app.post(
    '/api/network/disputeUpdate.html',
    {
      bodyLimit: EVIDENCE_BODY_LIMIT,
      schema: {
        tags: ['Disputes'],
        summary: 'Change an unsubmitted dispute: reason, amount, explanation, evidence files',
        description: `Only while unsubmitted (2742). \`removeEvidence\` removes files by name, then \`evidence\` adds files. ${RULES} A write.`,
        body: DisputeUpdateBody,
        response: { 200: DisputeEnvelope, ...errorResponses },
      },
      config: { operation: 'disputeUpdate' },
    },
    async (req, reply) => {
      const { randomStr, input } = operationInput(req.body);
      return ok(await signedWrite(svc, req, reply, randomStr, updateDispute, input), req.id);
    },
  );

  app.post(
    '/api/network/disputeSubmit.html',
    {
      schema: {
        tags: ['Disputes'],
        summary: 'Submit a dispute to the network before its deadline',
        description:
          'An unsubmitted dispute with an explanation (1002 without), before its deadline (2743: it is expired from then on), its amount still at most what is left to dispute (2723: a refund since its creation; lower it with disputeUpdate). When the merchant’s disputeProvisionalCredit is on, the card is credited the amount at once from the merchant’s funding account (2726 when that is short). A `dispute.updated` callback follows. A write.',
        body: DisputeRefBody,
        response: { 200: DisputeEnvelope, ...errorResponses },
      },
      config: { operation: 'disputeSubmit' },
    },
    async (req, reply) => {
      const { randomStr, input } = operationInput(req.body);
      return ok(await signedWrite(svc, req, reply, randomStr, submitDispute, input), req.id);
    },
  );

  app.post(
    '/api/network/disputeWithdraw.html',
    {
      schema: {
        tags: ['Disputes'],
        summary: 'Withdraw a dispute (a submitted one as if lost: provisional credit taken back)',
        description:
          'An unsubmitted or submitted dispute (2742 otherwise). A submitted one’s provisional credit, if any, goes back from the card to the merchant’s funding account; what the card no longer has becomes its debt. A write.',
        body: DisputeRefBody,
        response: { 200: DisputeEnvelope, ...errorResponses },
      },
      config: { operation: 'disputeWithdraw' },
    },
    async (req, reply) => {
      const { randomStr, input } = operationInput(req.body);
      return ok(await signedWrite(svc, req, reply, randomStr, withdrawDispute, input), req.id);
    },
  );

  app.post(
    '/api/network/disputeQuery.html',
    {
      schema: {
        tags: ['Disputes'],
        summary: 'Query a dispute: its status, amounts, deadline and evidence files (names, types, sizes, SHA-256)',
        description: 'Another merchant’s dispute is 2740, as an unknown one. A read: randomStr is single-use.',
        body: DisputeRefBody,
        response: { 200: DisputeEnvelope, ...errorResponses },
      },
      config: { operation: 'disputeQuery' },
    },
    async (req) => {
      await signedRead(svc, req, req.body.randomStr);
      return ok(await svc.database.read((db) => queryDispute(db, svc.box, req.merchant.appId, req.body.disputeId, svc.clock())), req.id);
    },
  );

  app.post(
    '/api/network/disputeList.html',
    {
      schema: {
        tags: ['Disputes'],
        summary: 'The merchant’s disputes, newest first, by card, status and day of creation, paged',
        description: '`start`: the index of the first; `limit` 1–100 (default 30); `from`, `to`: days of creation (UTC). A read.',
        body: DisputeListBody,
        response: { 200: Envelope(DisputePageSchema), ...errorResponses },
      },
      config: { operation: 'disputeList' },
    },
    async (req) => {
      const { randomStr, input } = operationInput(req.body);
      await signedRead(svc, req, randomStr);
      return ok(await svc.database.read((db) => listDisputes(db, svc.box, req.merchant.appId, input, svc.clock())), req.id);
    },
  );
};

/** The sandbox network's dispute system: a decision at once (sandbox only; 404 in production). */
export const disputeSandboxRoutes: FastifyPluginAsyncTypebox<{ svc: Services }> = async (app, { svc }) => {
  app.post(
    '/sandbox/dispute/decide',
    {
      schema: {
        tags: ['Sandbox'],
        summary: 'Decide a submitted dispute at once, as the network would (sandbox only)',
        description:
          'won: the network pays back `amount` (default: the whole amount) to the card, or to the merchant’s funding account when the card had provisional credit; lost: provisional credit taken back. The same outcome again changes nothing; another is 2742. A write.',
        body: DisputeDecideBody,
        response: { 200: DisputeEnvelope, ...errorResponses },
      },
      config: { operation: 'sandboxDisputeDecide' },
    },
    async (req, reply) => {
      const { randomStr, input } = operationInput(req.body);
      return ok(await signedWrite(svc, req, reply, randomStr, decideDisputeNow, input, { sandbox: true }), req.id);
    },
  );
};
