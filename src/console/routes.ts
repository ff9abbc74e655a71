import type { FastifyPluginAsync } from 'fastify';
import type { Services } from '../context.js';
import { htmlScope } from '../http/html-pages.js';
import * as pages from './pages.js';
import { accessRoutes } from './routes-access.js';
import { callbacksRoutes } from './routes-callbacks.js';
import { cardsRoutes } from './routes-cards.js';
import { disputesRoutes } from './routes-disputes.js';
import { exceptionsRoutes } from './routes-exceptions.js';
import { consoleKit } from './routes-kit.js';
import { merchantsRoutes } from './routes-merchants.js';
import { operatorsRoutes } from './routes-operators.js';
import { reviewsRoutes } from './routes-reviews.js';
import { tokensRoutes } from './routes-tokens.js';
import { barePage } from './view.js';

/**
 * The operators' console (issue 17), under /console, registered only when CARDPROGRAM_CONSOLE is on.
 * Server-rendered pages without script; every change is a verb run with its audit record (who, from
 * where, before and after) in the change's own transaction.
 */
export const consoleRoutes: FastifyPluginAsync<{ svc: Services }> = async (app, { svc }) => {
  const kit = consoleKit(svc);
  const { html, session } = kit;
  // The console answers on the service's own addresses only: a merchant's mapped card-page host is
  // the merchant's (its DNS, maybe its TLS proxy), and an operator's password must never go there.
  app.addHook('onRequest', async (req, reply) => {
    if (await svc.domains.lookup(req.hostname)) {
      return html(reply, 404, barePage('Not found', '<p>There is no such page.</p>'));
    }
  });
  htmlScope(app, svc, {
    send: html,
    bodyLimit: 8192,
    unavailable: barePage('The console is not available just now', '<p>The database does not answer. Try again in a moment.</p>'),
    failed: (serverError) =>
      barePage(
        serverError ? 'Something went wrong' : 'This request could not be handled',
        '<p><a href="/console">Back to the console</a></p>',
      ),
    what: 'console',
  });

  accessRoutes(app, kit);
  reviewsRoutes(app, kit);
  cardsRoutes(app, kit);
  tokensRoutes(app, kit);
  disputesRoutes(app, kit);
  exceptionsRoutes(app, kit);
  callbacksRoutes(app, kit);
  merchantsRoutes(app, kit);
  operatorsRoutes(app, kit);

  // Anything else under /console: the console's own 404 page.
  app.get('/console/*', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'read');
    if (!frame) return reply;
    return html(reply, 404, pages.notFoundPage(frame, 'There is no such page.', '/console'));
  });
  app.route({
    method: ['POST', 'PUT', 'PATCH', 'DELETE'],
    url: '/console/*',
    schema: { hide: true },
    handler: async (_req, reply) =>
      html(reply, 404, barePage('Not found', '<p>There is no such page.</p><p><a href="/console">Back to the console</a></p>')),
  });
};
