import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { recordView } from '../audit/trail.js';
import { AuditStatus } from '../codes/audit-status.js';
import type { DB } from '../db/schema.js';
import { reviewHolder } from '../holders/review.js';
import { decideKyc } from '../kyc/decide.js';
import { runVerb } from '../runner.js';
import * as pages from './pages.js';
import { holderDetail, kycDetail, networkOverview, overview, reviewQueues } from './queries.js';
import { threeDsToday } from './queries-three-ds.js';
import { type ConsoleKit, clean, isIdText, text } from './routes-kit.js';
import type { ConsoleSession } from './sessions.js';

/** The console's the overview, the review queues, a cardholder and a KYC request, and their decisions (src/console/routes.ts registers it with the shared kit, ./routes-kit.ts). */
export function reviewsRoutes(app: FastifyInstance, kit: ConsoleKit): void {
  const { html, redirect, audit, session, post, change, svc } = kit;

  app.get('/console', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'read');
    if (!frame) return reply;
    const now = svc.clock();
    const [today, db, link, threeDs] = await Promise.all([
      svc.database.read((db) => overview(db, now)),
      svc.database.read((db) => networkOverview(db, now)),
      svc.metrics.networkFigures(),
      svc.database.read((db) => threeDsToday(db, now)),
    ]);
    return html(reply, 200, pages.overviewPage({ ...frame, current: '/console' }, today, { db, link }, threeDs));
  });

  app.get('/console/reviews', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'read');
    if (!frame) return reply;
    return html(
      reply,
      200,
      pages.reviewsPage({ ...frame, current: '/console/reviews' }, await svc.database.read((db) => reviewQueues(db))),
    );
  });

  /** Records that an operator opened sealed data (a view is an act of the trail too). */
  const recordViewOf = (req: FastifyRequest, s: ConsoleSession, action: string, target: string) =>
    runVerb(svc, recordView, { input: { what: 'identity data' }, actor: kit.operatorOf(req, s), audit: audit(req, s, action, target) });

  app.get<{ Params: { id: string } }>('/console/holders/:id', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'read');
    if (!frame) return reply;
    const detail = isIdText(req.params.id) ? await holderDetail(svc, req.params.id) : null;
    if (!detail)
      return html(reply, 404, pages.problemPage({ ...frame, current: '/console/reviews' }, 'No such cardholder.', '/console/reviews'));
    await recordViewOf(req, frame.session, 'holder.view', detail.row.id);
    const done = (req.query as { done?: unknown }).done;
    return html(
      reply,
      200,
      pages.holderPage(
        { ...frame, current: '/console/reviews', notice: typeof done === 'string' ? pages.notice(done) : undefined },
        detail,
      ),
    );
  });

  const REVIEW_DECISIONS: Record<string, { status: number; needsReason: boolean }> = {
    approve: { status: AuditStatus.approved, needsReason: false },
    reject: { status: AuditStatus.rejected, needsReason: true },
    complete: { status: AuditStatus.dataToBeCompleted, needsReason: true },
    review: { status: AuditStatus.underReview, needsReason: false },
  };

  app.post<{ Params: { id: string } }>('/console/holders/:id/review', { schema: { hide: true } }, async (req, reply) => {
    const posted = await post(req, reply, 'review');
    if (!posted) return reply;
    const { frame, form } = posted;
    const holderId = req.params.id;
    const chosen = form.get('decision') ?? '';
    const decision = Object.hasOwn(REVIEW_DECISIONS, chosen) ? REVIEW_DECISIONS[chosen] : undefined;
    const reason = clean(text(form, 'reason'));
    const back = `/console/holders/${encodeURIComponent(holderId)}`;
    if (!decision || !isIdText(holderId)) return html(reply, 400, pages.problemPage(frame, 'Choose a decision.', back));
    if (decision.needsReason && !reason) return html(reply, 400, pages.problemPage(frame, 'Give a reason: the merchant sees it.', back));
    const before = async (tx: Kysely<DB>) => {
      const row = await tx.selectFrom('cardholders').select(['audit_status', 'err_msg']).where('id', '=', holderId).executeTakeFirst();
      return row ? { auditStatus: row.audit_status, errMsg: row.err_msg } : null;
    };
    const done = await change(
      reply,
      frame,
      () =>
        runVerb(svc, reviewHolder, {
          input: { holderId, auditStatus: decision.status, errMsg: reason },
          actor: kit.operatorOf(req, frame.session),
          audit: audit(req, frame.session, 'holder.review', holderId, before),
        }),
      back,
    );
    return done === null ? reply : redirect(reply, `${back}?done=reviewed`);
  });

  app.get<{ Params: { id: string } }>('/console/kyc/:id', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'read');
    if (!frame) return reply;
    const detail = isIdText(req.params.id) ? await kycDetail(svc, req.params.id) : null;
    if (!detail)
      return html(reply, 404, pages.problemPage({ ...frame, current: '/console/reviews' }, 'No such KYC request.', '/console/reviews'));
    await recordViewOf(req, frame.session, 'kyc.view', detail.row.id);
    const done = (req.query as { done?: unknown }).done;
    return html(
      reply,
      200,
      pages.kycPage({ ...frame, current: '/console/reviews', notice: typeof done === 'string' ? pages.notice(done) : undefined }, detail),
    );
  });

  app.post<{ Params: { id: string } }>('/console/kyc/:id/decide', { schema: { hide: true } }, async (req, reply) => {
    const posted = await post(req, reply, 'review');
    if (!posted) return reply;
    const { frame, form } = posted;
    const back = `/console/kyc/${encodeURIComponent(req.params.id)}`;
    const status = form.get('decision');
    const reason = clean(text(form, 'reason'));
    if (status !== 'approved' && status !== 'rejected' && status !== 'reviewing')
      return html(reply, 400, pages.problemPage(frame, 'Choose a decision.', back));
    if (status === 'rejected' && !reason) return html(reply, 400, pages.problemPage(frame, 'Give a reason: the merchant sees it.', back));
    const row = isIdText(req.params.id)
      ? await svc.database.read((db) =>
          db.selectFrom('kyc_requests').select(['id', 'request_no', 'merchant_id']).where('id', '=', req.params.id).executeTakeFirst(),
        )
      : undefined;
    if (!row) return html(reply, 404, pages.notFoundPage(frame, 'No such KYC request.', '/console/reviews'));
    const before = async (tx: Kysely<DB>) => {
      const r = await tx.selectFrom('kyc_requests').select(['status', 'reason']).where('id', '=', row.id).executeTakeFirst();
      return r ? { kycStatus: r.status, reason: r.reason } : null;
    };
    const done = await change(
      reply,
      frame,
      () =>
        runVerb(svc, decideKyc, {
          input: { requestNo: row.request_no, status, reason },
          merchantId: row.merchant_id,
          actor: kit.operatorOf(req, frame.session),
          audit: audit(req, frame.session, 'kyc.review', row.request_no, before),
        }),
      back,
    );
    return done === null ? reply : redirect(reply, `${back}?done=decided`);
  });
}
