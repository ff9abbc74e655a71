import { type CardRow, toCardModel } from '../cards/model.js';
import { AuditStatus } from '../codes/audit-status.js';
import type { Services } from '../context.js';
import { openIdentity } from '../holders/identity.js';
import { type ActivityCursor, cardActivity } from './activity.js';
import type { PageSession } from './links.js';
import type { HolderView } from './view.js';

/** The live cardholder a page session shows: the merchant's, with the session's e-mail, not rejected. */
async function sessionHolder(svc: Services, session: PageSession) {
  if (session.emailHash === null) return null;
  return (
    (await svc.database.read((db) =>
      db
        .selectFrom('cardholders')
        .selectAll()
        .where('merchant_id', '=', session.merchantId)
        .where('email_hash', '=', session.emailHash)
        .where('audit_status', '<>', AuditStatus.rejected)
        .orderBy('created_at', 'desc')
        .executeTakeFirst(),
    )) ?? null
  );
}

/**
 * One of the session's own cards, or null: a session never reaches another holder's card. Only an
 * approved cardholder's cards that are not closed: an approval withdrawn (or any status other than
 * 2) or a closed card ends the page's access to it, whatever session is open.
 */
export async function sessionCard(svc: Services, session: PageSession, cardId: string): Promise<CardRow | null> {
  const holder = await sessionHolder(svc, session);
  if (holder?.audit_status !== AuditStatus.approved) return null;
  return (
    (await svc.database.read((db) =>
      db
        .selectFrom('cards')
        .selectAll()
        .where('id', '=', cardId)
        .where('merchant_id', '=', session.merchantId)
        .where('holder_id', '=', holder.id)
        .where('status', '<>', 'closed')
        .executeTakeFirst(),
    )) ?? null
  );
}

/**
 * What the page shows for a merchant's user: the cardholder, its cards, and each card's activity
 * (src/page/activity.ts), newest first, a page at a time (`paging` shows one card's older page), or
 * null when there is no cardholder.
 */
export async function holderView(
  svc: Services,
  session: PageSession,
  paging: { cardId: string; older: ActivityCursor } | null,
): Promise<HolderView | null> {
  const holder = await sessionHolder(svc, session);
  if (!holder) return null;
  return svc.database.read(async (db) => {
    // The same rule as sessionCard: cards only for an approved cardholder, never a closed one.
    const cards =
      holder.audit_status === AuditStatus.approved
        ? await db
            .selectFrom('cards')
            .selectAll()
            .where('holder_id', '=', holder.id)
            .where('status', '<>', 'closed')
            .orderBy('created_at')
            .execute()
        : [];
    return {
      name: `${holder.first_name} ${holder.last_name}`.trim(),
      // Opened from the holder's sealed identity: the session stores only the e-mail's keyed hash.
      email: openIdentity(svc.box, holder).email,
      auditStatus: holder.audit_status,
      cards: await Promise.all(
        cards.map(async (c) => {
          const older = paging?.cardId === c.id ? paging.older : null;
          return { card: toCardModel(c), activity: await cardActivity(db, c.id, older, svc.clock()), paged: older !== null };
        }),
      ),
    };
  });
}
