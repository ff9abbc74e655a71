import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { DB, ExceptionStatus } from '../db/schema.js';
import { postException, returnException } from '../ledger/exceptions.js';
import { listExceptions } from '../ledger/exceptions-query.js';
import { runVerb } from '../runner.js';
import * as pages from './pages.js';
import type { ConsoleKit } from './routes-kit.js';
import { isIdText } from './routes-kit.js';

const NOTICES = {
  posted: 'The advice was posted to its card (a forced post); the merchant’s trade callback says so.',
  returned: 'The advice was returned to the network: it is a line of today’s settlement.',
} as const;

/**
 * The console's exceptions queue (decisions §12.13): the card network's advices held in suspense above
 * the forced posts' ceilings, and the two decisions on each (support and admin; a viewer reads), run
 * through the same verbs as the CLI with their audit records (`exception.post`, `exception.return`).
 */
export function exceptionsRoutes(app: FastifyInstance, kit: ConsoleKit): void {
  const { html, redirect, audit, session, post, change, operatorOf, svc } = kit;

  app.get('/console/exceptions', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'read');
    if (!frame) return reply;
    const q = req.query as { status?: unknown; done?: unknown };
    const status: ExceptionStatus | 'all' = q.status === 'posted' || q.status === 'returned' || q.status === 'all' ? q.status : 'open';
    const rows = await svc.database.read((db) => listExceptions(db, { status }));
    const done = q.done === 'posted' || q.done === 'returned' ? { text: NOTICES[q.done] } : undefined;
    return html(reply, 200, pages.exceptionsPage({ ...frame, current: '/console/exceptions', notice: done }, { status, rows }));
  });

  for (const [action, verb, status] of [
    ['post', postException, 'posted'],
    ['return', returnException, 'returned'],
  ] as const) {
    app.post<{ Params: { id: string } }>(`/console/exceptions/:id/${action}`, { schema: { hide: true } }, async (req, reply) => {
      const posted = await post(req, reply, 'exceptions');
      if (!posted) return reply;
      const { frame, form } = posted;
      const id = req.params.id;
      const back = '/console/exceptions';
      if (!isIdText(id)) return html(reply, 404, pages.notFoundPage(frame, 'No such exception.', back));
      if (form.get('confirm') !== 'yes') {
        return html(
          reply,
          400,
          pages.problemPage(frame, `Tick the confirmation: to ${action} an exception moves money and cannot be undone.`, back),
        );
      }
      const before = async (tx: Kysely<DB>) =>
        (await tx
          .selectFrom('network_exceptions')
          .select(['status', 'card_id', 'amount', 'currency', 'suspended'])
          .where('id', '=', id)
          .executeTakeFirst()) ?? null;
      const done = await change(
        reply,
        frame,
        () =>
          runVerb(svc, verb, {
            input: { exceptionId: id },
            actor: operatorOf(req, frame.session),
            audit: audit(req, frame.session, `exception.${action}`, id, before),
          }),
        back,
      );
      return done === null ? reply : redirect(reply, `${back}?done=${status}`);
    });
  }
}
