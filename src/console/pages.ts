import { SETTLEMENT_LINES } from '../card-network/settlement.js';
import { AUDIT_TRANSITIONS, AuditStatus, type AuditStatusValue } from '../codes/audit-status.js';
import { codeMeaning } from '../iso8583/response-codes.js';
import type { NetworkFigures } from '../metrics.js';
import { CARD_CURRENCIES, toMinor } from '../money/currency.js';
import { formatMoney } from '../page/activity.js';
import { auditPill } from './pages-common.js';
import { qrSvg } from './qr.js';
import type { holderDetail, kycDetail, NetworkOverview, Overview, reviewQueues } from './queries.js';
import type { ThreeDsToday } from './queries-three-ds.js';
import { can, PERMISSIONS, type Permission } from './roles.js';
import { otpauthUrl } from './totp.js';
import { barePage, barList, esc, type Frame, form, hourChart, kv, link, page, pill, reasonField, table, when } from './view.js';

export * from './pages-admin.js';
export * from './pages-cards.js';
export * from './pages-common.js';
export * from './pages-disputes.js';
export * from './pages-exceptions.js';

/** The page of each console screen. Data in, HTML out: no database, no request. */

const ROLE_WORDS: Record<Permission, string> = {
  read: 'read the console',
  cards: 'freeze, unfreeze or close cards',
  tokens: 'suspend, resume or delete wallet tokens',
  callbacks: 'resend callbacks',
  exceptions: 'post or return the card network’s held advices',
  review: 'decide cardholders and KYC requests',
  evidence: 'open disputes’ evidence files',
  outcomes: 'record a dispute’s outcome',
  merchants: 'manage merchants',
  funding: 'fund merchants',
  debts: 'settle a closed card’s debt from its merchant’s funding',
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
    `${o.error ? `<p class="notice bad" role="alert">${esc(o.error)}</p>` : ''}<p>${esc(o.email)} · <span class="pill">${esc(o.role)}</span></p><form method="post" action="/console/setup" class="stack"><input type="hidden" name="token" value="${esc(o.token)}"><input type="hidden" name="secret" value="${esc(o.secret)}"><label>New password <span class="muted">(12 characters or more)</span><input name="password" type="password" autocomplete="new-password" minlength="12" required></label><label>The same again<input name="password2" type="password" autocomplete="new-password" minlength="12" required></label><fieldset class="panel"><legend>Second factor${required ? ' (required)' : ' (recommended)'}</legend><p>Scan this code with an authenticator app, or type the key below into it (time-based, 6 digits, 30 seconds):</p>${qrSvg(otpauthUrl(o.secret, o.email), 'QR code for the authenticator app')}<p class="mono" aria-label="Key">${esc(grouped)}</p><p class="muted mono">${esc(otpauthUrl(o.secret, o.email))}</p><label>The code the app shows now<input name="code" inputmode="numeric" autocomplete="one-time-code" maxlength="7"${required ? ' required' : ''}></label></fieldset><button type="submit">Save</button></form>`,
  );
}

const tile = (label: string, value: string, href?: string) =>
  `<div class="tile">${href ? `<a href="${href}">` : ''}<span class="muted">${esc(label)}</span><b>${value}</b>${href ? '</a>' : ''}</div>`;

/** A bound of the decision-time histogram, in words. */
const under = (seconds: number | null) =>
  seconds === null ? '—' : seconds === Number.POSITIVE_INFINITY ? 'over 2.5 s' : `≤ ${Math.round(seconds * 1000 * 10) / 10} ms`;

/** The report's major units back to integer minor units by their decimal text (toMinor), zero and negatives included: no float product. */
const minorOf = (major: number, currency: string) => (major === 0 ? 0 : Math.sign(major) * toMinor(Math.abs(major), currency));

/**
 * The day's clearing and settlement with the network (decisions §12.10), per currency, as `cardprogram
 * network settlement` gives it: each line's amount and count, and the net owed to the network.
 */
function settlementTable(r: NetworkOverview['settlement']): string {
  const head = ['Currency', ...SETTLEMENT_LINES.map((l) => l.line.replace('-', ' ')), 'Net owed to the network'];
  return table(
    `Clearing and settlement of ${r.date} (the business day; every instance’s, from the database)`,
    head.map((h, i) => (i === 0 ? h : h.charAt(0).toUpperCase() + h.slice(1))),
    r.totals.map((t) => [
      esc(t.currency),
      ...t.lines.map(
        (l) => `${esc(formatMoney(minorOf(l.amount, t.currency), t.currency))}${l.count ? ` <span class="muted">(${l.count})</span>` : ''}`,
      ),
      `<b>${t.net < 0 ? '−' : ''}${esc(formatMoney(minorOf(t.net, t.currency), t.currency))}</b>`,
    ]),
    head.map((_, i) => i).slice(1),
  );
}

/**
 * The card network link (docs/console.md): today's forced posts and the cards in debt from the
 * database (every instance's); this instance's own figures since it started, labelled so.
 */
function networkSection(n: NetworkOverview, link: NetworkFigures): string {
  const money = <T extends { amount: number; currency: string }>(rows: T[], count: (r: T) => string) =>
    rows.length ? rows.map((r) => `${count(r)} · ${esc(formatMoney(r.amount, r.currency))}`).join('<br>') : '0';
  const d = link.decisions;
  const time = d.count
    ? `p50 ${under(d.p50)} · p99 ${under(d.p99)}<br><span class="muted">mean ${Math.round((d.meanSeconds ?? 0) * 10_000) / 10} ms</span>`
    : '—';
  return `<h2>Card network link</h2><div class="grid">${tile(
    'Forced posts today',
    money(n.forced, (r) => String(r.n)),
  )}${tile(
    'Card debt',
    // An amount, with its currency, also when nothing is owed (it read a bare "0").
    money(
      n.debt.length ? n.debt : CARD_CURRENCIES.map((currency) => ({ currency, cards: 0, amount: 0 })),
      (r) => `${r.cards} card${r.cards === 1 ? '' : 's'}`,
    ),
  )}${tile('Connections (this instance)', String(link.connections))}${tile('Signed-on peers (this instance)', String(link.signedOn))}${tile(
    'Answers (this instance)',
    String(link.messages.reduce((s, m) => s + m.n, 0)),
  )}${tile('Decision time (this instance)', time)}${tile(
    'Exceptions open',
    money(n.exceptions, (r) => String(r.n)),
    '/console/exceptions',
  )}</div>${settlementTable(n.settlement)}${table(
    'Answers this instance sent since it started, by MTI and response code (field 39)',
    ['Answer MTI', 'Response code', 'Meaning', 'Answers'],
    link.messages.map((m) => [esc(m.mti), esc(m.code), esc(codeMeaning(m.code)), String(m.n)]),
    [3],
  )}<p class="muted">“This instance”: the figures of the process that served this page, since it started (each instance’s <code>/metrics</code> has its own). Forced posts (today, UTC) and debt are read from the database: every instance’s.</p>`;
}

/** 3-D Secure today (decisions §14.6): the authentications of every merchant by outcome, and the refusals by reason. */
function threeDsSection(rows: ThreeDsToday): string {
  const by = (status: string) => rows.filter((r) => r.status === status).reduce((s, r) => s + r.n, 0);
  const total = rows.reduce((s, r) => s + r.n, 0);
  const reasons = rows
    .filter((r) => r.status !== 'Y' && r.status !== 'C' && r.reason !== null)
    .map((r) => ({ label: `${r.status} / ${r.reason}`, n: r.n }))
    .sort((a, b) => b.n - a.n);
  return `<h2>3-D Secure</h2><div class="grid">${tile('Authentications today', String(total))}${tile('Authenticated (Y)', String(by('Y')))}${tile(
    'Challenges open (C)',
    String(by('C')),
  )}${tile('Refused (N, R)', String(by('N') + by('R')))}${tile('Not authenticated (U, A)', String(by('U') + by('A')))}</div>${barList(
    'Authentications refused today by outcome and reason',
    reasons,
  )}`;
}

export function overviewPage(
  frame: Frame,
  o: Overview,
  network: { db: NetworkOverview; link: NetworkFigures },
  threeDs: ThreeDsToday = [],
): string {
  const volume = o.volume.length ? o.volume.map((v) => esc(formatMoney(v.amount, v.currency))).join('<br>') : '0';
  return page(
    `Today, ${o.day}`,
    frame,
    `<div class="grid">${tile('Authorizations approved', String(o.approved))}${tile('Authorizations declined', String(o.declined))}${tile('Approved volume', volume)}${tile('Callbacks failed', String(o.callbacksFailed), '/console/callbacks?status=failed')}${tile('Callbacks retrying', String(o.callbacksRetrying), '/console/callbacks?status=pending')}${tile('Cardholders waiting for review', String(o.holdersWaiting), '/console/reviews')}${tile('KYC requests waiting', String(o.kycWaiting), '/console/reviews')}${tile('Disputes open', String(o.disputesOpen), '/console/disputes')}</div><h2>Authorizations</h2>${hourChart(o.hours)}${barList(
      'Declines today by reason',
      o.declineReasons.map((r) => ({ label: r.reason, n: r.n })),
    )}${threeDsSection(threeDs)}${networkSection(network.db, network.link)}`,
  );
}

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
