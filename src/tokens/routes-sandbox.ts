import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Services } from '../context.js';
import { operationInput, writeKey } from '../http/operation.js';
import { Envelope, errorResponses, ok } from '../http/schemas.js';
import { sandboxProvision, sandboxVerify } from './sandbox.js';
import {
  SandboxTokenProvisionBody,
  SandboxTokenProvisioningSchema,
  SandboxTokenVerificationSchema,
  SandboxTokenVerifyBody,
} from './schemas.js';

/** The sandbox's TSP (sandbox only; 404 in production): docs/tokens.md, "In the sandbox". */
export const tokensSandboxRoutes: FastifyPluginAsyncTypebox<{ svc: Services }> = async (app, { svc }) => {
  app.post(
    '/sandbox/tokens/provision',
    {
      schema: {
        tags: ['Sandbox'],
        summary: 'Provision a wallet token for a card as a token service provider would (sandbox only)',
        description:
          'Plays the TSP of Apple Pay, Google Pay, Samsung Pay or a card-on-file requestor for one of your cards: a provisioning request (the card’s number and expiry from the vault, a tokenReferenceId and requestor made up) through the same decision as `POST /tsp/provision` (decisions §15.3: the card’s checks, its live tokens, your token decision endpoint or the built-in rules on walletRiskScore). `approve`: an active token; `require_authentication`: a pending one, and a one-time code asked for at once for the first code method (your `token.otp` callback carries it; finish with /sandbox/tokens/verify) — with only `app` offered, confirm with tokenActivate; `decline`: no token, and the reason. Answers the token as tokenQuery does, and the tokenReferenceId and tokenRequestorId that the card network link’s field 48 subelements 33 and 34 carry. docs/tokens.md. A write.',
        body: SandboxTokenProvisionBody,
        response: { 200: Envelope(SandboxTokenProvisioningSchema), ...errorResponses },
      },
      config: { operation: 'sandboxTokenProvision' },
    },
    async (req, reply) => {
      const { randomStr, input } = operationInput(req.body);
      const appId = req.merchant.appId;
      const actor = { kind: 'merchant' as const, appId, origin: req.ip, sandbox: true };
      return ok(await sandboxProvision(svc, { merchantId: appId, actor, once: writeKey(req, reply, randomStr), input }), req.id);
    },
  );
  app.post(
    '/sandbox/tokens/verify',
    {
      schema: {
        tags: ['Sandbox'],
        summary: 'Finish a wallet token’s step-up with its one-time code (sandbox only)',
        description:
          'The code from your `token.otp` callback, as the cardholder types it into the wallet and the TSP passes it on (`POST /tsp/activation-code/verify`): right, the token turns active; wrong, counted (the third deletes the token and the TSP is told); expired or none sent, not valid and not counted. Answers `valid`, `attemptsLeft` and the token. A token that is not pending is 2761. docs/tokens.md. A write.',
        body: SandboxTokenVerifyBody,
        response: { 200: Envelope(SandboxTokenVerificationSchema), ...errorResponses },
      },
      config: { operation: 'sandboxTokenVerify' },
    },
    async (req, reply) => {
      const { randomStr, input } = operationInput(req.body);
      const appId = req.merchant.appId;
      const actor = { kind: 'merchant' as const, appId, origin: req.ip, sandbox: true };
      return ok(await sandboxVerify(svc, { merchantId: appId, actor, once: writeKey(req, reply, randomStr), input }), req.id);
    },
  );
};
