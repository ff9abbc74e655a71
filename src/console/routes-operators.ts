import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { type AuditFilter, listAudit } from '../audit/trail.js';
import { type DB, OPERATOR_ROLES } from '../db/schema.js';
import { runVerb } from '../runner.js';
import { createOperator, listOperators, resetOperator, updateOperator } from './accounts.js';
import * as pages from './pages.js';
import { isRole } from './roles.js';
import { type ConsoleKit, isIdText, queryText, text } from './routes-kit.js';

/** The console's the audit trail and the operators’ accounts (src/console/routes.ts registers it with the shared kit, ./routes-kit.ts). */
export function operatorsRoutes(app: FastifyInstance, kit: ConsoleKit): void {
  const { html, redirect, audit, session, post, change, svc } = kit;
  app.get('/console/audit', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'read');
    if (!frame) return reply;
    const q = req.query as Record<string, unknown>;
    const filter: AuditFilter = {
      actor: queryText(q.actor),
      action: queryText(q.action),
      target: queryText(q.target),
      limit: 200,
      partial: true,
    };
    return html(
      reply,
      200,
      pages.auditPage({ ...frame, current: '/console/audit' }, filter, await svc.database.read((db) => listAudit(db, filter))),
    );
  });

  app.get('/console/operators', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'operators');
    if (!frame) return reply;
    const done = (req.query as { done?: unknown }).done;
    const f = { ...frame, current: '/console/operators', notice: typeof done === 'string' ? pages.notice(done) : undefined };
    return html(reply, 200, pages.operatorsPage(f, await svc.database.read((db) => listOperators(db, svc.clock())), null));
  });

  const setupUrl = (token: string) => `${svc.config.publicUrl}/console/setup?token=${token}`;

  app.post('/console/operators', { schema: { hide: true } }, async (req, reply) => {
    const posted = await post(req, reply, 'operators');
    if (!posted) return reply;
    const { frame, form } = posted;
    const role = form.get('role');
    const email = text(form, 'email', 254);
    if (!isRole(role))
      return html(reply, 400, pages.problemPage(frame, `Choose a role: ${OPERATOR_ROLES.join(', ')}.`, '/console/operators'));
    const made = await change(
      reply,
      frame,
      () =>
        runVerb(svc, createOperator, {
          input: { email, role },
          actor: kit.operatorOf(req, frame.session),
          audit: audit(req, frame.session, 'operator.create', email.toLowerCase()),
        }),
      '/console/operators',
    );
    if (made === null) return reply;
    const f = { ...frame, current: '/console/operators' };
    return html(
      reply,
      200,
      pages.operatorsPage(f, await svc.database.read((db) => listOperators(db, svc.clock())), {
        email: made.email,
        url: setupUrl(made.setupToken),
      }),
    );
  });

  app.post<{ Params: { id: string; action: string } }>('/console/operators/:id/:action', { schema: { hide: true } }, async (req, reply) => {
    const posted = await post(req, reply, 'operators');
    if (!posted) return reply;
    const { frame, form } = posted;
    const row = isIdText(req.params.id)
      ? await svc.database.read((db) =>
          db.selectFrom('operators').select(['id', 'email']).where('id', '=', req.params.id).executeTakeFirst(),
        )
      : undefined;
    if (!row) return html(reply, 404, pages.notFoundPage(frame, 'No such operator.', '/console/operators'));
    const state = async (tx: Kysely<DB>) =>
      tx.selectFrom('operators').select(['role', 'status']).where('id', '=', row.id).executeTakeFirst();
    const f = { ...frame, current: '/console/operators' };
    if (req.params.action === 'reset') {
      const reset = await change(
        reply,
        frame,
        () =>
          runVerb(svc, resetOperator, {
            input: { email: row.email },
            actor: kit.operatorOf(req, frame.session),
            audit: audit(req, frame.session, 'operator.reset', row.email, state),
          }),
        '/console/operators',
      );
      if (reset === null) return reply;
      return html(
        reply,
        200,
        pages.operatorsPage(f, await svc.database.read((db) => listOperators(db, svc.clock())), {
          email: reset.email,
          url: setupUrl(reset.setupToken),
        }),
      );
    }
    if (req.params.action !== 'update') return html(reply, 404, pages.notFoundPage(frame, 'No such action.', '/console/operators'));
    const role = form.get('role');
    const status = form.get('status');
    const input = {
      email: row.email,
      role: isRole(role) ? role : undefined,
      status: status === 'active' || status === 'disabled' ? status : undefined,
    } as const;
    if (!input.role && !input.status) return html(reply, 400, pages.problemPage(frame, 'Choose a role or a status.', '/console/operators'));
    const done = await change(
      reply,
      frame,
      () =>
        runVerb(svc, updateOperator, {
          input,
          actor: kit.operatorOf(req, frame.session),
          audit: audit(req, frame.session, 'operator.update', row.email, state),
        }),
      '/console/operators',
    );
    return done === null ? reply : redirect(reply, '/console/operators?done=operator-updated');
  });
}
