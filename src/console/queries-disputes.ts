import type { Kysely } from 'kysely';
import { maskedCardNo } from '../cards/model.js';
import type { Services } from '../context.js';
import type { DB, OPEN_DISPUTE_STATUSES } from '../db/schema.js';
import { disputeHistory } from '../disputes/query.js';
import { openExplanation } from '../disputes/store.js';
import { tradeById } from '../trades/by-id.js';

/** What the console's dispute pages read (reads only; the outcome is a verb run with its audit record). */

const DAY_MS = 86_400_000;

/**
 * Whole days from today (UTC) to a dispute's last day for a submission: 0 on the last day itself.
 * `deadline_at` is the first moment past it (the start of the next day).
 */
export const daysLeft = (deadlineAt: number, now: number) => Math.floor((Number(deadlineAt) - DAY_MS) / DAY_MS) - Math.floor(now / DAY_MS);

export interface QueueFilter {
  merchantId?: string | undefined;
  status?: (typeof OPEN_DISPUTE_STATUSES)[number] | undefined;
}

/**
 * The reviewers' queue: open disputes (unsubmitted ones still before their deadline, and submitted
 * ones waiting for the network), the nearest deadline first, then the oldest.
 */
export async function disputeQueue(db: Kysely<DB>, now: number, filter: QueueFilter = {}, limit = 200) {
  let q = db
    .selectFrom('disputes')
    .innerJoin('cards', 'cards.id', 'disputes.card_id')
    .select([
      'disputes.id',
      'disputes.merchant_id',
      'disputes.card_id',
      'disputes.trade_id',
      'disputes.reason',
      'disputes.amount',
      'disputes.currency',
      'disputes.status',
      'disputes.deadline_at',
      'disputes.created_at',
      'cards.pan_first6',
      'cards.pan_last4',
      'cards.pan_length',
    ])
    .where((eb) =>
      eb.or([
        eb('disputes.status', '=', 'submitted'),
        eb.and([eb('disputes.status', '=', 'unsubmitted'), eb('disputes.deadline_at', '>', now)]),
      ]),
    );
  if (filter.merchantId) q = q.where('disputes.merchant_id', '=', filter.merchantId);
  if (filter.status) q = q.where('disputes.status', '=', filter.status);
  const rows = await q.orderBy('disputes.deadline_at').orderBy('disputes.created_at').orderBy('disputes.id').limit(limit).execute();
  return rows.map((r) => ({ ...r, cardNo: maskedCardNo(r), daysLeft: daysLeft(r.deadline_at, now) }));
}
export type QueueRow = Awaited<ReturnType<typeof disputeQueue>>[number];

/** How many disputes are open (the overview's tile). */
export async function openDisputes(db: Kysely<DB>, now: number): Promise<number> {
  const row = await db
    .selectFrom('disputes')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where((eb) => eb.or([eb('status', '=', 'submitted'), eb.and([eb('status', '=', 'unsubmitted'), eb('deadline_at', '>', now)])]))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** A dispute with its explanation opened (the caller records the view), its card, transaction, files and history. */
export async function disputeDetail(svc: Services, disputeId: string, now: number) {
  return svc.database.read(async (db) => {
    const row = await db.selectFrom('disputes').selectAll().where('id', '=', disputeId).executeTakeFirst();
    if (!row) return null;
    const [card, trade, evidence, history, merchant] = await Promise.all([
      db.selectFrom('cards').selectAll().where('id', '=', row.card_id).executeTakeFirstOrThrow(),
      tradeById(db, row.merchant_id, row.trade_id),
      db
        .selectFrom('dispute_evidence')
        .select(['id', 'file_name', 'content_type', 'size', 'sha256', 'created_at'])
        .where('dispute_id', '=', row.id)
        .orderBy('created_at')
        .orderBy('file_name')
        .execute(),
      disputeHistory(db, row.id),
      db.selectFrom('merchants').select(['id', 'name']).where('id', '=', row.merchant_id).executeTakeFirst(),
    ]);
    const acceptor = trade?.original_id
      ? await db
          .selectFrom('authorizations')
          .select(['merchant_name', 'merchant_city', 'merchant_country', 'mcc'])
          .where('id', '=', trade.original_id)
          .executeTakeFirst()
      : undefined;
    return {
      row,
      explanation: openExplanation(svc.box, row),
      cardNo: maskedCardNo(card),
      cardStatus: card.status,
      trade,
      acceptor,
      evidence,
      history,
      merchantName: merchant?.name ?? row.merchant_id,
      daysLeft: daysLeft(row.deadline_at, now),
    };
  });
}
export type DisputeDetail = NonNullable<Awaited<ReturnType<typeof disputeDetail>>>;
