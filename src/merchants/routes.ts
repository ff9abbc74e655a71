import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Services } from '../context.js';
import { operationInput, signedRead, signedWrite } from '../http/operation.js';
import { Envelope, errorResponses, ok } from '../http/schemas.js';
import { authorizationEndpointOf, setAuthorizationEndpoint } from './authorization-endpoint.js';
import { AuthorizationEndpointBody, AuthorizationEndpointQueryBody, AuthorizationEndpointSchema } from './schemas.js';

/** The merchant's own settings it may change by API. */
export const merchantRoutes: FastifyPluginAsyncTypebox<{ svc: Services }> = async (app, { svc }) => {
  app.post(
    '/api/network/authorizationEndpointUpdate.html',
    {
      schema: {
        tags: ['Authorizations'],
        summary: 'Set (or remove) the real-time authorization endpoint',
        description:
          'Each authorization that passes the card’s status, spending controls and balance is then sent to this URL as an `authorization.request` event, signed like callbacks (Standard Webhooks, the webhook secret), and waits up to `timeoutMs` for `{"approved": true|false, "reason"?: "…"}`. No readable answer in time: `defaultDecision` applies and the authorization records it (docs/transactions.md, “Authorization decisions”). The SSRF rules of callbacks apply to the URL. This instance uses the settings at once, every other within the merchant cache’s bound (5 s). A write.',
        body: AuthorizationEndpointBody,
        response: { 200: Envelope(AuthorizationEndpointSchema), ...errorResponses },
      },
      config: { operation: 'authorizationEndpointUpdate' },
    },
    async (req, reply) => {
      const { randomStr, input } = operationInput(req.body);
      return ok(await signedWrite(svc, req, reply, randomStr, setAuthorizationEndpoint, input), req.id);
    },
  );

  app.post(
    '/api/network/authorizationEndpointQuery.html',
    {
      schema: {
        tags: ['Authorizations'],
        summary: 'The real-time authorization endpoint’s settings',
        description: 'authorizationUrl (null: none), timeoutMs and defaultDecision as they are now. A read: randomStr is single-use.',
        body: AuthorizationEndpointQueryBody,
        response: { 200: Envelope(AuthorizationEndpointSchema), ...errorResponses },
      },
      config: { operation: 'authorizationEndpointQuery' },
    },
    async (req) => {
      await signedRead(svc, req, req.body.randomStr);
      return ok(await svc.database.read((db) => authorizationEndpointOf(db, req.merchant.appId)), req.id);
    },
  );
};
