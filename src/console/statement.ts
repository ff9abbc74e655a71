import { toMajor } from '../money/currency.js';
import type { RecordFacts } from '../trades/network-reads.js';
import type { TradeRecord } from '../trades/record.js';
import { TradeStatus, TradeType } from '../trades/types.js';
import { major } from './pages-common.js';
import { esc, pill } from './view.js';

/**
 * The console card page's transactions as a statement (issue 43, item 2): each 4.1 record one row,
 * a hold shown as held (what it still holds), then released or cleared, a clearing naming the hold
 * it consumed, a forced post of the card network marked. Only what moved the card's money is signed:
 * a hold while it holds, payments, refunds and the other records; a hold once cleared or released,
 * its reversal records and voids are shown in brackets, so the signed column never sums to more
 * than was spent (a cleared hold is not a second charge).
 */

const TYPE_NAMES: Record<number, string> = {
  [TradeType.authorization]: 'Authorization (hold)',
  [TradeType.payment]: 'Payment (cleared)',
  [TradeType.topUp]: 'Top-up',
  [TradeType.withdrawal]: 'Cash withdrawal',
  [TradeType.transferIn]: 'Transfer in',
  [TradeType.transferOut]: 'Transfer out',
  [TradeType.settlementAdjustment]: 'Settlement adjustment',
  [TradeType.balanceInquiry]: 'Balance inquiry',
  [TradeType.fee]: 'Fee',
};
const STATUS_NAMES: Record<number, string> = {
  [TradeStatus.success]: 'Done',
  [TradeStatus.reversal]: 'Reversal',
  [TradeStatus.reversed]: 'Reversed',
  [TradeStatus.voided]: 'Voided',
  [TradeStatus.void]: 'Void',
  [TradeStatus.refund]: 'Refund',
};

/** Money into the card: a top-up, a transfer in, a refund; everything else signed takes money out. */
const credits = (type: number, status: number) =>
  type === TradeType.topUp || type === TradeType.transferIn || status === TradeStatus.refund;

const tradeLink = (id: string) => `<a href="/console/search?q=${encodeURIComponent(id)}"><code>${esc(id)}</code></a>`;

export interface StatementRow {
  type: string;
  status: string;
  description: string;
  /** The amount cell: signed when it moved the card's money, else in brackets. */
  amount: string;
  /** What it moved, in major units (negative out), or 0 when it is shown in brackets. */
  signed: number;
}

export function statementRow(r: TradeRecord, f: RecordFacts | undefined): StatementRow {
  const c = r.currency;
  const notes: string[] = [];
  let status = STATUS_NAMES[r.tradeStatus] ?? String(r.tradeStatus);
  // What moved the balance, major units; null: shown in brackets (nothing of its own moved).
  let signed: number | null = null;
  if (r.tradeType === TradeType.authorization) {
    if (r.tradeStatus === TradeStatus.success && f && f.held > 0) {
      const held = toMajor(f.held, c);
      status = 'Held';
      signed = -held;
      if (held < r.amount) notes.push(`holds ${major(held, c)} of ${major(r.amount, c)}`);
    } else if (r.tradeStatus === TradeStatus.success && f && f.clearedBy.length > 0) {
      status = 'Cleared';
      notes.push(`hold consumed by ${f.clearedBy.map(tradeLink).join(', ')}`);
    } else if (r.tradeStatus === TradeStatus.success || r.tradeStatus === TradeStatus.reversed) status = 'Released';
    else if (r.tradeStatus === TradeStatus.reversal && f?.originalId) notes.push(`releases part of hold ${tradeLink(f.originalId)}`);
  } else if (r.tradeType === TradeType.payment) {
    if (r.tradeStatus === TradeStatus.success) {
      signed = -r.amount;
      if (!f?.originalId) notes.push('no hold: cleared without an authorization');
      else if (f.tookHold) notes.push(`clears hold ${tradeLink(f.originalId)}`);
      // A forced post against a hold already consumed held nothing: it is not among the hold's consumers.
      else if (f.holdClearedBy.length > 0) notes.push(`no hold (already cleared by ${f.holdClearedBy.map(tradeLink).join(', ')})`);
      else notes.push(`no hold (${tradeLink(f.originalId)} held nothing any more)`);
    } else if (r.tradeStatus === TradeStatus.refund) {
      signed = r.amount;
      if (f?.originalId) notes.push(`returns ${tradeLink(f.originalId)}`);
    }
  } else if (r.tradeType === TradeType.settlementAdjustment) {
    // A credit is recorded positive, a debit negative (src/ledger/adjust.ts).
    signed = r.amount;
  } else if (r.tradeStatus !== TradeStatus.void && r.tradeStatus !== TradeStatus.voided) {
    signed = credits(r.tradeType, r.tradeStatus) ? r.amount : -r.amount;
  }
  const forced = f?.forced ? ` ${pill('forced post', 'warn')}` : '';
  const remark = r.remark ? esc(r.remark) : '';
  const small = notes.length ? `<br><small class="muted">${notes.join('; ')}</small>` : '';
  return {
    type: `${esc(TYPE_NAMES[r.tradeType] ?? String(r.tradeType))}${forced}`,
    status: esc(status),
    description: `${remark}${small}`,
    amount:
      signed === null
        ? `<span class="muted" title="not a charge: shown for the record">(${esc(major(r.amount, c))})</span>`
        : `${signed > 0 ? '+' : '−'}${esc(major(Math.abs(signed), c))}`,
    signed: signed ?? 0,
  };
}
