import type { FastifyInstance } from 'fastify';
import { listEndpoints } from '../callbacks/breaker.js';
import { retryCallbacks } from '../callbacks/manage.js';
import { runVerb } from '../runner.js';
import * as pages from './pages.js';
import { callbackDetail, troubledCallbacks } from './queries.js';
import { type ConsoleKit, isIdText, text } from './routes-kit.js';

/** The console's callbacks that failed or wait, their attempts, resending, and the endpoints whose breaker is open (src/console/routes.ts registers it with the shared kit, ./routes-kit.ts). */
export function callbacksRoutes(app: FastifyInstance, kit: ConsoleKit): void {
  const { html, redirect, audit, session, post, change, svc } = kit;
  app.get('/console/callbacks', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'read');
    if (!frame) return reply;
    const q = req.query as { merchant?: unknown; status?: unknown; done?: unknown };
    const merchantId = isIdText(q.merchant) ? q.merchant : undefined;
    const status = q.status === 'failed' || q.status === 'pending' ? q.status : undefined;
    const rows = await svc.database.read((db) => troubledCallbacks(db, { merchantId, status }));
    const endpoints = await svc.database.read((db) => listEndpoints(db, merchantId));
    const f = { ...frame, current: '/console/callbacks', notice: typeof q.done === 'string' ? pages.notice(q.done) : undefined };
    return html(reply, 200, pages.callbacksPage(f, rows, { merchantId, status }, endpoints));
  });

  app.get<{ Params: { id: string } }>('/console/callbacks/:id', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'read');
    if (!frame) return reply;
    const detail = isIdText(req.params.id) ? await callbackDetail(svc, req.params.id) : null;
    const f = {
      ...frame,
      current: '/console/callbacks',
      notice: typeof (req.query as { done?: unknown }).done === 'string' ? pages.notice((req.query as { done: string }).done) : undefined,
    };
    if (!detail) return html(reply, 404, pages.notFoundPage(f, 'No such callback event.', '/console/callbacks'));
    return html(reply, 200, pages.callbackPage(f, detail));
  });

  app.post<{ Params: { id: string } }>('/console/callbacks/:id/resend', { schema: { hide: true } }, async (req, reply) => {
    const posted = await post(req, reply, 'callbacks');
    if (!posted) return reply;
    const { frame } = posted;
    const eventId = req.params.id;
    const back = `/console/callbacks/${encodeURIComponent(eventId)}`;
    if (!isIdText(eventId)) return html(reply, 404, pages.notFoundPage(frame, 'No such callback event.', '/console/callbacks'));
    const done = await change(
      reply,
      frame,
      () =>
        runVerb(svc, retryCallbacks, {
          input: { eventIds: [eventId] },
          actor: kit.operatorOf(req, frame.session),
          audit: audit(req, frame.session, 'callbacks.retry', eventId),
        }),
      back,
    );
    return done === null ? reply : redirect(reply, `${back}?done=resent`);
  });

  app.post('/console/callbacks/resend-failed', { schema: { hide: true } }, async (req, reply) => {
    const posted = await post(req, reply, 'callbacks');
    if (!posted) return reply;
    const { frame, form } = posted;
    const merchant = text(form, 'merchant', 64);
    const merchantId = isIdText(merchant) ? merchant : undefined;
    const done = await change(
      reply,
      frame,
      () =>
        runVerb(svc, retryCallbacks, {
          input: { allFailed: true, ...(merchantId ? { merchantId } : {}) },
          actor: kit.operatorOf(req, frame.session),
          audit: audit(req, frame.session, 'callbacks.retry', merchantId ? `failed:${merchantId}` : 'failed'),
        }),
      '/console/callbacks',
    );
    return done === null ? reply : redirect(reply, `/console/callbacks?done=resent-all${merchantId ? `&merchant=${merchantId}` : ''}`);
  });
}
