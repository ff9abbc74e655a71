import { toCardModel } from '../cards/model.js';
import type { Services } from '../context.js';
import { AuditStatus } from '../holders/audit-status.js';
import { listTrades } from '../trades/list.js';
import type { HolderView } from './view.js';

/**
 * What the page shows for a merchant's user: the live cardholder with the session's e-mail, its
 * cards, and each card's transactions of the last 30 days (the same ledger query as 4.1), or null.
 */
export async function holderView(svc: Services, merchantId: string, email: string): Promise<HolderView | null> {
  const db = svc.database.db;
  const holder = await db
    .selectFrom('cardholders')
    .selectAll()
    .where('merchant_id', '=', merchantId)
    .where('email', '=', email.toLowerCase())
    .where('audit_status', '<>', AuditStatus.rejected)
    .orderBy('created_at', 'desc')
    .executeTakeFirst();
  if (!holder) return null;
  const cards = await db.selectFrom('cards').selectAll().where('holder_id', '=', holder.id).orderBy('created_at').execute();
  const today = new Date(svc.clock()).toISOString().slice(0, 10);
  const from = new Date(svc.clock() - 30 * 86_400_000).toISOString().slice(0, 10);
  return {
    name: `${holder.first_name} ${holder.last_name}`.trim(),
    auditStatus: holder.audit_status,
    cards: await Promise.all(
      cards.map(async (c) => ({
        card: toCardModel(c),
        // The same ledger query as interface 4.1.
        trades: (
          await listTrades({
            db,
            vault: svc.vault,
            merchantId,
            input: { cardId: c.id, beginDate: from, endDate: today, start: 0, maxSize: 10 },
          })
        ).tradeList,
      })),
    ),
  };
}
