import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { runVerb } from '../runner.js';
import { deleteToken, resumeToken, suspendToken } from '../tokens/actions.js';
import { tokenById } from '../tokens/store.js';
import * as pages from './pages.js';
import { type ConsoleKit, clean, isIdText, text } from './routes-kit.js';

/**
 * A wallet token's actions on its card's page (decisions §15.6): suspend, resume, delete, by a
 * support operator or above; each in the audit trail, told to the TSP and to the merchant
 * (src/console/routes.ts registers it with the shared kit, ./routes-kit.ts).
 */
/** The operator's actions: the same verbs as the merchant's and the CLI's (src/tokens/actions.ts), with source `operator`. */
const ACTIONS = { suspend: suspendToken, resume: resumeToken, delete: deleteToken } as const;

export function tokensRoutes(app: FastifyInstance, kit: ConsoleKit): void {
  const { html, redirect, audit, post, change, svc } = kit;
  for (const [action, verb] of Object.entries(ACTIONS)) {
    app.post<{ Params: { id: string } }>(`/console/tokens/:id/${action}`, { schema: { hide: true } }, async (req, reply) => {
      const posted = await post(req, reply, 'tokens');
      if (!posted) return reply;
      const { frame, form } = posted;
      const tokenId = req.params.id;
      const token = isIdText(tokenId) ? await svc.database.read((db) => tokenById(db, tokenId)) : null;
      if (!token) return html(reply, 404, pages.notFoundPage(frame, 'No such token.', '/console/search'));
      const back = `/console/cards/${encodeURIComponent(token.card_id)}`;
      if (action === 'delete' && form.get('confirm') !== tokenId) {
        return html(reply, 400, pages.problemPage(frame, 'To delete a token for good, type its id in the confirmation field.', back));
      }
      const reason = clean(text(form, 'reason'));
      const before = async (tx: Kysely<DB>) => {
        const row = await tx
          .selectFrom('tokens')
          .select(['status', 'suspended_by', 'merchant_id'])
          .where('id', '=', tokenId)
          .executeTakeFirst();
        return row ? { status: row.status, suspendedBy: row.suspended_by, merchantId: row.merchant_id } : null;
      };
      const done = await change(
        reply,
        frame,
        () =>
          runVerb(svc, verb, {
            input: { tokenId, ...(reason ? { reason } : {}) },
            actor: kit.operatorOf(req, frame.session),
            audit: audit(req, frame.session, `token.${action}`, tokenId, before),
          }),
        back,
      );
      return done === null ? reply : redirect(reply, `${back}?done=token-${action}`);
    });
  }
}
