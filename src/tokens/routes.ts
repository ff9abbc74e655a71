import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Services } from '../context.js';
import { operationInput, signedRead, signedWrite } from '../http/operation.js';
import { Envelope, errorResponses, ok } from '../http/schemas.js';
import { activateToken, deleteToken, resumeToken, suspendToken } from './actions.js';
import { listMerchantTokens, queryToken } from './query.js';
import {
  TokenActionBody,
  TokenEnvelope,
  TokenListBody,
  TokenPageSchema,
  TokenRefBody,
  TokenSettingsQueryBody,
  TokenSettingsSchema,
  TokenSettingsUpdateBody,
} from './schemas.js';
import { tokenSettingsOf, updateTokenSettings } from './settings.js';

const TAGS = ['Tokens'];
const SCOPE =
  'A token of another merchant’s card is 2760, as an unknown one. Each change is told to the TSP and to you (a `token.updated` callback), and kept in the token’s `history`. docs/tokens.md.';

/** The merchant's wallet tokens (decisions §15.6): writes idempotent by randomStr, reads single-use. */
export const tokenRoutes: FastifyPluginAsyncTypebox<{ svc: Services }> = async (app, { svc }) => {
  app.post(
    '/api/network/tokenList.html',
    {
      schema: {
        tags: TAGS,
        summary: 'The merchant’s wallet tokens (Apple Pay, Google Pay, cards on file), newest first, by card and status, paged',
        description:
          '`start`: the index of the first; `limit` 1–100 (default 30). Another merchant’s card lists nothing. Each token with its device and status history. A read: randomStr is single-use.',
        body: TokenListBody,
        response: { 200: Envelope(TokenPageSchema), ...errorResponses },
      },
      config: { operation: 'tokenList' },
    },
    async (req) => {
      const { randomStr, input } = operationInput(req.body);
      await signedRead(svc, req, randomStr);
      return ok(await svc.database.read((db) => listMerchantTokens(db, req.merchant.appId, input)), req.id);
    },
  );

  app.post(
    '/api/network/tokenQuery.html',
    {
      schema: {
        tags: TAGS,
        summary: 'One wallet token: its card, status, wallet, device and status history',
        description: 'Another merchant’s token is 2760, as an unknown one. A read: randomStr is single-use.',
        body: TokenRefBody,
        response: { 200: TokenEnvelope, ...errorResponses },
      },
      config: { operation: 'tokenQuery' },
    },
    async (req) => {
      const { randomStr, input } = operationInput(req.body);
      await signedRead(svc, req, randomStr);
      return ok(await svc.database.read((db) => queryToken(db, req.merchant.appId, input.tokenId)), req.id);
    },
  );

  // The changes of a token's status the merchant asks for: one shape, each with its verb and words.
  for (const route of [
    {
      operation: 'tokenSuspend',
      verb: suspendToken,
      summary: 'Suspend a wallet token: payments with it are declined until it is resumed',
      description: `An active token becomes suspended (the TSP is told \`suspend\` with your \`reason\`). A suspended one is answered as it is; one suspended by its card's freeze or by the TSP becomes yours, so the card's unfreeze no longer resumes it. A pending or deleted token is 2761. ${SCOPE} A write.`,
    },
    {
      operation: 'tokenResume',
      verb: resumeToken,
      summary: 'Resume a suspended wallet token',
      description: `A suspended token becomes active (the TSP is told \`resume\`); an active one is answered as it is. Its card must be active (2724: a token its card's freeze suspended comes back when the card is unfrozen); a token the operator suspended is the operator's to resume (2761), as is a pending or deleted one. ${SCOPE} A write.`,
    },
    {
      operation: 'tokenDelete',
      verb: deleteToken,
      summary: 'Delete a wallet token for good (the device or merchant must provision again)',
      description: `A pending, active or suspended token becomes deleted, final (the TSP is told \`delete\`); a deleted one is answered as it is. ${SCOPE} A write.`,
    },
  ] as const) {
    app.post(
      `/api/network/${route.operation}.html`,
      {
        schema: {
          tags: TAGS,
          summary: route.summary,
          description: route.description,
          body: TokenActionBody,
          response: { 200: TokenEnvelope, ...errorResponses },
        },
        config: { operation: route.operation },
      },
      async (req, reply) => {
        const { randomStr, input } = operationInput(req.body);
        return ok(await signedWrite(svc, req, reply, randomStr, route.verb, input), req.id);
      },
    );
  }

  app.post(
    '/api/network/tokenActivate.html',
    {
      schema: {
        tags: TAGS,
        summary: 'Activate a pending wallet token: the cardholder confirmed it in your app (app-to-app)',
        description: `For a token whose provisioning asked for a step-up with an \`app\` method (your tokenSettingsUpdate \`methods\`): the pending token becomes active and the TSP is told \`activate\`. An active token is answered as it is; a token offered no \`app\` method, or suspended or deleted, is 2761; its card must be active (2724). ${SCOPE} A write.`,
        body: TokenRefBody,
        response: { 200: TokenEnvelope, ...errorResponses },
      },
      config: { operation: 'tokenActivate' },
    },
    async (req, reply) => {
      const { randomStr, input } = operationInput(req.body);
      return ok(await signedWrite(svc, req, reply, randomStr, activateToken, input), req.id);
    },
  );

  app.post(
    '/api/network/tokenSettingsUpdate.html',
    {
      schema: {
        tags: TAGS,
        summary: 'Set the token decision endpoint and the step-up methods offered to cardholders',
        description:
          'Changes the fields the request carries. `decisionUrl`: each provisioning the program would not decline is sent there as a `token.decision` event, signed like callbacks, and waits up to 500 ms for `{"decision": "approve"|"require_authentication"|"decline"}` (no readable answer in time: require_authentication); the SSRF rules of callbacks apply; null removes it (the built-in rules decide). `methods`: `otp_sms`, `otp_email` (a code in a `token.otp` callback, delivered by you), `app` (you confirm the cardholder in your app, then call tokenActivate); null: the default. docs/tokens.md. A write.',
        body: TokenSettingsUpdateBody,
        response: { 200: Envelope(TokenSettingsSchema), ...errorResponses },
      },
      config: { operation: 'tokenSettingsUpdate' },
    },
    async (req, reply) => {
      const { randomStr, input } = operationInput(req.body);
      return ok(await signedWrite(svc, req, reply, randomStr, updateTokenSettings, input), req.id);
    },
  );

  app.post(
    '/api/network/tokenSettingsQuery.html',
    {
      schema: {
        tags: TAGS,
        summary: 'The token settings: decision endpoint and step-up methods',
        description: '`decisionUrl` (null: none) and `methods` (null: the default) as they are now. A read: randomStr is single-use.',
        body: TokenSettingsQueryBody,
        response: { 200: Envelope(TokenSettingsSchema), ...errorResponses },
      },
      config: { operation: 'tokenSettingsQuery' },
    },
    async (req) => {
      const { randomStr } = operationInput(req.body);
      await signedRead(svc, req, randomStr);
      return ok(await svc.database.read((db) => tokenSettingsOf(db, req.merchant.appId)), req.id);
    },
  );
};
