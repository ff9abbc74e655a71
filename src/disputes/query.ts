import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import { maskedCardNo } from '../cards/model.js';
import type { SecretBox } from '../crypto/secretbox.js';
import { parseDate } from '../dates.js';
import type { DB } from '../db/schema.js';
import { DomainError, invalid } from '../errors.js';
import { toMajor } from '../money/currency.js';
import type { OperationInput } from '../operation-input.js';
import type { DisputeListBody, DisputeRecordSchema, EvidenceType } from './schemas.js';
import { type DisputeRow, evidenceContext, isPastDeadline, openExplanation } from './store.js';

export type DisputeRecord = Static<typeof DisputeRecordSchema>;

const DAY_MS = 86_400_000;
const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());

/**
 * A dispute as the API answers it. An unsubmitted dispute past its deadline is answered `expired`
 * at once (lazily: the sweep, `cardprogram disputes expire` and the service's hourly run, writes it).
 */
export function toDisputeRecord(
  box: SecretBox,
  d: DisputeRow,
  card: { pan_first6: string; pan_last4: string; pan_length: number },
  evidence: Array<{ file_name: string; content_type: string; size: number; sha256: string }>,
  now: number,
): DisputeRecord {
  const expired = d.status === 'unsubmitted' && isPastDeadline(d, now);
  return {
    disputeId: d.id,
    tradeId: d.trade_id,
    cardId: d.card_id,
    cardNo: maskedCardNo(card),
    reason: d.reason,
    amount: toMajor(Number(d.amount), d.currency),
    currency: d.currency,
    status: expired ? 'expired' : d.status,
    explanation: openExplanation(box, d),
    evidence: evidence.map((e) => ({
      fileName: e.file_name,
      contentType: e.content_type as EvidenceType,
      size: Number(e.size),
      sha256: e.sha256,
    })),
    clearingDate: d.clearing_date,
    deadline: new Date(Number(d.deadline_at) - DAY_MS).toISOString().slice(0, 10),
    provisionalCredit: toMajor(Number(d.provisional_credit), d.currency),
    outcomeAmount: d.outcome_amount === null ? null : toMajor(Number(d.outcome_amount), d.currency),
    createdAt: iso(d.created_at) ?? '',
    submittedAt: iso(d.submitted_at),
    decidedAt: expired ? iso(Number(d.deadline_at)) : iso(d.decided_at),
  };
}

async function withParts(db: Kysely<DB>, box: SecretBox, rows: DisputeRow[], now: number): Promise<DisputeRecord[]> {
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  const cards = await db
    .selectFrom('cards')
    .select(['id', 'pan_first6', 'pan_last4', 'pan_length'])
    .where('id', 'in', [...new Set(rows.map((r) => r.card_id))])
    .execute();
  const files = await db
    .selectFrom('dispute_evidence')
    .select(['dispute_id', 'file_name', 'content_type', 'size', 'sha256'])
    .where('dispute_id', 'in', ids)
    .orderBy('created_at')
    .orderBy('file_name')
    .execute();
  const byId = new Map(cards.map((c) => [c.id, c]));
  return rows.map((r) => {
    const card = byId.get(r.card_id);
    if (!card) throw new Error(`dispute ${r.id}: card ${r.card_id} not found`);
    return toDisputeRecord(
      box,
      r,
      card,
      files.filter((f) => f.dispute_id === r.id),
      now,
    );
  });
}

/** One dispute (the merchant's own; null merchant: the operator's, any), or 2740. */
export async function queryDispute(
  db: Kysely<DB>,
  box: SecretBox,
  merchantId: string | null,
  disputeId: string,
  now: number,
): Promise<DisputeRecord> {
  let q = db.selectFrom('disputes').selectAll().where('id', '=', disputeId);
  if (merchantId !== null) q = q.where('merchant_id', '=', merchantId);
  const row = await q.executeTakeFirst();
  if (!row) throw new DomainError('disputeNotFound', 'disputeId: dispute not found');
  const [record] = await withParts(db, box, [row], now);
  return record as DisputeRecord;
}

export type DisputeListInput = OperationInput<Static<typeof DisputeListBody>>;

/**
 * A merchant's disputes, newest first, by card, status and day of creation (UTC), paged. `expired`
 * also finds the unsubmitted ones past their deadline, and `unsubmitted` leaves them out.
 */
export async function listDisputes(
  db: Kysely<DB>,
  box: SecretBox,
  merchantId: string,
  input: DisputeListInput,
  now: number,
): Promise<{ total: number; disputes: DisputeRecord[] }> {
  const from = input.from === undefined ? null : parseDate(input.from);
  const to = input.to === undefined ? null : parseDate(input.to);
  if (input.from !== undefined && !from) throw invalid('from', 'must be a real date written yyyy-MM-dd');
  if (input.to !== undefined && !to) throw invalid('to', 'must be a real date written yyyy-MM-dd');
  if (from && to && to < from) throw invalid('to', 'must not be before from');
  let q = db.selectFrom('disputes').where('merchant_id', '=', merchantId);
  if (input.cardId) q = q.where('card_id', '=', input.cardId);
  if (from) q = q.where('created_at', '>=', from.getTime());
  if (to) q = q.where('created_at', '<', to.getTime() + DAY_MS);
  if (input.status === 'expired') {
    q = q.where((eb) => eb.or([eb('status', '=', 'expired'), eb.and([eb('status', '=', 'unsubmitted'), eb('deadline_at', '<=', now)])]));
  } else if (input.status === 'unsubmitted') {
    q = q.where('status', '=', 'unsubmitted').where('deadline_at', '>', now);
  } else if (input.status) q = q.where('status', '=', input.status);
  const total = Number((await q.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
  const rows = await q
    .selectAll()
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(input.limit ?? 30)
    .offset(input.start)
    .execute();
  return { total, disputes: await withParts(db, box, rows, now) };
}

/** A dispute's history, oldest first (the console's dispute page): each change, who made it, the money and its journal entry. */
export async function disputeHistory(db: Kysely<DB>, disputeId: string) {
  const rows = await db
    .selectFrom('dispute_events')
    .select(['kind', 'status', 'amount', 'entry_id', 'actor', 'note', 'created_at'])
    .where('dispute_id', '=', disputeId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((r) => ({
    kind: r.kind,
    status: r.status,
    amount: Number(r.amount),
    entryId: r.entry_id,
    actor: r.actor,
    note: r.note,
    at: new Date(Number(r.created_at)).toISOString(),
  }));
}

/**
 * One evidence file, opened (the console shows it to a reviewer; nothing sends it to a merchant's
 * browser as HTML: its type is the one its bytes were recognised as). Undefined: no such file.
 */
export async function evidenceFile(
  db: Kysely<DB>,
  box: SecretBox,
  disputeId: string,
  fileName: string,
): Promise<{ contentType: string; bytes: Buffer; sha256: string } | undefined> {
  const row = await db
    .selectFrom('dispute_evidence')
    .select(['id', 'content_type', 'data_enc', 'sha256'])
    .where('dispute_id', '=', disputeId)
    .where('file_name', '=', fileName)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    contentType: row.content_type,
    bytes: Buffer.from(box.open(row.data_enc, evidenceContext(disputeId, row.id)), 'base64'),
    sha256: row.sha256,
  };
}

/**
 * The disputes the network decided (won, lost) on one UTC day (`decided_at`), per currency and
 * merchant: how many and, minor units, what was paid back (won) or disputed and not paid (lost).
 * The day's settlement with the network reads them (src/card-network/settlement.ts).
 */
export async function decidedDisputes(db: Kysely<DB>, date: string) {
  const start = Date.parse(`${date}T00:00:00Z`);
  const rows = await db
    .selectFrom('disputes')
    .select(['currency', 'merchant_id', 'status'])
    .select((eb) => [
      eb.fn.countAll<number>().as('n'),
      eb.fn.sum<number>('amount').as('amount'),
      eb.fn.sum<number>(eb.fn.coalesce('outcome_amount', eb.lit(0))).as('paid'),
    ])
    .where('status', 'in', ['won', 'lost'])
    .where('decided_at', '>=', start)
    .where('decided_at', '<', start + DAY_MS)
    .groupBy(['currency', 'merchant_id', 'status'])
    .execute();
  return rows.map((r) => ({
    currency: r.currency,
    merchantId: r.merchant_id,
    outcome: r.status as 'won' | 'lost',
    count: Number(r.n),
    amount: r.status === 'won' ? Number(r.paid) : Number(r.amount),
  }));
}
