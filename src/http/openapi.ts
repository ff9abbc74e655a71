import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { API_DESCRIPTION } from '../docs/description.js';
import { exampleOf } from '../docs/examples.js';
import { apiReferenceRoutes } from '../docs/reference.js';
import { AuthorizationAnswerSchema, AuthorizationRequestSchema } from '../trades/schemas.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Every signed operation registered: path and operation name (for docs checks and tooling). */
    operations: Array<{ url: string; operation: string }>;
  }
}

export interface OpenApiOptions {
  version: string;
  publicUrl: string;
}

/**
 * The API's description of itself: the list of signed operations (app.operations), the OpenAPI
 * document at /openapi.json, generated from the same TypeBox schemas that validate requests, and
 * the API reference at /docs (src/docs/reference.ts) rendered from it. Register it before the
 * routes: it sees each route as it is added.
 */
export const openApiPlugin = fp(
  async (app: FastifyInstance, { version, publicUrl }: OpenApiOptions) => {
    const operations: Array<{ url: string; operation: string }> = [];
    app.decorate('operations', operations);
    // Before @fastify/swagger's own onRoute hook, which reads what this one sets.
    app.addHook('onRoute', (route) => {
      if (!route.config?.operation) return;
      operations.push({ url: route.url, operation: route.config.operation });
      // The operation's name is its OpenAPI operationId: SDKs, `cardprogram call` and docs use it.
      if (route.schema && !route.schema.operationId) route.schema.operationId = route.config.operation;
      // A copyable example body in the API reference (src/docs/examples.ts); on a copy, because
      // several routes share one schema object.
      const body = route.schema?.body;
      if (route.schema && typeof body === 'object' && body !== null) route.schema.body = { ...body, examples: [exampleOf(body)] };
    });
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'cardprogram',
          version,
          description: API_DESCRIPTION,
          license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
        },
        servers: [{ url: publicUrl }],
        // Requests the service sends to the merchant that decide something: the real-time authorization.
        webhooks: {
          'authorization.request': {
            post: {
              operationId: 'authorizationRequest',
              summary: 'Decide an authorization (sent to your authorization endpoint)',
              description:
                'Sent once to the authorizationUrl set with authorizationEndpointUpdate, for each authorization the program would approve, signed like callbacks (Standard Webhooks: webhook-id is the authorization’s id, webhook-timestamp, webhook-signature with your webhook secret). Answer within your timeoutMs with a 2xx and {"approved": true|false, "reason"?}; anything else, or nothing in time, applies your defaultDecision. The SDK’s webhooks.authorizationRequest verifies and parses it, Webhooks.decide writes the answer.',
              tags: ['Authorizations'],
              requestBody: { required: true, content: { 'application/json': { schema: AuthorizationRequestSchema } } },
              responses: {
                '200': {
                  description: 'Your decision (any 2xx status)',
                  content: { 'application/json': { schema: AuthorizationAnswerSchema } },
                },
              },
            },
          },
        },
      },
    });
    app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
    await apiReferenceRoutes(app);
  },
  { name: 'cardprogram-openapi' },
);
