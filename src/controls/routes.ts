import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Services } from '../context.js';
import { operationInput, signedWrite } from '../http/operation.js';
import { errorResponses, ok } from '../http/schemas.js';
import { ControlsEnvelope, ControlsUpdateBody } from './schemas.js';
import { updateControls } from './update.js';

/** The merchant's spending controls of a card or a cardholder (decisions §11). */
export const controlsRoutes: FastifyPluginAsyncTypebox<{ svc: Services }> = async (app, { svc }) => {
  app.post(
    '/api/network/cardControlsUpdate.html',
    {
      schema: {
        tags: ['Cards'],
        summary: 'Set the spending controls of a card, or of a cardholder (each of its cards that does not set the same field)',
        description:
          'Send `cardId` or `holderId`. `controls` replaces all the controls of that card or cardholder (`{}` removes them): spending limits per authorization, day, week, month, year or for all time (UTC calendar intervals, optionally for some merchant categories only), allowed or blocked merchant categories, allowed or blocked countries, allowed channels. A field the card sets replaces the cardholder’s for that card; a cardholder’s limits count the spending of all its cards in the card’s currency. What limits already count is worked out again from the card’s history, so a new daily limit counts what was spent today. An authorization the controls refuse is declined with 2728 and its reason (docs/transactions.md, “Authorization decisions”). Another merchant’s card is 2648, its cardholder 2606; a closed card 2724. A write.',
        body: ControlsUpdateBody,
        response: { 200: ControlsEnvelope, ...errorResponses },
      },
      config: { operation: 'cardControlsUpdate' },
    },
    async (req, reply) => {
      const { randomStr, input } = operationInput(req.body);
      return ok(await signedWrite(svc, req, reply, randomStr, updateControls, input), req.id);
    },
  );
};
