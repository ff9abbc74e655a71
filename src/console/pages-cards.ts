import type { Selectable } from 'kysely';
import type { CardModel } from '../cards/model.js';
import type { CardQueryModel } from '../cards/query.js';
import { VERIFICATION_LIMIT } from '../cards/verification.js';
import type { AuthorizationsTable } from '../db/schema.js';
import { formatMoney } from '../page/activity.js';
import type { Token } from '../tokens/schemas.js';
import type { TradePage } from '../trades/list.js';
import type { RecordFacts } from '../trades/network-reads.js';
import { auditPill, major } from './pages-common.js';
import { tokensSection } from './pages-tokens.js';
import type { SearchHit } from './queries.js';
import type { CardAuthentication } from './queries-three-ds.js';
import { can } from './roles.js';
import { statementRow } from './statement.js';
import { esc, type Frame, form, kv, link, page, pill, reasonField, table, when } from './view.js';

/** The console's search and card pages (re-exported by ./pages.ts). */

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
      ? '<p class="muted">A cardholder by id, e-mail or name; a card by id or BIN and last four (<code>424242 4242</code>), by last four alone or by its full number; a cardholder by document number; a transaction, KYC request (or its e-mail) or merchant by id; a wallet token by its id or the TSP’s reference. One match opens at once.</p>'
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

const controlsText = (c: object) => (Object.keys(c).length === 0 ? 'none' : `<code>${esc(JSON.stringify(c))}</code>`);

export interface CardView {
  card: CardModel;
  query: CardQueryModel;
  holder: { id: string; first_name: string; last_name: string; audit_status: number } | undefined;
  declined: Array<Selectable<AuthorizationsTable>>;
  /** Its latest 3-D Secure authentications (decisions §14.6). */
  authentications: CardAuthentication[];
  /** Its wallet tokens with their history, newest first (decisions §15.6), and how many it has in all. */
  tokens: Token[];
  tokensTotal: number;
  /** CVV2 and expiry mismatches counting against the card now (decisions §12.13: 5 within 24 hours freeze it). */
  verificationFailures: number;
  merchantName: string;
  merchantId: string;
  createdAt: number;
  trades: TradePage | null;
  /** Each listed record's hold, original, forced mark and clearings (src/trades/network-reads.ts). */
  facts: Map<string, RecordFacts>;
  rangeError: string | null;
  from: string;
  to: string;
  pageNo: number;
  pageSize: number;
}

const TRANS_STATUS_WORDS: Record<string, string> = {
  Y: 'authenticated',
  C: 'challenge',
  N: 'refused',
  U: 'could not authenticate',
  A: 'attempted',
  R: 'rejected',
};

/** A card's 3-D Secure authentications: outcome, reason, method, merchant, amount, and the authorization that used the value. */
function authenticationsTable(list: CardAuthentication[]): string {
  if (list.length === 0) return '<p class="muted">No 3-D Secure authentications.</p>';
  return table(
    'The last 20 authentications (3-D Secure), newest first',
    ['When', 'Outcome', 'Reason', 'Method', 'Merchant', 'Amount', 'Used by'],
    list.map((a) => {
      const tone = a.trans_status === 'Y' ? 'good' : a.trans_status === 'C' ? 'warn' : 'bad';
      const method = a.authentication_type === null ? a.decided_by : `challenge (${a.challenge_method ?? 'otp'})`;
      const amount =
        a.amount === null || a.currency === null
          ? '—'
          : `${(Number(a.amount) / 10 ** Number(a.exponent ?? 2)).toFixed(Number(a.exponent ?? 2))} ${a.currency}`;
      return [
        when(a.created_at),
        `${pill(`${a.trans_status} ${TRANS_STATUS_WORDS[a.trans_status] ?? ''}`.trim(), tone)}${a.challenge_state && a.completed_at === null ? ` <span class="muted">${esc(a.challenge_state)}</span>` : ''}`,
        a.trans_status_reason ? `<code>${esc(a.trans_status_reason)}</code>` : '—',
        esc(method),
        esc(a.merchant_name ?? '—'),
        esc(amount),
        a.used_trade_id ? `<code>${esc(a.used_trade_id)}</code>` : '—',
      ];
    }),
    [5],
  );
}

/**
 * A closed card's debt has no other exit (decisions §12.13): an admin settles it from the merchant's
 * funding, confirmed by typing the card's id.
 */
function settleDebt(frame: Frame, card: CardModel): string {
  if (card.status !== 'closed' || card.debtBalance <= 0 || !can(frame.session.role, 'debts')) return '';
  return `<h2>Settle its debt</h2><div class="panel"><p class="muted">The card is closed and owes ${esc(major(card.debtBalance, card.currency))}: settle it from its merchant’s ${esc(card.currency)} funding account (a line of the funding statement; refused when the funding is short). Recorded in the audit trail.</p>${form(
    frame,
    `/console/cards/${card.cardId}/settle-debt`,
    '<label for="settle-confirm">Type the card id to confirm</label><input id="settle-confirm" name="confirm" required autocomplete="off">',
    'Settle debt from funding',
    'danger',
  )}</div>`;
}

export function cardPage(frame: Frame, v: CardView): string {
  const { card } = v;
  // A `security` freeze is the service's own (decisions §12.13): "for security", not "by the security".
  const bySource = card.statusSource === 'security' ? ' for security' : card.statusSource ? ` by the ${esc(card.statusSource)}` : '';
  const statusLine = `${pill(card.status, card.status === 'active' ? 'good' : 'bad')}${bySource}${card.statusReason ? `: ${esc(card.statusReason)}` : ''}`;
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
    ? t.tradeList.map((r) => {
        const line = statementRow(r, v.facts.get(r.tradeId));
        return [esc(r.businessDate), `<code>${esc(r.tradeId)}</code>`, line.type, line.status, line.description, line.amount];
      })
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
      // The net position (decisions §12.13): available + held − debt.
      ['Ledger', esc(major(card.ledgerBalance, card.currency))],
      // What forced posts of the card network took beyond the balance (decisions §12.7): owed by the cardholder.
      [
        'Debt',
        card.debtBalance > 0
          ? `${pill(major(card.debtBalance, card.currency), 'bad')} <span class="muted">owed after forced posts; ${card.status === 'closed' ? 'an admin settles it from the merchant’s funding' : 'a top-up pays it first'}</span>`
          : esc(major(0, card.currency)),
      ],
      [
        'Card verification',
        v.verificationFailures > 0
          ? `${pill(`${v.verificationFailures} of ${VERIFICATION_LIMIT} failures`, 'warn')} <span class="muted">CVV2 or expiry mismatches within 24 hours; at ${VERIFICATION_LIMIT} the card is frozen for security</span>`
          : '<span class="muted">no recent failures</span>',
      ],
      ['Issued', when(v.createdAt)],
    ])}</div>${actions}${settleDebt(frame, card)}${tokensSection(frame, v.tokens, v.tokensTotal)}<h2>Controls</h2><div class="panel"><p>Card: ${controlsText(card.controls)}</p><p>Cardholder: ${controlsText(v.query.holderControls)}</p>${spending}</div><h2>Transactions</h2><form method="get" class="inline" action="/console/cards/${esc(card.cardId)}"><label for="from">From</label><input id="from" name="from" type="date" value="${esc(v.from)}"><label for="to">To</label><input id="to" name="to" type="date" value="${esc(v.to)}"><button type="submit" class="secondary">Show</button></form>${v.rangeError ? `<p class="notice bad">${esc(v.rangeError)}</p>` : `${table(`${v.from} to ${v.to}, newest first (the transaction list of interface 4.1, every status)`, ['Day', 'Transaction', 'Type', 'Status', 'Description', 'Amount'], rows, [5])}${pager}`}<h2>Authentications (3-D Secure)</h2>${authenticationsTable(v.authentications)}<h2>Recent declines</h2>${table(
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
