import type { Selectable } from 'kysely';
import type { AuditEntry, AuditFilter } from '../audit/trail.js';
import type { CardModel } from '../cards/model.js';
import type { CardQueryModel } from '../cards/query.js';
import { type AuthorizationsTable, type CallbackAttemptsTable, type CallbackEventsTable, OPERATOR_ROLES } from '../db/schema.js';
import type { DomainSummary } from '../domains/store.js';
import { AUDIT_STATUS_NAMES, AUDIT_TRANSITIONS, AuditStatus, type AuditStatusValue } from '../holders/audit-status.js';
import type { FundingBalance } from '../ledger/funding.js';
import type { FundingStatementPage } from '../ledger/statement.js';
import type { MerchantSummary } from '../merchants/manage.js';
import { exponent } from '../money/currency.js';
import { formatMoney } from '../page/activity.js';
import type { TradePage } from '../trades/list.js';
import { TradeStatus, TradeType } from '../trades/types.js';
import type { OperatorSummary } from './accounts.js';
import type { holderDetail, kycDetail, Overview, reviewQueues, SearchHit } from './queries.js';
import { can, PERMISSIONS, type Permission } from './roles.js';
import { otpauthUrl } from './totp.js';
import { barePage, barList, esc, type Frame, form, hourChart, kv, link, page, pill, reasonField, table, when } from './view.js';

/** The page of each console screen. Data in, HTML out: no database, no request. */

const NOTICES: Record<string, string> = {
  reviewed: 'The cardholder’s review was recorded; the merchant is told by its holder.audit callback.',
  decided: 'The KYC decision was recorded; the merchant is told by its kyc.result callback.',
  freeze: 'The card is frozen by the operator: authorizations decline until an operator unfreezes it.',
  unfreeze: 'The card is active again.',
  close: 'The card is closed for good; its balance went back to its merchant’s funding account.',
  resent: 'The callback is queued for delivery now.',
  'resent-all': 'Every failed callback shown is queued for delivery now.',
  active: 'The merchant is active.',
  disabled: 'The merchant is disabled: its API calls, card pages and links are refused.',
  funded: 'The funding account was credited.',
  'domain-removed': 'The host is no longer mapped to the merchant.',
  'operator-updated': 'The operator was changed; its open sessions ended.',
};

export const notice = (done: string) => (NOTICES[done] ? { text: NOTICES[done] as string } : undefined);

const ROLE_WORDS: Record<Permission, string> = {
  read: 'read the console',
  cards: 'freeze, unfreeze or close cards',
  callbacks: 'resend callbacks',
  review: 'decide cardholders and KYC requests',
  merchants: 'manage merchants',
  funding: 'fund merchants',
  domains: 'manage merchants’ domains',
  operators: 'manage operators',
};

export function refusedPage(frame: Frame, permission: Permission): string {
  return page(
    'Not allowed',
    frame,
    `<p>Your role, <b>${esc(frame.session.role)}</b>, may not ${esc(ROLE_WORDS[permission])}: that takes the <b>${esc(PERMISSIONS[permission])}</b> role${PERMISSIONS[permission] === 'admin' ? '' : ' or one above it'}. Nothing was changed.</p><p><a href="/console">Back to the overview</a></p>`,
  );
}

export function problemPage(frame: Frame, message: string, back: string): string {
  return page('Not done', { ...frame, notice: { text: message, bad: true } }, `<p>Nothing was changed.</p><p>${link(back, 'Back')}</p>`);
}

export function notFoundPage(frame: Frame, message: string, back: string): string {
  return page('Not found', frame, `<p>${esc(message)}</p><p>${link(back, 'Back')}</p>`);
}

export function loginPage(o: { next: string; email?: string; error?: string }): string {
  return barePage(
    'Log in to the console',
    `${o.error ? `<p class="notice bad" role="alert">${esc(o.error)}</p>` : ''}<form method="post" action="/console/login" class="stack"><input type="hidden" name="next" value="${esc(o.next)}"><label>E-mail<input name="email" type="email" autocomplete="username" required value="${esc(o.email ?? '')}"></label><label>Password<input name="password" type="password" autocomplete="current-password" required></label><label>One-time code <span class="muted">(from your authenticator app)</span><input name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]{6,7}" maxlength="7"></label><button type="submit">Log in</button></form>`,
  );
}

export function setupPage(o: {
  token: string;
  email: string;
  role: string;
  secret: string;
  /** Whether the second factor must be set up (production: every role; sandbox: admins). */
  required: boolean;
  error?: string;
}): string {
  const grouped = o.secret.replace(/(.{4})/g, '$1 ').trim();
  const { required } = o;
  return barePage(
    'Set up your console account',
    `${o.error ? `<p class="notice bad" role="alert">${esc(o.error)}</p>` : ''}<p>${esc(o.email)} · <span class="pill">${esc(o.role)}</span></p><form method="post" action="/console/setup" class="stack"><input type="hidden" name="token" value="${esc(o.token)}"><input type="hidden" name="secret" value="${esc(o.secret)}"><label>New password <span class="muted">(12 characters or more)</span><input name="password" type="password" autocomplete="new-password" minlength="12" required></label><label>The same again<input name="password2" type="password" autocomplete="new-password" minlength="12" required></label><fieldset class="panel"><legend>Second factor${required ? ' (required)' : ' (recommended)'}</legend><p>Add this key to an authenticator app (time-based, 6 digits, 30 seconds):</p><p class="mono" aria-label="Key">${esc(grouped)}</p><p class="muted mono">${esc(otpauthUrl(o.secret, o.email))}</p><label>The code the app shows now<input name="code" inputmode="numeric" autocomplete="one-time-code" maxlength="7"${required ? ' required' : ''}></label></fieldset><button type="submit">Save</button></form>`,
  );
}

export function overviewPage(frame: Frame, o: Overview): string {
  const tile = (label: string, value: string, href?: string) =>
    `<div class="tile">${href ? `<a href="${href}">` : ''}<span class="muted">${esc(label)}</span><b>${value}</b>${href ? '</a>' : ''}</div>`;
  const volume = o.volume.length ? o.volume.map((v) => esc(formatMoney(v.amount, v.currency))).join('<br>') : '0';
  return page(
    `Today, ${o.day}`,
    frame,
    `<div class="grid">${tile('Authorizations approved', String(o.approved))}${tile('Authorizations declined', String(o.declined))}${tile('Approved volume', volume)}${tile('Callbacks failed', String(o.callbacksFailed), '/console/callbacks?status=failed')}${tile('Callbacks retrying', String(o.callbacksRetrying), '/console/callbacks?status=pending')}${tile('Cardholders waiting for review', String(o.holdersWaiting), '/console/reviews')}${tile('KYC requests waiting', String(o.kycWaiting), '/console/reviews')}</div><h2>Authorizations</h2>${hourChart(o.hours)}${barList(
      'Declines today by reason',
      o.declineReasons.map((r) => ({ label: r.reason, n: r.n })),
    )}`,
  );
}

const auditPill = (status: number) => {
  const tone = status === 2 ? 'good' : status === 3 ? 'bad' : 'warn';
  return pill(AUDIT_STATUS_NAMES[status as AuditStatusValue] ?? String(status), tone);
};

export function reviewsPage(frame: Frame, q: Awaited<ReturnType<typeof reviewQueues>>): string {
  return page(
    'Reviews',
    frame,
    `<h2>Cardholders awaiting review</h2>${table(
      'Oldest first',
      ['Submitted', 'Cardholder', 'Country', 'Merchant', 'Status'],
      q.holders.map((h) => [
        when(h.created_at),
        link(`/console/holders/${h.id}`, `${h.first_name} ${h.last_name}`),
        esc(h.country_code),
        esc(h.merchant_id),
        auditPill(h.audit_status),
      ]),
    )}<h2>KYC requests awaiting a decision</h2>${table(
      'Oldest first',
      ['Submitted', 'Request', 'Platform', 'Merchant', 'Status'],
      q.kyc.map((k) => [
        when(k.created_at),
        link(`/console/kyc/${k.id}`, k.request_no),
        esc(k.platform),
        esc(k.merchant_id),
        pill(k.status, 'warn'),
      ]),
    )}`,
  );
}

export function holderPage(frame: Frame, d: NonNullable<Awaited<ReturnType<typeof holderDetail>>>): string {
  const { row, identity } = d;
  const canReview = can(frame.session.role, 'review');
  // Only the decisions its status allows (an approval can still be withdrawn; a rejection is final).
  const allowed = AUDIT_TRANSITIONS[row.audit_status as AuditStatusValue] ?? [];
  const decide = (to: AuditStatusValue, html: string) => (allowed.includes(to) ? `<div>${html}</div>` : '');
  const target = `/console/holders/${row.id}/review`;
  const forms = [
    decide(AuditStatus.approved, form(frame, target, '<input type="hidden" name="decision" value="approve">', 'Approve')),
    decide(
      AuditStatus.rejected,
      form(
        frame,
        target,
        `<input type="hidden" name="decision" value="reject">${reasonField('reject-reason', true, 'Why (the merchant sees it)')}`,
        row.audit_status === AuditStatus.approved ? 'Withdraw the approval (reject)' : 'Reject',
        'danger',
      ),
    ),
    decide(
      AuditStatus.dataToBeCompleted,
      form(
        frame,
        target,
        `<input type="hidden" name="decision" value="complete">${reasonField('complete-reason', true, 'What is missing')}`,
        'Ask for more data',
        'secondary',
      ),
    ),
  ].join('');
  const decisions = canReview && forms ? `<h2>Decide</h2><div class="panel">${forms}</div>` : '';
  return page(
    `${row.first_name} ${row.last_name}`,
    frame,
    `<div class="panel">${kv([
      ['Cardholder', `<code>${esc(row.id)}</code>`],
      ['Status', `${auditPill(row.audit_status)}${row.err_msg ? ` <span class="muted">${esc(row.err_msg)}</span>` : ''}`],
      ['Merchant', link(`/console/merchants/${row.merchant_id}`, row.merchant_id)],
      ['E-mail', esc(identity.email)],
      ['Mobile', esc(identity.mobile)],
      ['Date of birth', esc(identity.dateOfBirth)],
      ['Nationality', esc(row.nationality)],
      ['Document', `type ${esc(row.idno_type)} · <span class="mono">${esc(identity.idno)}</span>`],
      ['Address', `${esc(identity.address)}, ${esc(identity.postCode)} ${esc(identity.town)}, ${esc(row.country_code)}`],
      ['Submitted', when(row.created_at)],
    ])}<p class="muted">Opening this page was recorded in the audit trail.</p></div>${decisions}<h2>Cards</h2>${table(
      'Cards of this cardholder',
      ['Card', 'Currency', 'Status', 'Issued'],
      d.cards.map((c) => [
        link(`/console/cards/${c.id}`, `${c.pan_first6}…${c.pan_last4}`),
        esc(c.currency),
        pill(c.status, c.status === 'active' ? 'good' : 'bad'),
        when(c.created_at),
      ]),
    )}<h2>Review history</h2>${table(
      'Newest first',
      ['When', 'From', 'To', 'By', 'Reason'],
      d.reviews.map((r) => [when(r.created_at), auditPill(r.from_status), auditPill(r.to_status), esc(r.actor), esc(r.err_msg)]),
    )}`,
  );
}

export function kycPage(frame: Frame, d: NonNullable<Awaited<ReturnType<typeof kycDetail>>>): string {
  const { row, data, email } = d;
  const open = row.status === 'init' || row.status === 'reviewing';
  const decide =
    open && can(frame.session.role, 'review')
      ? `<h2>Decide</h2><div class="panel">${form(frame, `/console/kyc/${row.id}/decide`, '<input type="hidden" name="decision" value="approved">', 'Approve')}${form(frame, `/console/kyc/${row.id}/decide`, `<input type="hidden" name="decision" value="rejected">${reasonField('kyc-reason', true)}`, 'Reject', 'danger')}${row.status === 'init' ? form(frame, `/console/kyc/${row.id}/decide`, '<input type="hidden" name="decision" value="reviewing">', 'Mark as under review', 'secondary') : ''}</div>`
      : '';
  const a = data.address;
  return page(
    `KYC request ${row.request_no}`,
    frame,
    `<div class="panel">${kv([
      [
        'Status',
        `${pill(row.status, row.status === 'approved' ? 'good' : row.status === 'rejected' ? 'bad' : 'warn')}${row.reason ? ` <span class="muted">${esc(row.reason)}</span>` : ''}`,
      ],
      ['Merchant', link(`/console/merchants/${row.merchant_id}`, row.merchant_id)],
      ['Platform', esc(row.platform)],
      ['E-mail', esc(email)],
      ['Name', `${esc(data.firstName)} ${esc(data.lastName)}`],
      ['Date of birth', esc(data.dob)],
      ['Country', esc(data.country)],
      ['Document', `type ${esc(data.idDocType)} · <span class="mono">${esc(data.number)}</span>, valid until ${esc(data.validUntil)}`],
      ['Address', `${esc(a.address)}, ${esc(a.zipCode)} ${esc(a.city)}, ${esc(a.state)}, ${esc(a.country)}`],
      ['Submitted from', esc(data.ipAddress)],
      ['Submitted', when(row.created_at)],
      ['Cardholder', row.holder_id ? link(`/console/holders/${row.holder_id}`, row.holder_id) : '—'],
    ])}<p class="muted">Opening this page was recorded in the audit trail.</p></div>${decide}`,
  );
}

/**
 * A card number typed into the search is never shown back whole: a query holding 12 digits or more,
 * whatever separates them, is shown as its digits' first six and last four.
 */
const maskDigits = (q: string) => {
  const d = q.replace(/\D/g, '');
  return d.length >= 12 ? `${d.slice(0, 6)}${'*'.repeat(d.length - 10)}${d.slice(-4)}` : q;
};

export function searchPage(frame: Frame, q: string, hits: SearchHit[] | null): string {
  const results =
    hits === null
      ? '<p class="muted">A cardholder by id, e-mail or name; a card by id or BIN and last four (<code>424242 4242</code>), by last four alone or by its full number; a cardholder by document number; a transaction, KYC request (or its e-mail) or merchant by id. One match opens at once.</p>'
      : table(
          `${hits.length} result${hits.length === 1 ? '' : 's'} for “${maskDigits(q)}”`,
          ['Kind', 'Id', 'What'],
          hits.map((h) => [esc(h.kind), link(h.href, h.id), esc(h.label)]),
        );
  return page(
    'Search',
    frame,
    `<form method="get" action="/console/search" class="inline" role="search"><label for="q">Find</label><input id="q" name="q" value="${esc(maskDigits(q))}" size="40" maxlength="200" autofocus><button type="submit">Search</button></form>${results}`,
  );
}

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
/** Money into the card: a top-up, a transfer in, a refund, a reversal; everything else takes money out. */
const credits = (type: number, status: number) =>
  type === TradeType.topUp || type === TradeType.transferIn || status === TradeStatus.refund || status === TradeStatus.reversal;
const major = (n: number, currency: string) => `${n.toFixed(exponent(currency))} ${currency}`;

const controlsText = (c: object) => (Object.keys(c).length === 0 ? 'none' : `<code>${esc(JSON.stringify(c))}</code>`);
const pretty = (payload: string) => {
  try {
    return JSON.stringify(JSON.parse(payload), null, 2);
  } catch {
    return payload;
  }
};

export interface CardView {
  card: CardModel;
  query: CardQueryModel;
  holder: { id: string; first_name: string; last_name: string; audit_status: number } | undefined;
  declined: Array<Selectable<AuthorizationsTable>>;
  merchantName: string;
  merchantId: string;
  createdAt: number;
  trades: TradePage | null;
  rangeError: string | null;
  from: string;
  to: string;
  pageNo: number;
  pageSize: number;
}

export function cardPage(frame: Frame, v: CardView): string {
  const { card } = v;
  const statusLine = `${pill(card.status, card.status === 'active' ? 'good' : 'bad')}${card.statusSource ? ` by the ${esc(card.statusSource)}` : ''}${card.statusReason ? `: ${esc(card.statusReason)}` : ''}`;
  const actions = can(frame.session.role, 'cards')
    ? card.status === 'closed'
      ? ''
      : `<h2>Change its status</h2><div class="panel">${
          card.status === 'active'
            ? form(frame, `/console/cards/${card.cardId}/freeze`, reasonField('freeze-reason', false), 'Freeze card', 'danger')
            : form(frame, `/console/cards/${card.cardId}/unfreeze`, '', 'Unfreeze card')
        }${form(frame, `/console/cards/${card.cardId}/close`, `${reasonField('close-reason', false)}<label for="confirm">Type the card id to confirm</label><input id="confirm" name="confirm" required autocomplete="off">`, 'Close card for good', 'danger')}</div>`
    : '';
  const t = v.trades;
  const rows = t
    ? t.tradeList.map((r) => [
        esc(r.businessDate),
        `<code>${esc(r.tradeId)}</code>`,
        esc(TYPE_NAMES[r.tradeType] ?? r.tradeType),
        esc(STATUS_NAMES[r.tradeStatus] ?? r.tradeStatus),
        esc(r.remark),
        `${credits(r.tradeType, r.tradeStatus) ? '+' : '−'}${esc(major(r.amount, r.currency))}`,
      ])
    : [];
  const pages = t ? Math.max(1, Math.ceil(t.total / v.pageSize)) : 1;
  const href = (p: number) => `/console/cards/${encodeURIComponent(card.cardId)}?from=${v.from}&to=${v.to}&page=${p}`;
  const pager = `<div class="pager">${v.pageNo > 0 ? link(href(v.pageNo - 1), 'Newer') : ''}<span class="muted">page ${v.pageNo + 1} of ${pages}${t ? `, ${t.total} in all` : ''}</span>${v.pageNo + 1 < pages ? link(href(v.pageNo + 1), 'Older') : ''}</div>`;
  const spending = v.query.spending.length
    ? table(
        'Spending limits now',
        ['Interval', 'Limit', 'Spent', 'Left', 'Set on', 'Resets'],
        v.query.spending.map((l) => [
          esc(l.interval),
          esc(major(l.amount, card.currency)),
          esc(major(l.spent, card.currency)),
          esc(major(l.remaining, card.currency)),
          esc(l.source),
          l.resetsAt ? esc(l.resetsAt) : '—',
        ]),
        [1, 2, 3],
      )
    : '<p class="muted">No spending limits apply.</p>';
  return page(
    `Card ${card.cardNo}`,
    frame,
    `<div class="panel">${kv([
      ['Card', `<code>${esc(card.cardId)}</code>`],
      ['Status', statusLine],
      [
        'Cardholder',
        v.holder
          ? `${link(`/console/holders/${v.holder.id}`, `${v.holder.first_name} ${v.holder.last_name}`)} ${auditPill(v.holder.audit_status)}`
          : esc(card.holderId),
      ],
      ['Merchant', `${link(`/console/merchants/${v.merchantId}`, v.merchantName)} <code>${esc(v.merchantId)}</code>`],
      ['Available', esc(major(card.availableBalance, card.currency))],
      ['Ledger', esc(major(card.ledgerBalance, card.currency))],
      // What forced posts of the card network took beyond the balance (decisions §12.7): owed by the cardholder.
      [
        'Debt',
        card.debtBalance > 0
          ? `${pill(major(card.debtBalance, card.currency), 'bad')} <span class="muted">owed after forced posts; a top-up pays it first</span>`
          : esc(major(0, card.currency)),
      ],
      ['Issued', when(v.createdAt)],
    ])}</div>${actions}<h2>Controls</h2><div class="panel"><p>Card: ${controlsText(card.controls)}</p><p>Cardholder: ${controlsText(v.query.holderControls)}</p>${spending}</div><h2>Transactions</h2><form method="get" class="inline" action="/console/cards/${esc(card.cardId)}"><label for="from">From</label><input id="from" name="from" type="date" value="${esc(v.from)}"><label for="to">To</label><input id="to" name="to" type="date" value="${esc(v.to)}"><button type="submit" class="secondary">Show</button></form>${v.rangeError ? `<p class="notice bad">${esc(v.rangeError)}</p>` : `${table(`${v.from} to ${v.to}, newest first (the transaction list of interface 4.1, every status)`, ['Day', 'Transaction', 'Type', 'Status', 'Description', 'Amount'], rows, [5])}${pager}`}<h2>Recent declines</h2>${table(
      'The last 10 declined authorizations',
      ['When', 'Id', 'Amount', 'Reason', 'Acceptor'],
      v.declined.map((d) => [
        when(d.created_at),
        `<code>${esc(d.id)}</code>`,
        esc(formatMoney(d.amount, d.currency)),
        `${esc(d.decline_reason ?? '')} <span class="muted">${esc(d.message)}</span>`,
        esc([d.merchant_name, d.mcc, d.merchant_country].filter(Boolean).join(' · ')),
      ]),
      [2],
    )}`,
  );
}

type EventRow = Pick<
  CallbackEventsTable,
  'id' | 'merchant_id' | 'type' | 'url' | 'status' | 'attempts' | 'next_attempt_at' | 'last_error' | 'created_at'
>;

export function callbacksPage(
  frame: Frame,
  rows: EventRow[],
  filter: { merchantId?: string | undefined; status?: string | undefined },
): string {
  const resendAll = can(frame.session.role, 'callbacks')
    ? form(
        frame,
        '/console/callbacks/resend-failed',
        filter.merchantId ? `<input type="hidden" name="merchant" value="${esc(filter.merchantId)}">` : '',
        filter.merchantId ? 'Resend all failed of this merchant' : 'Resend all failed',
      )
    : '';
  const byMerchant = new Map<string, { failed: number; pending: number }>();
  for (const r of rows) {
    const m = byMerchant.get(r.merchant_id) ?? { failed: 0, pending: 0 };
    m[r.status === 'failed' ? 'failed' : 'pending'] += 1;
    byMerchant.set(r.merchant_id, m);
  }
  return page(
    'Callbacks',
    frame,
    `<form method="get" action="/console/callbacks" class="inline"><label for="status">Show</label><select id="status" name="status"><option value="">failed and pending</option><option value="failed"${filter.status === 'failed' ? ' selected' : ''}>failed</option><option value="pending"${filter.status === 'pending' ? ' selected' : ''}>pending</option></select><label for="merchant">Merchant</label><input id="merchant" name="merchant" value="${esc(filter.merchantId ?? '')}" placeholder="appId"><button type="submit" class="secondary">Filter</button></form>${resendAll}${table(
      'Per merchant',
      ['Merchant', 'Failed', 'Pending'],
      [...byMerchant].map(([m, c]) => [link(`/console/callbacks?merchant=${m}`, m), String(c.failed), String(c.pending)]),
      [1, 2],
    )}<h2>Events</h2>${table(
      'Newest first (at most 200)',
      ['Created', 'Event', 'Type', 'Merchant', 'Status', 'Attempts', 'Last error'],
      rows.map((r) => [
        when(r.created_at),
        link(`/console/callbacks/${r.id}`, r.id),
        esc(r.type),
        esc(r.merchant_id),
        pill(r.status, r.status === 'failed' ? 'bad' : 'warn'),
        String(r.attempts),
        esc(r.last_error ?? ''),
      ]),
      [5],
    )}`,
  );
}

export function callbackPage(
  frame: Frame,
  d: { event: Selectable<CallbackEventsTable>; attempts: Array<Selectable<CallbackAttemptsTable>> },
): string {
  const e = d.event;
  const resend = can(frame.session.role, 'callbacks')
    ? `<div class="panel">${form(frame, `/console/callbacks/${e.id}/resend`, '', 'Resend now')}</div>`
    : '';
  return page(
    `Callback ${e.id}`,
    frame,
    `<div class="panel">${kv([
      ['Type', esc(e.type)],
      ['Merchant', link(`/console/merchants/${e.merchant_id}`, e.merchant_id)],
      ['URL', `<code>${esc(e.url)}</code>`],
      ['Status', pill(e.status, e.status === 'delivered' ? 'good' : e.status === 'failed' ? 'bad' : 'warn')],
      ['Attempts', String(e.attempts)],
      ['Next attempt', e.status === 'pending' ? when(e.next_attempt_at) : '—'],
      ['Created', when(e.created_at)],
      ['Delivered', when(e.delivered_at)],
    ])}</div>${resend}<h2>Attempts</h2>${table(
      'Newest first',
      ['#', 'Started', 'HTTP status', 'Latency', 'Error', 'Response'],
      d.attempts.map((a) => [
        String(a.attempt),
        when(a.started_at),
        a.http_status === null ? '—' : String(a.http_status),
        `${a.duration_ms} ms`,
        esc(a.error ?? ''),
        `<code>${esc((a.response_excerpt ?? '').slice(0, 200))}</code>`,
      ]),
      [0, 2, 3],
    )}<h2>Payload</h2><div class="panel"><pre>${esc(pretty(e.payload))}</pre></div>`,
  );
}

export function merchantsPage(frame: Frame, merchants: MerchantSummary[]): string {
  return page(
    'Merchants',
    frame,
    table(
      `${merchants.length} merchant${merchants.length === 1 ? '' : 's'}`,
      ['Merchant', 'appId', 'Status', 'Login-free page', 'Rate limit', 'Notify URL'],
      merchants.map((m) => [
        link(`/console/merchants/${m.appId}`, m.name),
        `<code>${esc(m.appId)}</code>`,
        pill(m.status, m.status === 'active' ? 'good' : 'bad'),
        m.loginFree ? 'on' : 'off',
        m.rateLimit === null ? 'default' : `${m.rateLimit}/s`,
        esc(m.notifyUrl ?? '—'),
      ]),
    ),
  );
}

export function merchantPage(
  frame: Frame,
  d: {
    merchant: MerchantSummary;
    domains: DomainSummary[];
    balances: FundingBalance[];
    fundToken: string;
    statements: FundingStatementPage[];
  },
): string {
  const m = d.merchant;
  const role = frame.session.role;
  const status = can(role, 'merchants')
    ? form(
        frame,
        `/console/merchants/${m.appId}/status`,
        `<input type="hidden" name="status" value="${m.status === 'active' ? 'disabled' : 'active'}">`,
        m.status === 'active' ? 'Disable merchant' : 'Enable merchant',
        m.status === 'active' ? 'danger' : 'primary',
      )
    : '';
  const fund = can(role, 'funding')
    ? `<h2>Fund</h2><div class="panel">${form(frame, `/console/merchants/${m.appId}/fund`, `<input type="hidden" name="once" value="${esc(d.fundToken)}"><label for="amount">Amount</label><input id="amount" name="amount" required inputmode="decimal" pattern="-?[0-9]+(\\.[0-9]{1,2})?" size="12"><label for="currency">Currency</label><select id="currency" name="currency"><option>EUR</option><option>USDT</option></select><label for="reference">Reference</label><input id="reference" name="reference" required maxlength="200" placeholder="bank transfer reference">`, 'Credit or debit')}<p class="muted">A negative amount debits the account, down to zero.</p></div>`
    : '';
  return page(
    m.name,
    frame,
    `<div class="panel">${kv([
      ['appId', `<code>${esc(m.appId)}</code>`],
      ['Status', pill(m.status, m.status === 'active' ? 'good' : 'bad')],
      ['Signature', esc(m.signType)],
      ['Permissions', `login-free page ${m.loginFree ? 'on' : 'off'}`],
      ['Notify URL', esc(m.notifyUrl ?? '—')],
      ['Rate limit', m.rateLimit === null ? 'the service default' : `${m.rateLimit} requests/s`],
      [
        'Authorization endpoint',
        m.authorizationUrl ? `${esc(m.authorizationUrl)} (${m.authorizationTimeoutMs} ms, default ${esc(m.authorizationDefault)})` : 'none',
      ],
      ['Created', esc(m.createdAt)],
    ])}${status ? `<p>${status}</p>` : ''}</div><h2>Funding balance</h2>${table(
      'Available for top-ups',
      ['Currency', 'Available'],
      d.balances.map((b) => [esc(b.currency), esc(major(b.available, b.currency))]),
      [1],
    )}${fund}<h2>Funding statement</h2>${d.statements
      .map((st) =>
        table(
          `${st.currency}: the last ${st.movements.length} movements, newest first (the merchant reads them all with merchantFundingList)`,
          ['#', 'When', 'Movement', 'Reference', 'Card / trade', 'Amount', 'Balance'],
          st.movements.map((l) => [
            String(l.seq),
            esc(l.createdAt),
            esc(l.kind),
            esc(l.reference),
            l.cardId ? `<a href="/console/cards/${encodeURIComponent(l.cardId)}">${esc(l.cardId)}</a> ${esc(l.tradeId ?? '')}` : '—',
            esc(major(l.amount, st.currency)),
            esc(major(l.balance, st.currency)),
          ]),
          [0, 5, 6],
        ),
      )
      .join('')}<h2>Domains</h2>${table(
      'Hosts of its card page',
      ['Host', 'TLS', 'Certificate expires', ''],
      d.domains.map((x) => [
        esc(x.host),
        x.tls ? 'served here' : 'at a proxy',
        esc(x.certExpiresAt ?? '—'),
        can(role, 'domains')
          ? form(
              frame,
              `/console/merchants/${m.appId}/domains/remove`,
              `<input type="hidden" name="host" value="${esc(x.host)}">`,
              'Remove',
              'danger',
            )
          : '',
      ]),
    )}<p>${link(`/console/callbacks?merchant=${m.appId}`, 'Its callbacks')}</p>`,
  );
}

const json = (v: unknown) => (v === null || v === undefined ? '—' : `<pre>${esc(JSON.stringify(v, null, 1))}</pre>`);

export function auditPage(frame: Frame, filter: AuditFilter, entries: AuditEntry[]): string {
  const input = (name: 'actor' | 'action' | 'target', label: string) =>
    `<label for="${name}">${label}</label><input id="${name}" name="${name}" value="${esc(filter[name] ?? '')}" size="18">`;
  return page(
    'Audit trail',
    frame,
    `<form method="get" action="/console/audit" class="inline">${input('actor', 'Who')}${input('action', 'Action')}${input('target', 'Target')}<button type="submit" class="secondary">Filter</button></form>${table(
      'Newest first (at most 200); the console and the CLI both write here, and nothing can change a record',
      ['When', 'Who', 'From', 'Action', 'Target', 'Before', 'After'],
      entries.map((e) => [
        esc(e.at.replace('T', ' ').slice(0, 19)),
        esc(e.actor),
        `${esc(e.source)} <span class="muted">${esc(e.origin)}</span>`,
        `<code>${esc(e.action)}</code>`,
        `<code>${esc(e.target)}</code>`,
        json(e.before),
        json(e.after),
      ]),
    )}`,
  );
}

export function operatorsPage(frame: Frame, operators: OperatorSummary[], created: { email: string; url: string } | null): string {
  const roleSelect = (id: string, current?: string) =>
    `<select id="${id}" name="role">${OPERATOR_ROLES.map((r) => `<option${r === current ? ' selected' : ''}>${r}</option>`).join('')}</select>`;
  const shown = created
    ? `<div class="notice" role="status"><p>Send this one-time set-up link to <b>${esc(created.email)}</b> over a channel you trust. It works once, for 24 hours, and is not shown again:</p><p class="mono">${esc(created.url)}</p></div>`
    : '';
  return page(
    'Operators',
    frame,
    `${shown}${table(
      'Console accounts',
      ['E-mail', 'Role', 'Status', 'Set up', 'Second factor', 'Last login', 'Change'],
      operators.map((o) => [
        esc(o.email),
        esc(o.role),
        `${pill(o.status, o.status === 'active' ? 'good' : 'bad')}${o.lockedUntil ? ` ${pill(`locked until ${o.lockedUntil.slice(11, 16)}`, 'warn')}` : ''}`,
        esc(o.setup),
        o.totp ? 'yes' : 'no',
        o.lastLoginAt ? esc(o.lastLoginAt.replace('T', ' ').slice(0, 16)) : '—',
        `${form(frame, `/console/operators/${o.operatorId}/update`, `<label for="role-${o.operatorId}" class="muted">Role</label>${roleSelect(`role-${o.operatorId}`, o.role)}`, 'Set role', 'secondary')}${o.lockedUntil ? form(frame, `/console/operators/${o.operatorId}/update`, '<input type="hidden" name="status" value="active">', 'Unlock') : ''}${form(frame, `/console/operators/${o.operatorId}/update`, `<input type="hidden" name="status" value="${o.status === 'active' ? 'disabled' : 'active'}">`, o.status === 'active' ? 'Disable' : 'Enable', o.status === 'active' ? 'danger' : 'primary')}${form(frame, `/console/operators/${o.operatorId}/reset`, '', 'New set-up link', 'secondary')}`,
      ]),
    )}<h2>Add an operator</h2><div class="panel">${form(frame, '/console/operators', `<label for="new-email">E-mail</label><input id="new-email" name="email" type="email" required><label for="new-role">Role</label>${roleSelect('new-role', 'viewer')}`, 'Create and show set-up link')}<p class="muted">viewer reads; support also freezes cards and resends callbacks; reviewer also decides cardholders and KYC; admin also manages merchants, funding, domains and operators.</p></div>`,
  );
}
