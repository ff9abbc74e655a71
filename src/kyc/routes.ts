import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Services } from '../context.js';
import { operationInput, signedRead, signedWrite } from '../http/operation.js';
import { errorResponses, ok } from '../http/schemas.js';
import { runVerb } from '../runner.js';
import { decideKyc, loadKyc, toKycModel } from './decide.js';
import { KycQueryBody, KycReviewBody, KycShareBody, KycStatusEnvelope, NullEnvelope } from './schemas.js';
import { submitKyc } from './submit.js';

export const kycRoutes: FastifyPluginAsyncTypebox<{ svc: Services }> = async (app, { svc }) => {
  app.post(
    '/open/api/kyc/share/information',
    {
      schema: {
        tags: ['KYC'],
        summary: 'Submit KYC information for approval (interface 4.3)',
        description:
          'Every element is mandatory (address.ssn only for a US address); address may sit inside individualInfo or beside it. requestNo is the idempotency key, for ever; an e-mail already used by another request is 2610. The decision arrives as a kyc.result callback to callbackUrl.',
        body: KycShareBody,
        response: { 200: NullEnvelope, ...errorResponses },
      },
      config: { operation: 'kycShare' },
    },
    async (req, reply) => {
      // No randomStr: requestNo is the idempotency key, for ever.
      const { input } = operationInput(req.body);
      const merchantId = req.merchant.appId;
      // Idempotent by requestNo, for ever (the verb's own rule), not by randomStr.
      const created = await runVerb(svc, submitKyc, { input, merchantId, actor: { kind: 'merchant', appId: merchantId, origin: req.ip } });
      if (!created) reply.header('x-idempotent-replay', 'true');
      return ok(null, req.id);
    },
  );

  app.post(
    '/open/api/kyc/share/query',
    {
      schema: {
        tags: ['KYC'],
        summary: 'Status and reason of a KYC request',
        body: KycQueryBody,
        response: { 200: KycStatusEnvelope, ...errorResponses },
      },
      config: { operation: 'kycQuery' },
    },
    async (req) => {
      await signedRead(svc, req, req.body.randomStr);
      return ok(toKycModel(svc.box, await svc.database.read((db) => loadKyc(db, req.merchant.appId, req.body.requestNo))), req.id);
    },
  );
};

export const kycSandboxRoutes: FastifyPluginAsyncTypebox<{ svc: Services }> = async (app, { svc }) => {
  app.post(
    '/sandbox/kyc/review',
    {
      schema: {
        tags: ['Sandbox'],
        summary: 'Decide a KYC request as a reviewer would (sandbox only)',
        body: KycReviewBody,
        response: { 200: KycStatusEnvelope, ...errorResponses },
      },
      config: { operation: 'sandboxKycReview' },
    },
    async (req, reply) => {
      const { requestNo, kycStatus, reason, randomStr } = req.body;
      const input = { requestNo, status: kycStatus, reason };
      const model = await signedWrite(svc, req, reply, randomStr, decideKyc, input, { sandbox: true });
      return ok(model, req.id);
    },
  );
};
