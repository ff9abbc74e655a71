import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Services } from '../context.js';
import { operationInput, signedRead, signedWrite, writeKey } from '../http/operation.js';
import { Envelope, errorResponses, ok } from '../http/schemas.js';
import { listAuthentications, queryAuthentication } from './query.js';
import { sandboxThreeDsComplete, threeDsChallengeRespond } from './respond.js';
import { sandboxAuthenticate } from './sandbox.js';
import {
  AuthenticationPageSchema,
  AuthenticationSchema,
  SandboxAuthenticateBody,
  SandboxAuthenticationSchema,
  SandboxThreeDsCompleteBody,
  SandboxThreeDsCompletionSchema,
  ThreeDsChallengeRespondBody,
  ThreeDsListBody,
  ThreeDsQueryBody,
  ThreeDsSettingsQueryBody,
  ThreeDsSettingsSchema,
  ThreeDsSettingsUpdateBody,
} from './schemas.js';
import { threeDsSettingsOf, updateThreeDsSettings } from './settings.js';

const TAGS = ['3-D Secure'];

/** The merchant's 3-D Secure operations (decisions §14.6): its cards' authentications and its settings. */
export const threeDsRoutes: FastifyPluginAsyncTypebox<{ svc: Services }> = async (app, { svc }) => {
  app.post(
    '/api/network/threeDsQuery.html',
    {
      schema: {
        tags: TAGS,
        summary:
          'One 3-D Secure authentication of the merchant’s cards: its outcome, reason, ECI, challenge, and the authorizations that used it',
        description: 'Another merchant’s authentication is 2750, as an unknown one. A read: randomStr is single-use.',
        body: ThreeDsQueryBody,
        response: { 200: Envelope(AuthenticationSchema), ...errorResponses },
      },
      config: { operation: 'threeDsQuery' },
    },
    async (req) => {
      const { randomStr, input } = operationInput(req.body);
      await signedRead(svc, req, randomStr);
      return ok(await svc.database.read((db) => queryAuthentication(db, req.merchant.appId, input.acsTransID)), req.id);
    },
  );

  app.post(
    '/api/network/threeDsList.html',
    {
      schema: {
        tags: TAGS,
        summary: 'The merchant’s 3-D Secure authentications, newest first, by card and day, paged',
        description:
          '`start`: the index of the first; `limit` 1–100 (default 30); `from`, `to`: days of the AReq (UTC). Refusals are listed too (an expiry mismatch is N/01). A read.',
        body: ThreeDsListBody,
        response: { 200: Envelope(AuthenticationPageSchema), ...errorResponses },
      },
      config: { operation: 'threeDsList' },
    },
    async (req) => {
      const { randomStr, input } = operationInput(req.body);
      await signedRead(svc, req, randomStr);
      return ok(await svc.database.read((db) => listAuthentications(db, req.merchant.appId, input)), req.id);
    },
  );

  app.post(
    '/api/network/threeDsSettingsUpdate.html',
    {
      schema: {
        tags: TAGS,
        summary: 'Set the 3-D Secure decision endpoint and the challenge method',
        description:
          'Changes the fields the request carries. `decisionUrl`: each AReq the program would not refuse is sent there as a `threeDs.decision` event, signed like callbacks, and waits up to 1 s for `{"decision": "frictionless"|"challenge"|"decline"}` (no readable answer in time: challenge); the SSRF rules of callbacks apply; null removes it. `challengeMethod`: `otp` (a one-time code in a `threeDs.otp` callback, delivered by the merchant) or `oob` (a `threeDs.challenge` callback, approved in the merchant’s app). A challenge needs the merchant’s notify URL (N/13 without). docs/3ds.md. A write.',
        body: ThreeDsSettingsUpdateBody,
        response: { 200: Envelope(ThreeDsSettingsSchema), ...errorResponses },
      },
      config: { operation: 'threeDsSettingsUpdate' },
    },
    async (req, reply) => {
      const { randomStr, input } = operationInput(req.body);
      return ok(await signedWrite(svc, req, reply, randomStr, updateThreeDsSettings, input), req.id);
    },
  );

  app.post(
    '/api/network/threeDsChallengeRespond.html',
    {
      schema: {
        tags: TAGS,
        summary: 'Answer an out-of-band 3-D Secure challenge: the cardholder approved or declined the purchase in your app',
        description:
          'For a challenge of method `oob` (a `threeDs.challenge` callback told you of it): `approved` ends it Y (the authentication value issued), `declined` N/01. The page waiting in the cardholder’s browser then posts the CRes to the 3DS Server, the RReq goes to the DS and a `threeDs.result` callback follows. Another merchant’s authentication is 2750; one that is over (answered, cancelled, timed out after 5 minutes) or not out of band is 2751. docs/3ds.md. A write.',
        body: ThreeDsChallengeRespondBody,
        response: { 200: Envelope(AuthenticationSchema), ...errorResponses },
      },
      config: { operation: 'threeDsChallengeRespond' },
    },
    async (req, reply) => {
      const { randomStr, input } = operationInput(req.body);
      return ok(await signedWrite(svc, req, reply, randomStr, threeDsChallengeRespond, input), req.id);
    },
  );

  app.post(
    '/api/network/threeDsSettingsQuery.html',
    {
      schema: {
        tags: TAGS,
        summary: 'The 3-D Secure settings: decision endpoint and challenge method',
        description: '`decisionUrl` (null: none) and `challengeMethod` as they are now. A read: randomStr is single-use.',
        body: ThreeDsSettingsQueryBody,
        response: { 200: Envelope(ThreeDsSettingsSchema), ...errorResponses },
      },
      config: { operation: 'threeDsSettingsQuery' },
    },
    async (req) => {
      const { randomStr } = operationInput(req.body);
      await signedRead(svc, req, randomStr);
      return ok(await svc.database.read((db) => threeDsSettingsOf(db, req.merchant.appId)), req.id);
    },
  );
};

/** The sandbox's directory server (sandbox only; 404 in production). */
export const threeDsSandboxRoutes: FastifyPluginAsyncTypebox<{ svc: Services }> = async (app, { svc }) => {
  app.post(
    '/sandbox/3ds/authenticate',
    {
      schema: {
        tags: ['Sandbox'],
        summary: 'Authenticate a purchase with 3-D Secure as a directory server would (sandbox only)',
        description:
          'Builds an AReq (EMV 3DS 2.2.0, browser, payment) for the card (its number and expiry from the vault), runs it through the ACS as the DS’s would, and answers the ARes: Y with `eci` and `authenticationValue`, N or U with `transStatusReason`, or C with `challenge`, the form that opens the challenge (`acsURL`, `creq`). `currency` defaults to the card’s; `challengeInd` is threeDSRequestorChallengeInd (04: challenge mandated). docs/3ds.md. A write.',
        body: SandboxAuthenticateBody,
        response: { 200: Envelope(SandboxAuthenticationSchema), ...errorResponses },
      },
      config: { operation: 'sandboxThreeDsAuthenticate' },
    },
    async (req, reply) => {
      const { randomStr, input } = operationInput(req.body);
      const appId = req.merchant.appId;
      const once = writeKey(req, reply, randomStr);
      return ok(
        await sandboxAuthenticate(svc, {
          merchantId: appId,
          actor: { kind: 'merchant', appId, origin: req.ip, sandbox: true },
          once,
          input,
        }),
        req.id,
      );
    },
  );
  app.post(
    '/sandbox/3ds/complete',
    {
      schema: {
        tags: ['Sandbox'],
        summary: 'Finish a 3-D Secure challenge without a browser (sandbox only)',
        description:
          'For a challenge the sandbox’s authenticate (or an AReq) opened: `otp`, the code as the cardholder would type it (method otp; the code is in the `threeDs.otp` callback; a wrong one counts, the third ends it N/19), or `result`, `approved` or `declined`, as your app would answer (method oob). Answers the authentication, the wrong codes still allowed, and once it is over the CRes the page would post and what the directory server hands your 3DS Server from the RReq: `eci` and, for Y, `authenticationValue`, for the authorization (sandboxAuthorize’s `eci` and `authenticationValue`, usable once). Only the sandbox plays the DS: in production the value reaches you through your 3DS Server, never through this API. The same verbs as the page; the RReq and the `threeDs.result` callback follow. docs/3ds.md. A write.',
        body: SandboxThreeDsCompleteBody,
        response: { 200: Envelope(SandboxThreeDsCompletionSchema), ...errorResponses },
      },
      config: { operation: 'sandboxThreeDsComplete' },
    },
    async (req, reply) => {
      const { randomStr, input } = operationInput(req.body);
      return ok(await signedWrite(svc, req, reply, randomStr, sandboxThreeDsComplete, input, { sandbox: true }), req.id);
    },
  );
};
