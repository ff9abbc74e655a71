import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { recordView } from '../audit/trail.js';
import type { DB } from '../db/schema.js';
import { recordDisputeOutcome } from '../disputes/outcome.js';
import { evidenceFile } from '../disputes/query.js';
import { toMinor } from '../money/currency.js';
import { runVerb } from '../runner.js';
import * as pages from './pages.js';
import { disputeDetail, disputeQueue, type QueueFilter } from './queries-disputes.js';
import { type ConsoleKit, isIdText, queryText, SECURITY_HEADERS } from './routes-kit.js';
import type { ConsoleSession } from './sessions.js';

const NOTICES: Record<string, string> = {
  won: 'The dispute is recorded as won: the network’s credit is in the journal.',
  lost: 'The dispute is recorded as lost.',
};

/**
 * The console's disputes (issue 29.6): the reviewers' queue, a dispute's page with its evidence
 * files and history, and an outcome received outside the import, recorded through the import's own
 * verb (recordDisputeOutcome) by an admin (it moves money), with its audit record.
 */
export function disputesRoutes(app: FastifyInstance, kit: ConsoleKit): void {
  const { html, redirect, audit, session, post, change, operatorOf, svc } = kit;

  app.get('/console/disputes', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'read');
    if (!frame) return reply;
    const q = req.query as { merchant?: unknown; status?: unknown };
    const merchant = queryText(q.merchant, 64);
    const filter: QueueFilter = {
      merchantId: merchant !== undefined && isIdText(merchant) ? merchant : undefined,
      status: q.status === 'unsubmitted' || q.status === 'submitted' ? q.status : undefined,
    };
    const rows = await svc.database.read((db) => disputeQueue(db, svc.clock(), filter));
    return html(reply, 200, pages.disputesPage({ ...frame, current: '/console/disputes' }, rows, filter));
  });

  /** Records that an operator opened a dispute's sealed data (its explanation, an evidence file). */
  const recordViewOf = (req: FastifyRequest, s: ConsoleSession, action: string, target: string, what: string) =>
    runVerb(svc, recordView, { input: { what }, actor: operatorOf(req, s), audit: audit(req, s, action, target) });

  app.get<{ Params: { id: string } }>('/console/disputes/:id', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'read');
    if (!frame) return reply;
    const f = { ...frame, current: '/console/disputes' };
    const detail = isIdText(req.params.id) ? await disputeDetail(svc, req.params.id, svc.clock()) : null;
    if (!detail) return html(reply, 404, pages.notFoundPage(f, 'No such dispute.', '/console/disputes'));
    await recordViewOf(req, frame.session, 'dispute.view', detail.row.id, 'dispute explanation');
    const done = (req.query as { done?: unknown }).done;
    const notice = typeof done === 'string' && NOTICES[done] ? { text: NOTICES[done] as string } : undefined;
    return html(reply, 200, pages.disputePage({ ...f, notice }, detail));
  });

  /** An evidence file's name as the dispute schemas allow it (src/disputes/schemas.ts EvidenceFile): anything else is no file. */
  const isFileName = (s: string) => /^[A-Za-z0-9][A-Za-z0-9 ._()-]{0,99}$/.test(s);

  app.get<{ Params: { id: string; file: string } }>(
    '/console/disputes/:id/evidence/:file',
    { schema: { hide: true } },
    async (req, reply) => {
      const frame = await session(req, reply, 'evidence');
      if (!frame) return reply;
      const { id, file } = req.params;
      const found = isIdText(id) && isFileName(file) ? await svc.database.read((db) => evidenceFile(db, svc.box, id, file)) : undefined;
      if (!found) return html(reply, 404, pages.notFoundPage(frame, 'No such file.', `/console/disputes/${encodeURIComponent(id)}`));
      await recordViewOf(req, frame.session, 'dispute.evidence', `${id}/${file}`, `evidence ${file}`);
      // Served as a download, never rendered here: the type its first bytes were checked to be (PDF, PNG
      // or JPEG, never HTML or SVG), no sniffing, and a file name of the schema's characters only.
      const name = file.replace(/[^A-Za-z0-9 ._()-]/g, '_');
      return reply
        .status(200)
        .headers(SECURITY_HEADERS)
        .header('content-type', found.contentType)
        .header('content-disposition', `attachment; filename="${name}"`)
        .header('x-content-type-options', 'nosniff')
        .send(found.bytes);
    },
  );

  app.post<{ Params: { id: string } }>('/console/disputes/:id/outcome', { schema: { hide: true } }, async (req, reply) => {
    const posted = await post(req, reply, 'outcomes');
    if (!posted) return reply;
    const { frame, form } = posted;
    const disputeId = req.params.id;
    const back = `/console/disputes/${encodeURIComponent(disputeId)}`;
    if (!isIdText(disputeId)) return html(reply, 404, pages.notFoundPage(frame, 'No such dispute.', '/console/disputes'));
    const outcome = form.get('outcome');
    if (outcome !== 'won' && outcome !== 'lost') return html(reply, 400, pages.problemPage(frame, 'Choose won or lost.', back));
    if (form.get('confirm') !== 'yes') {
      return html(reply, 400, pages.problemPage(frame, 'Tick the confirmation: an outcome moves money and cannot be undone.', back));
    }
    const dispute = await svc.database.read((db) =>
      db.selectFrom('disputes').select(['currency']).where('id', '=', disputeId).executeTakeFirst(),
    );
    if (!dispute) return html(reply, 404, pages.notFoundPage(frame, 'No such dispute.', '/console/disputes'));
    const rawAmount = (form.get('amount') ?? '').trim();
    if (outcome === 'won' && !/^\d{1,15}(\.\d{1,8})?$/.test(rawAmount)) {
      return html(reply, 400, pages.problemPage(frame, `Give the amount the network paid back, in ${dispute.currency}.`, back));
    }
    const before = async (tx: Kysely<DB>) =>
      (await tx
        .selectFrom('disputes')
        .select(['status', 'amount', 'provisional_credit', 'outcome_amount'])
        .where('id', '=', disputeId)
        .executeTakeFirst()) ?? null;
    const done = await change(
      reply,
      frame,
      () =>
        runVerb(svc, recordDisputeOutcome, {
          input: { disputeId, outcome, amount: outcome === 'won' ? toMinor(Number(rawAmount), dispute.currency) : undefined },
          actor: operatorOf(req, frame.session),
          audit: { action: 'dispute.outcome', target: disputeId, before },
        }),
      back,
    );
    return done === null ? reply : redirect(reply, `${back}?done=${outcome}`);
  });
}
