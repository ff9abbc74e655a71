import type { ExceptionStatus } from '../db/schema.js';
import type { ExceptionRecord } from '../ledger/exceptions-query.js';
import { major } from './pages-common.js';
import { can } from './roles.js';
import { esc, type Frame, form, link, page, pill } from './view.js';

/** The console's exceptions queue (decisions §12.13; re-exported by ./pages.ts). */

const STATUS_TONE: Record<ExceptionStatus, 'good' | 'bad' | 'warn' | ''> = { open: 'warn', posted: '', returned: 'good' };
const KIND_WORDS = {
  authorization: 'Authorization advice (hold)',
  clearing: 'Clearing (payment)',
  refund: 'Refund of a held clearing',
} as const;

export interface ExceptionsView {
  status: ExceptionStatus | 'all';
  rows: ExceptionRecord[];
}

/** The two decisions on an open exception, each confirmed; only for a role that may act. */
function decisionForms(frame: Frame, e: ExceptionRecord): string {
  const confirm = (id: string) => `<label><input type="checkbox" name="confirm" value="yes" required id="${id}"> confirm</label>`;
  const base = `/console/exceptions/${encodeURIComponent(e.exceptionId)}`;
  return `${form(frame, `${base}/post`, confirm(`post-${e.exceptionId}`), 'Post to the card', 'danger')} ${form(
    frame,
    `${base}/return`,
    confirm(`return-${e.exceptionId}`),
    'Return to the network',
    'secondary',
  )}`;
}

export function exceptionsPage(frame: Frame, v: ExceptionsView): string {
  const role = frame.session.role;
  const option = (value: string, label: string) =>
    `<option value="${value}"${v.status === value ? ' selected' : ''}>${esc(label)}</option>`;
  const filters = `<form method="get" action="/console/exceptions" class="inline" role="search"><label for="status">Status</label><select id="status" name="status">${option('open', 'open')}${option('posted', 'posted')}${option('returned', 'returned')}${option('all', 'all')}</select><button type="submit" class="secondary">Filter</button></form>`;
  const head = [
    'Held',
    'Exception',
    'Status',
    'What',
    'Message',
    'Amount',
    'Card',
    'Merchant',
    'Why',
    v.status === 'open' ? 'Decide' : 'Decided',
  ];
  const rows = v.rows.map((e) => [
    esc(e.createdAt.replace('T', ' ').slice(0, 19)),
    `<code>${esc(e.exceptionId)}</code>`,
    pill(e.status, STATUS_TONE[e.status]),
    esc(KIND_WORDS[e.kind]),
    `<code>${esc(`${e.mti} ${e.acquirer}/${e.stan}/${e.transmitted}`)}</code>`,
    esc(major(e.amount, e.currency)),
    link(`/console/cards/${e.cardId}`, e.cardNo ?? e.cardId),
    link(`/console/merchants/${e.merchantId}`, e.merchantId),
    esc(e.reason),
    e.status === 'open'
      ? can(role, 'exceptions')
        ? decisionForms(frame, e)
        : '<span class="muted">support or admin decides</span>'
      : `${esc(e.decidedBy ?? '')} <span class="muted">${esc((e.decidedAt ?? '').replace('T', ' ').slice(0, 19))}</span>${e.tradeId ? ` · <code>${esc(e.tradeId)}</code>` : ''}`,
  ]);
  const caption =
    v.status === 'open'
      ? 'Advices acknowledged to the network but held in suspense above CARDPROGRAM_FORCED_POST_MAX or CARDPROGRAM_CARD_DEBT_MAX, the longest waiting first'
      : `Exceptions ${v.status === 'all' ? '' : `${v.status} `}— the latest first`;
  const body = rows.length
    ? `<div class="table-wrap"><table><caption>${esc(caption)}</caption><thead><tr>${head.map((h, i) => `<th scope="col"${i === 5 ? ' class="num"' : ''}>${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows
        .map((r) => `<tr>${r.map((c, i) => `<td${i === 5 ? ' class="num"' : ''}>${c}</td>`).join('')}</tr>`)
        .join('')}</tbody></table></div>`
    : `<p class="muted">${esc(caption)}: none.</p>`;
  return page(
    'Exceptions',
    frame,
    `${filters}${body}<p class="muted">Post: the advice is posted to its card as the network sent it (a forced post, into the card’s debt if need be). Return: nothing reaches the card; a clearing’s money comes back from the network, a line of the day’s settlement (<code>cardprogram network settlement</code>). Each decision is recorded in the audit trail, and is made once: a second one is refused.</p>`,
  );
}
