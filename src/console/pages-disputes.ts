import { exponent } from '../money/currency.js';
import { formatMoney } from '../page/activity.js';
import type { DisputeDetail, QueueFilter, QueueRow } from './queries-disputes.js';
import { can } from './roles.js';
import { esc, type Frame, form, kv, link, page, pill, table, when } from './view.js';

/** The console's disputes queue and a dispute's page (re-exported by ./pages.ts). */

const STATUS_TONE: Record<string, 'good' | 'bad' | 'warn' | ''> = {
  unsubmitted: 'warn',
  submitted: '',
  won: 'good',
  lost: 'bad',
  expired: 'bad',
  withdrawn: '',
};
export const disputePill = (status: string) => pill(status, STATUS_TONE[status] ?? '');

/** Days left in words: the last day is today at 0. */
const daysText = (n: number) => (n <= 0 ? 'last day today' : n === 1 ? '1 day' : `${n} days`);
const deadlineDay = (deadlineAt: number) => new Date(Number(deadlineAt) - 86_400_000).toISOString().slice(0, 10);
const money = (minor: number | string, currency: string) => esc(formatMoney(Number(minor), currency));

export function disputesPage(frame: Frame, rows: QueueRow[], filter: QueueFilter): string {
  const option = (value: string, label: string) =>
    `<option value="${value}"${(filter.status ?? '') === value ? ' selected' : ''}>${esc(label)}</option>`;
  const filters = `<form method="get" action="/console/disputes" class="inline" role="search"><label for="merchant">Merchant</label><input id="merchant" name="merchant" value="${esc(filter.merchantId ?? '')}" size="28" maxlength="64" placeholder="mch_…"><label for="status">Status</label><select id="status" name="status">${option('', 'open (both)')}${option('unsubmitted', 'unsubmitted')}${option('submitted', 'submitted')}</select><button type="submit" class="secondary">Filter</button></form>`;
  return page(
    'Disputes',
    frame,
    `${filters}${table(
      'Open disputes, the nearest deadline first (the last day a submission is accepted: 120 days after the clearing)',
      ['Deadline', 'Days left', 'Dispute', 'Status', 'Reason', 'Amount', 'Card', 'Merchant'],
      rows.map((r) => [
        esc(deadlineDay(r.deadline_at)),
        r.status === 'submitted'
          ? '<span class="muted">submitted</span>'
          : r.daysLeft <= 7
            ? pill(daysText(r.daysLeft), 'bad')
            : esc(daysText(r.daysLeft)),
        link(`/console/disputes/${r.id}`, r.id),
        disputePill(r.status),
        esc(r.reason),
        money(r.amount, r.currency),
        link(`/console/cards/${r.card_id}`, r.cardNo),
        link(`/console/merchants/${r.merchant_id}`, r.merchant_id),
      ]),
      [5],
    )}`,
  );
}

const HISTORY_WORDS: Record<string, string> = {
  created: 'Opened',
  updated: 'Changed',
  submitted: 'Submitted to the network',
  provisional_credit: 'Submitted; provisional credit to the card',
  won: 'Won: credit from the network',
  lost: 'Lost',
  credit_reversed: 'Provisional credit taken back',
  expired: 'Expired (not submitted in time)',
  withdrawn: 'Withdrawn',
};

function outcomeForms(frame: Frame, d: DisputeDetail): string {
  const { row } = d;
  const e = exponent(row.currency);
  const target = `/console/disputes/${row.id}/outcome`;
  const confirm = (id: string) =>
    `<label><input type="checkbox" name="confirm" value="yes" required id="${id}"> I confirm the network decided so</label>`;
  const won = form(
    frame,
    target,
    `<input type="hidden" name="outcome" value="won"><label for="won-amount">Amount paid back (${esc(row.currency)})</label><input id="won-amount" name="amount" inputmode="decimal" required size="12" maxlength="20" value="${esc((Number(row.amount) / 10 ** e).toFixed(e))}">${confirm('won-confirm')}`,
    'Record as won',
  );
  const lost = form(
    frame,
    target,
    `<input type="hidden" name="outcome" value="lost">${confirm('lost-confirm')}`,
    'Record as lost',
    'danger',
  );
  const credit = Number(row.provisional_credit);
  return `<h2>Record the network’s outcome</h2><div class="panel"><p class="muted">An outcome received outside the import (docs/disputes.md). Won: the network pays the amount back${credit > 0 ? ' to the merchant’s funding account, which advanced the provisional credit' : ' to the card'}; lost: ${credit > 0 ? `the provisional credit of ${money(credit, row.currency)} is taken back from the card` : 'no money moves'}. Recorded in the audit trail.</p><div>${won}</div><div>${lost}</div></div>`;
}

export function disputePage(frame: Frame, d: DisputeDetail): string {
  const { row, trade, acceptor } = d;
  const role = frame.session.role;
  const evidenceRows = d.evidence.map((f) => [
    can(role, 'evidence') ? link(`/console/disputes/${row.id}/evidence/${encodeURIComponent(f.file_name)}`, f.file_name) : esc(f.file_name),
    esc(f.content_type),
    esc(`${Number(f.size).toLocaleString('en')} bytes`),
    `<code>${esc(f.sha256)}</code>`,
  ]);
  const actions =
    row.status === 'submitted'
      ? can(role, 'outcomes')
        ? outcomeForms(frame, d)
        : '<p class="muted">Waiting for the network’s outcome; an admin records one received outside the import.</p>'
      : row.status === 'unsubmitted'
        ? `<p class="muted">Waiting for the merchant to submit it: until ${esc(deadlineDay(row.deadline_at))} (${esc(daysText(d.daysLeft))}).</p>`
        : '<p class="muted">Decided: nothing more to do.</p>';
  return page(
    `Dispute ${row.id}`,
    frame,
    `<div class="panel">${kv([
      ['Status', disputePill(row.status)],
      ['Reason', esc(row.reason)],
      ['Amount', money(row.amount, row.currency)],
      ['Provisional credit', money(row.provisional_credit, row.currency)],
      ['Paid back', row.outcome_amount === null ? '—' : money(row.outcome_amount, row.currency)],
      ['Merchant', `${link(`/console/merchants/${row.merchant_id}`, d.merchantName)} <code>${esc(row.merchant_id)}</code>`],
      ['Card', `${link(`/console/cards/${row.card_id}`, d.cardNo)} ${pill(d.cardStatus, d.cardStatus === 'active' ? 'good' : 'bad')}`],
      [
        'Transaction',
        trade
          ? `<code>${esc(trade.id)}</code> · ${money(trade.amount, trade.currency)} cleared on ${esc(trade.business_date)}${Number(trade.refunded) > 0 ? ` · ${money(trade.refunded, trade.currency)} refunded` : ''}${acceptor ? ` · ${esc([acceptor.merchant_name, acceptor.merchant_city, acceptor.merchant_country, acceptor.mcc].filter(Boolean).join(', '))}` : ''}`
          : `<code>${esc(row.trade_id)}</code>`,
      ],
      ['Deadline', `${esc(deadlineDay(row.deadline_at))}${row.status === 'unsubmitted' ? ` (${esc(daysText(d.daysLeft))})` : ''}`],
      ['Opened', when(row.created_at)],
      ['Submitted', when(row.submitted_at)],
      ['Decided', `${when(row.decided_at)}${row.decided_by ? ` by ${esc(row.decided_by)}` : ''}`],
      ['Explanation', d.explanation ? esc(d.explanation) : '<span class="muted">none</span>'],
    ])}<p class="muted">Opening this page was recorded in the audit trail (the explanation is sealed data).</p></div>${actions}<h2>Evidence</h2>${table(
      can(role, 'evidence') ? 'Files (a download is recorded in the audit trail)' : 'Files (opening them takes the reviewer role)',
      ['File', 'Type', 'Size', 'SHA-256'],
      evidenceRows,
    )}<h2>History</h2>${table(
      'Oldest first: each change, and each money movement with its journal entry',
      ['When', 'What', 'Status', 'Amount', 'Journal entry', 'By', 'Note'],
      d.history.map((h) => [
        esc(h.at.replace('T', ' ').slice(0, 19)),
        esc(HISTORY_WORDS[h.kind] ?? h.kind),
        disputePill(h.status),
        h.amount === 0 ? '—' : `${h.amount > 0 ? '+' : '−'}${money(h.amount, row.currency)}`,
        h.entryId ? `<code>${esc(h.entryId)}</code>` : '—',
        esc(h.actor),
        esc(h.note),
      ]),
      [3],
    )}`,
  );
}
