import type { Kysely, Selectable } from 'kysely';
import { maskedCardNo } from '../cards/model.js';
import type { DB, ExceptionKind, ExceptionStatus, NetworkExceptionsTable } from '../db/schema.js';
import { DomainError } from '../errors.js';
import { toMajor } from '../money/currency.js';

/** The exceptions queue's reads (decisions §12.13): the console's page, the CLI, the gauge and the settlement. */

/** An exception as the CLI prints it (`--json`) and the console shows it; amounts in major units. */
export interface ExceptionRecord {
  exceptionId: string;
  kind: ExceptionKind;
  status: ExceptionStatus;
  /** The message: its MTI and identity (class, fields 32, 11, 7). */
  mti: string;
  msgClass: string;
  acquirer: string;
  stan: string;
  transmitted: string;
  merchantId: string;
  cardId: string;
  /** The card's number, masked; null when the card is not at hand. */
  cardNo: string | null;
  currency: string;
  amount: number;
  currencyTxn: string;
  txnAmount: number;
  /** What the suspense account holds for it while open (0 for an authorization advice). */
  suspended: number;
  /** The authorization a clearing names. */
  originalId: string | null;
  reason: string;
  businessDate: string;
  createdAt: string;
  decidedBy: string | null;
  decidedAt: string | null;
  /** Posted: the trade it made on the card. */
  tradeId: string | null;
  /** An authorization advice whose clearing was posted without it (its trade or exception): it may only be returned. */
  consumedBy: string | null;
  /** A refund held with a held clearing: that clearing's exception. */
  heldWith: string | null;
}

type Row = Selectable<NetworkExceptionsTable> & { pan_first6?: string | null; pan_last4?: string | null; pan_length?: number | null };

export function toExceptionRecord(r: Row): ExceptionRecord {
  const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());
  return {
    exceptionId: r.id,
    kind: r.kind,
    status: r.status,
    mti: r.mti,
    msgClass: r.msg_class,
    acquirer: r.acquirer,
    stan: r.stan,
    transmitted: r.transmitted,
    merchantId: r.merchant_id,
    cardId: r.card_id,
    cardNo:
      r.pan_first6 && r.pan_last4 && r.pan_length
        ? maskedCardNo({ pan_first6: r.pan_first6, pan_last4: r.pan_last4, pan_length: r.pan_length })
        : null,
    currency: r.currency,
    amount: toMajor(Number(r.amount), r.currency),
    currencyTxn: r.currency_txn,
    txnAmount: toMajor(Number(r.txn_amount), r.currency_txn),
    suspended: toMajor(Number(r.suspended), r.currency),
    originalId: r.original_id,
    reason: r.reason,
    businessDate: r.business_date,
    createdAt: iso(r.created_at) ?? '',
    decidedBy: r.decided_by,
    decidedAt: iso(r.decided_at),
    tradeId: r.trade_id,
    consumedBy: r.consumed_by,
    heldWith: r.held_with,
  };
}

/** One exception with its card's masked number; 2730 when there is none. */
export async function exceptionById(db: Kysely<DB>, id: string): Promise<Row> {
  const row = await db
    .selectFrom('network_exceptions as e')
    .leftJoin('cards as c', 'c.id', 'e.card_id')
    .selectAll('e')
    .select(['c.pan_first6', 'c.pan_last4', 'c.pan_length'])
    .where('e.id', '=', id)
    .executeTakeFirst();
  if (!row) throw new DomainError('tradeState', `exceptionId: no exception ${id}`);
  return row;
}

export interface ExceptionFilter {
  /** Absent: open ones. */
  status?: ExceptionStatus | 'all' | undefined;
  merchantId?: string | undefined;
  limit?: number | undefined;
}

/** The queue: open exceptions oldest first (the longest waiting on top); decided ones the latest first. */
export async function listExceptions(db: Kysely<DB>, filter: ExceptionFilter = {}): Promise<ExceptionRecord[]> {
  const status = filter.status ?? 'open';
  let q = db
    .selectFrom('network_exceptions as e')
    .leftJoin('cards as c', 'c.id', 'e.card_id')
    .selectAll('e')
    .select(['c.pan_first6', 'c.pan_last4', 'c.pan_length']);
  if (status !== 'all') q = q.where('e.status', '=', status);
  if (filter.merchantId) q = q.where('e.merchant_id', '=', filter.merchantId);
  q = status === 'open' ? q.orderBy('e.created_at', 'asc') : q.orderBy('e.created_at', 'desc');
  const rows = await q
    .orderBy('e.id')
    .limit(filter.limit ?? 200)
    .execute();
  return rows.map(toExceptionRecord);
}

/** How many exceptions are open, and what they hold per currency (minor units): the gauge and the console. */
export async function openExceptions(
  db: Kysely<DB>,
): Promise<{ count: number; byCurrency: Array<{ currency: string; n: number; amount: number }> }> {
  const rows = await db
    .selectFrom('network_exceptions')
    .select(['currency', (eb) => eb.fn.countAll<number>().as('n'), (eb) => eb.fn.sum<number>('amount').as('amount')])
    .where('status', '=', 'open')
    .groupBy('currency')
    .execute();
  const byCurrency = rows
    .map((r) => ({ currency: r.currency, n: Number(r.n), amount: Number(r.amount ?? 0) }))
    .sort((a, b) => a.currency.localeCompare(b.currency));
  return { count: byCurrency.reduce((s, r) => s + r.n, 0), byCurrency };
}

/**
 * The clearings held in suspense on a business day, and those returned to the network on it: the
 * settlement's `exceptions-held` and `exceptions-returned` lines (src/card-network/settlement.ts). Per
 * currency and merchant, minor units. An authorization advice moves no money with the network and is
 * in neither.
 */
export async function exceptionsOfDay(db: Kysely<DB>, date: string) {
  const rows = await db
    .selectFrom('network_exceptions')
    .select(['currency', 'merchant_id', 'amount', 'status', 'business_date', 'decided_date'])
    .where('kind', '=', 'clearing')
    .where((eb) => eb.or([eb('business_date', '=', date), eb.and([eb('status', '=', 'returned'), eb('decided_date', '=', date)])]))
    .execute();
  return rows.map((r) => ({
    currency: r.currency,
    merchantId: r.merchant_id,
    amount: Number(r.amount),
    held: r.business_date === date,
    returned: r.status === 'returned' && r.decided_date === date,
  }));
}
