import type { Selectable } from 'kysely';
import type { AuditEntry, AuditFilter } from '../audit/trail.js';
import type { EndpointRow } from '../callbacks/breaker.js';
import { type CallbackAttemptsTable, type CallbackEventsTable, OPERATOR_ROLES } from '../db/schema.js';
import type { DomainSummary } from '../domains/store.js';
import type { FundingBalance } from '../ledger/funding.js';
import type { FundingStatementPage } from '../ledger/statement.js';
import type { MerchantSummary } from '../merchants/manage.js';
import type { OperatorSummary } from './accounts.js';
import { endpointsTable } from './endpoints-view.js';
import { type EventRow, major, pretty } from './pages-common.js';
import { can } from './roles.js';
import { esc, type Frame, form, kv, link, page, pill, table, when } from './view.js';

/** The console's callbacks, merchants, audit trail and operators pages (re-exported by ./pages.ts). */

export function callbacksPage(
  frame: Frame,
  rows: EventRow[],
  filter: { merchantId?: string | undefined; status?: string | undefined },
  endpoints: EndpointRow[] = [],
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
    )}${endpointsTable(endpoints)}<h2>Events</h2>${table(
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
