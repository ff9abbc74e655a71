import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { closeCard } from '../cards/close.js';
import { toCardModel } from '../cards/model.js';
import { queryCard } from '../cards/query.js';
import { setCardFrozen } from '../cards/status.js';
import { failureCount } from '../cards/verification.js';
import type { DB } from '../db/schema.js';
import { DomainError } from '../errors.js';
import { settleCardDebt } from '../ledger/settle-debt.js';
import { merchantSummary } from '../merchants/manage.js';
import { runVerb } from '../runner.js';
import { listTokens } from '../tokens/store.js';
import { listTrades, MAX_RANGE_DAYS } from '../trades/list.js';
import { recordFacts } from '../trades/network-reads.js';
import { TRADE_STATUSES } from '../trades/types.js';
import * as pages from './pages.js';
import { search } from './queries.js';
import { cardAuthentications } from './queries-three-ds.js';
import { type ConsoleKit, clean, isIdText, queryText, text } from './routes-kit.js';

/** A card's wallet tokens shown on its page, newest first (a card has at most CARDPROGRAM_TOKENS_PER_CARD live ones). */
const TOKENS_SHOWN = 50;

/** The console's search, a card and its actions (freeze, unfreeze, close) (src/console/routes.ts registers it with the shared kit, ./routes-kit.ts). */
export function cardsRoutes(app: FastifyInstance, kit: ConsoleKit): void {
  const { html, redirect, audit, session, post, change, svc } = kit;
  app.get('/console/search', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'read');
    if (!frame) return reply;
    const query = queryText((req.query as { q?: unknown }).q) ?? '';
    const hits = query ? await search(svc, query) : null;
    // One match: open it at once.
    if (hits?.length === 1) return redirect(reply, (hits[0] as (typeof hits)[number]).href);
    return html(reply, 200, pages.searchPage({ ...frame, current: '/console/search' }, query, hits));
  });

  app.get<{ Params: { id: string } }>('/console/cards/:id', { schema: { hide: true } }, async (req, reply) => {
    const frame = await session(req, reply, 'read');
    if (!frame) return reply;
    return svc.database.read(async (db) => {
      const card = isIdText(req.params.id)
        ? await db.selectFrom('cards').selectAll().where('id', '=', req.params.id).executeTakeFirst()
        : undefined;
      const f = { ...frame, current: '/console/search' };
      if (!card) return html(reply, 404, pages.notFoundPage(f, 'No such card.', '/console/search'));
      const q = req.query as { from?: unknown; to?: unknown; page?: unknown; done?: unknown };
      const now = svc.clock();
      const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
      const isDay = (v: unknown): v is string => typeof v === 'string' && /^\d{4}-\d\d-\d\d$/.test(v) && !Number.isNaN(Date.parse(v));
      const to = isDay(q.to) ? q.to : day(now);
      const from = isDay(q.from) ? q.from : day(Date.parse(to) - (MAX_RANGE_DAYS - 1) * 86_400_000);
      const pageNo = typeof q.page === 'string' && /^\d{1,6}$/.test(q.page) ? Number(q.page) : 0;
      const PAGE = 20;
      let trades: Awaited<ReturnType<typeof listTrades>> | null = null;
      let rangeError: string | null = null;
      try {
        trades = await listTrades({
          db,
          vault: svc.vault,
          merchantId: card.merchant_id,
          input: {
            cardId: card.id,
            beginDate: from,
            endDate: to,
            start: pageNo * PAGE,
            maxSize: PAGE,
            tradeStatusList: [...TRADE_STATUSES],
          },
        });
      } catch (err) {
        if (!(err instanceof DomainError) || err.status >= 500) throw err;
        // The 4.1 list's own rule, said in the page's words.
        rangeError = /at most \d+ days/.test(err.message)
          ? `Choose at most ${MAX_RANGE_DAYS} days (from ${from} to ${to} is longer).`
          : /before beginDate/.test(err.message)
            ? 'The first day must not be after the last.'
            : err.message;
      }
      if (trades && trades.total > 0 && pageNo * PAGE >= trades.total) {
        // Past the last page (an old link, a typed address): the last page.
        const last = Math.ceil(trades.total / PAGE) - 1;
        return redirect(reply, `/console/cards/${encodeURIComponent(card.id)}?from=${from}&to=${to}&page=${last}`);
      }
      const [query, holder, declined, merchant, authentications, facts, tokens] = await Promise.all([
        queryCard(db, card.merchant_id, card.id, now),
        db
          .selectFrom('cardholders')
          .select(['id', 'first_name', 'last_name', 'audit_status'])
          .where('id', '=', card.holder_id)
          .executeTakeFirst(),
        db
          .selectFrom('authorizations')
          .selectAll()
          .where('card_id', '=', card.id)
          .where('approved', '=', 0)
          .orderBy('created_at', 'desc')
          .limit(10)
          .execute(),
        merchantSummary(db, card.merchant_id),
        cardAuthentications(db, card.id),
        recordFacts(db, trades?.tradeList.map((r) => r.tradeId) ?? []),
        listTokens(db, { merchantId: card.merchant_id, cardId: card.id, start: 0, limit: TOKENS_SHOWN }),
      ]);
      return html(
        reply,
        200,
        pages.cardPage(
          { ...f, notice: typeof q.done === 'string' ? pages.notice(q.done) : undefined },
          {
            card: toCardModel(card),
            query,
            holder,
            declined,
            authentications,
            tokens: tokens.tokens,
            tokensTotal: tokens.total,
            verificationFailures: failureCount(card, now),
            merchantName: merchant?.name ?? card.merchant_id,
            merchantId: card.merchant_id,
            createdAt: card.created_at,
            trades,
            facts,
            rangeError,
            from,
            to,
            pageNo,
            pageSize: PAGE,
          },
        ),
      );
    });
  });

  /** A closed card's debt settled from its merchant's funding (decisions §12.13), by an admin. */
  app.post<{ Params: { id: string } }>('/console/cards/:id/settle-debt', { schema: { hide: true } }, async (req, reply) => {
    const posted = await post(req, reply, 'debts');
    if (!posted) return reply;
    const { frame, form } = posted;
    const cardId = req.params.id;
    const back = `/console/cards/${encodeURIComponent(cardId)}`;
    if (!isIdText(cardId)) return html(reply, 404, pages.notFoundPage(frame, 'No such card.', '/console/search'));
    if (form.get('confirm') !== cardId) {
      return html(reply, 400, pages.problemPage(frame, 'To settle the debt, type the card id in the confirmation field.', back));
    }
    const before = async (tx: Kysely<DB>) =>
      (await tx.selectFrom('cards').select(['status', 'debt', 'currency', 'merchant_id']).where('id', '=', cardId).executeTakeFirst()) ??
      null;
    const done = await change(
      reply,
      frame,
      () =>
        runVerb(svc, settleCardDebt, {
          input: { cardId },
          actor: kit.operatorOf(req, frame.session),
          audit: audit(req, frame.session, 'card.settleDebt', cardId, before),
        }),
      back,
    );
    return done === null ? reply : redirect(reply, `${back}?done=debt-settled`);
  });

  for (const action of ['freeze', 'unfreeze', 'close'] as const) {
    app.post<{ Params: { id: string } }>(`/console/cards/:id/${action}`, { schema: { hide: true } }, async (req, reply) => {
      const posted = await post(req, reply, 'cards');
      if (!posted) return reply;
      const { frame, form } = posted;
      const cardId = req.params.id;
      const back = `/console/cards/${encodeURIComponent(cardId)}`;
      if (!isIdText(cardId)) return html(reply, 404, pages.notFoundPage(frame, 'No such card.', '/console/search'));
      const reason = clean(text(form, 'reason'));
      if (action === 'close' && form.get('confirm') !== cardId) {
        return html(reply, 400, pages.problemPage(frame, 'To close a card for good, type its id in the confirmation field.', back));
      }
      const before = async (tx: Kysely<DB>) => {
        const row = await tx
          .selectFrom('cards')
          .select(['status', 'status_source', 'status_reason'])
          .where('id', '=', cardId)
          .executeTakeFirst();
        return row ? { status: row.status, statusSource: row.status_source, statusReason: row.status_reason } : null;
      };
      const input = { cardId, source: 'operator' as const, reason: reason || undefined };
      const spec = audit(req, frame.session, `card.${action}`, cardId, before);
      const done = await change(
        reply,
        frame,
        () =>
          action === 'close'
            ? runVerb(svc, closeCard, { input, actor: kit.operatorOf(req, frame.session), audit: spec })
            : runVerb(svc, setCardFrozen, {
                input: { ...input, frozen: action === 'freeze' },
                actor: kit.operatorOf(req, frame.session),
                audit: spec,
              }),
        back,
      );
      return done === null ? reply : redirect(reply, `${back}?done=${action}`);
    });
  }
}
