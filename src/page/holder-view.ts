import { type CardRow, toCardModel } from '../cards/model.js';
import type { Services } from '../context.js';
import { AuditStatus } from '../holders/audit-status.js';
import { listTrades } from '../trades/list.js';
import type { PageSession } from './links.js';
import type { HolderView } from './view.js';

/** Transactions per page of a card's history on the page. */
export const PAGE_SIZE = 10;

/** The live cardholder a page session shows: the merchant's, with the session's e-mail, not rejected. */
async function sessionHolder(svc: Services, session: PageSession) {
  if (session.email === null) return null;
  return (
    (await svc.database.db
      .selectFrom('cardholders')
      .selectAll()
      .where('merchant_id', '=', session.merchantId)
      .where('email', '=', session.email.toLowerCase())
      .where('audit_status', '<>', AuditStatus.rejected)
      .orderBy('created_at', 'desc')
      .executeTakeFirst()) ?? null
  );
}

/** One of the session's own cards, or null: a session never reaches another holder's card. */
export async function sessionCard(svc: Services, session: PageSession, cardId: string): Promise<CardRow | null> {
  const holder = await sessionHolder(svc, session);
  if (!holder) return null;
  return (
    (await svc.database.db
      .selectFrom('cards')
      .selectAll()
      .where('id', '=', cardId)
      .where('merchant_id', '=', session.merchantId)
      .where('holder_id', '=', holder.id)
      .executeTakeFirst()) ?? null
  );
}

/**
 * What the page shows for a merchant's user: the cardholder, its cards, and each card's
 * transactions of the last 30 days through the same ledger query as interface 4.1, a page of
 * PAGE_SIZE at a time (`paging` moves one card's page), or null when there is no cardholder.
 */
export async function holderView(
  svc: Services,
  session: PageSession,
  paging: { cardId: string; start: number } | null,
): Promise<HolderView | null> {
  const db = svc.database.db;
  const holder = await sessionHolder(svc, session);
  if (!holder) return null;
  const cards = await db.selectFrom('cards').selectAll().where('holder_id', '=', holder.id).orderBy('created_at').execute();
  const today = new Date(svc.clock()).toISOString().slice(0, 10);
  const from = new Date(svc.clock() - 30 * 86_400_000).toISOString().slice(0, 10);
  return {
    name: `${holder.first_name} ${holder.last_name}`.trim(),
    auditStatus: holder.audit_status,
    cards: await Promise.all(
      cards.map(async (c) => {
        const start = paging?.cardId === c.id ? paging.start : 0;
        const page = await listTrades({
          db,
          vault: svc.vault,
          merchantId: session.merchantId,
          input: { cardId: c.id, beginDate: from, endDate: today, start, maxSize: PAGE_SIZE },
        });
        return { card: toCardModel(c), trades: page.tradeList, total: page.total, start, pageSize: PAGE_SIZE };
      }),
    ),
  };
}
