import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Services } from '../context.js';
import { decodeBase64Field, operationInput, signedRead, signedWrite } from '../http/operation.js';
import { errorResponses, ok } from '../http/schemas.js';
import { createHolder } from './create.js';
import { getHolder } from './query.js';
import { reviewHolder } from './review.js';
import { HolderCreateBody, HolderEnvelope, HolderQueryBody, HolderRecordSchema, HolderReviewBody } from './schemas.js';

export const holderRoutes: FastifyPluginAsyncTypebox<{ svc: Services }> = async (app, { svc }) => {
  app.post(
    '/api/network/holderCreate.html',
    {
      schema: {
        tags: ['Cardholders'],
        summary: 'Create a cardholder (interface 4.2)',
        description: 'firstName, lastName, town and address are sent Base64 encoded (UTF-8). A write: idempotent by randomStr.',
        body: HolderCreateBody,
        response: { 200: HolderRecordSchema, ...errorResponses },
      },
      config: { operation: 'holderCreate', errMsg: true },
    },
    async (req, reply) => {
      const b = req.body;
      const input = {
        mobile: b.mobile,
        firstName: decodeBase64Field('firstName', b.firstName),
        lastName: b.lastName === undefined || b.lastName === '' ? undefined : decodeBase64Field('lastName', b.lastName),
        email: b.email,
        dateOfBirth: b.dateOfBirth,
        nationality: b.nationality,
        sex: b.sex,
        countryCode: b.countryCode,
        town: decodeBase64Field('town', b.town),
        address: decodeBase64Field('address', b.address),
        postCode: b.postCode,
        idnoType: b.idnoType,
        idno: b.idno,
      };
      return signedWrite(svc, req, reply, b.randomStr, createHolder, input);
    },
  );

  app.post(
    '/api/network/holderQuery.html',
    {
      schema: {
        tags: ['Cardholders'],
        summary: 'Query a cardholder',
        description: 'A read: randomStr is single-use. Answers the envelope with the cardholder record in model.',
        body: HolderQueryBody,
        response: { 200: HolderEnvelope, ...errorResponses },
      },
      config: { operation: 'holderQuery' },
    },
    async (req) => {
      await signedRead(svc, req, req.body.randomStr);
      return ok(
        await svc.database.read((db) => getHolder({ db, box: svc.box, merchantId: req.merchant.appId, holderId: req.body.holderId })),
        req.id,
      );
    },
  );
};

/** Sandbox-only: registered only in the sandbox, so production answers 404 (decisions §2). */
export const holderSandboxRoutes: FastifyPluginAsyncTypebox<{ svc: Services }> = async (app, { svc }) => {
  app.post(
    '/sandbox/holder/review',
    {
      schema: {
        tags: ['Sandbox'],
        summary: 'Set a cardholder audit status as a reviewer would (sandbox only)',
        body: HolderReviewBody,
        response: { 200: HolderEnvelope, ...errorResponses },
      },
      config: { operation: 'sandboxHolderReview' },
    },
    async (req, reply) => {
      const { randomStr, input } = operationInput(req.body);
      const model = await signedWrite(svc, req, reply, randomStr, reviewHolder, input, { sandbox: true });
      return ok(model, req.id);
    },
  );
};
