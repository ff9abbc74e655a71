import { createHash } from 'node:crypto';
import type { CardDetails } from '../cards/details.js';
import type { CardModel } from '../cards/model.js';
import { AUDIT_STATUS_NAMES, type AuditStatusValue } from '../codes/audit-status.js';
import type { DisputeStatus } from '../db/schema.js';
import { fromMajor } from '../money/currency.js';
import { type ActivityLine, type ActivityPage, formatCursor, formatMoney, type LineState } from './activity.js';

/** Everything interpolated into the page goes through here. */
export function esc(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

// Colours meet WCAG AA contrast (4.5:1 for text) on their backgrounds; focus is always visible.
const STYLE = `
:root{color-scheme:light;--ink:#14213d;--muted:#4a5568;--line:#d9dee7;--bg:#f5f7fb;--accent:#1f4fd1;--danger:#a61b1b;--ok:#116b3a}
*{box-sizing:border-box}body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:var(--bg)}
header.top{background:#fff;border-bottom:1px solid var(--line)}header.top div{max-width:920px;margin:0 auto;padding:14px 16px;display:flex;justify-content:space-between;align-items:center;gap:12px}
.brand{font-weight:700;letter-spacing:.01em}.who{color:var(--muted);font-size:.9rem;overflow-wrap:anywhere}
main{max-width:920px;margin:0 auto;padding:24px 16px 48px}h1{font-size:1.6rem;margin:0 0 6px}h2{font-size:1.15rem;margin:32px 0 12px}
.muted{color:var(--muted)}.pill{display:inline-block;padding:2px 10px;border-radius:999px;background:#e6ecfb;color:#1b3a8a;font-size:.85rem;font-weight:600}
.pill.frozen{background:#fde8e8;color:var(--danger)}.pill.approved,.pill.active{background:#e3f4ea;color:var(--ok)}
.notice{background:#fff;border:1px solid var(--line);border-left:4px solid var(--accent);border-radius:8px;padding:12px 14px;margin:16px 0}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:20px}
.wallet{display:flex;flex-direction:column;gap:10px}
.card{aspect-ratio:1.586;border-radius:16px;padding:20px;color:#fff;background:linear-gradient(135deg,#1f4fd1,#14213d);display:flex;flex-direction:column;justify-content:space-between;box-shadow:0 8px 24px rgba(20,33,61,.25)}
.card.frozen{background:linear-gradient(135deg,#5b6472,#2d3340)}
.card .num{font:600 1.3rem/1.2 ui-monospace,Menlo,Consolas,monospace;letter-spacing:.08em;word-spacing:.2em}.card .row{display:flex;justify-content:space-between;align-items:flex-end;gap:8px}
.card small{opacity:.9}.card .pill{background:rgba(255,255,255,.92);color:var(--ink)}
.secret{display:flex;gap:24px;font-family:ui-monospace,Menlo,Consolas,monospace}
.actions{display:flex;gap:8px;flex-wrap:wrap}.actions form{margin:0}
button,.button{font:inherit;font-weight:600;padding:9px 16px;border-radius:8px;border:1px solid var(--accent);background:var(--accent);color:#fff;cursor:pointer;text-decoration:none;display:inline-block}
button.secondary,.button.secondary{background:#fff;color:var(--accent)}button.danger{background:#fff;color:var(--danger);border-color:var(--danger)}
button:focus-visible,a:focus-visible{outline:3px solid #f5a623;outline-offset:2px}
a{color:var(--accent)}
.table-wrap{overflow-x:auto;background:#fff;border:1px solid var(--line);border-radius:8px}
table{width:100%;border-collapse:collapse}caption{text-align:left;padding:10px 10px 0;color:var(--muted)}
th,td{text-align:left;padding:9px 10px;border-bottom:1px solid var(--line);font-size:.95rem}th{color:var(--muted);font-weight:600}
td.amt,th.amt{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}td:first-child{white-space:nowrap}td small{font-size:.85rem}tr:last-child td{border-bottom:0}
.state{font-weight:600}.state.pending{color:#7a4f00}.state.declined{color:var(--danger)}.state.posted{color:var(--ok)}.state.void{color:var(--muted)}
.pager{display:flex;justify-content:space-between;margin-top:10px}
.empty{background:#fff;border:1px dashed var(--line);border-radius:12px;padding:24px;text-align:center}
details.report{margin-top:4px}details.report summary{color:var(--accent);cursor:pointer;font-size:.9rem;font-weight:600}details.report summary:focus-visible{outline:3px solid #f5a623;outline-offset:2px}
details.report form{margin:8px 0 0;display:flex;flex-direction:column;gap:8px;align-items:flex-start;max-width:340px}details.report label{font-size:.9rem}
.dispute{font-weight:600;color:#7a4f00}
@media (max-width:480px){h1{font-size:1.35rem}th,td{padding:8px 6px;font-size:.9rem}.card{padding:16px}.card .num{font-size:1.1rem}}
`;

/** The CSP admits exactly this stylesheet and no script at all. */
export const STYLE_HASH = `'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`;

/** How long revealed card details stay on screen before the page reloads without them. */
export const REVEAL_SECONDS = 30;

function layout(title: string, body: string, opts: { brand?: string; who?: string; refreshSeconds?: number | undefined } = {}): string {
  // A meta refresh (not script) takes revealed details off the screen.
  const refresh = opts.refreshSeconds ? `<meta http-equiv="refresh" content="${opts.refreshSeconds};url=/page">` : '';
  const who = opts.who ? `<span class="who">Signed in as ${esc(opts.who)}</span>` : '';
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">${refresh}<title>${esc(title)}</title><style>${STYLE}</style></head><body><header class="top"><div><span class="brand">${esc(opts.brand ?? 'Virtual card')}</span>${who}</div></header><main id="main">${body}</main></body></html>`;
}

export function messagePage(title: string, text: string): string {
  return layout(title, `<h1>${esc(title)}</h1><p class="muted">${esc(text)}</p>`);
}

/** Without an e-mail the link opens the product page: nothing personal. */
export function productPage(brand: string): string {
  return layout(
    'Your virtual card',
    `<h1>Your virtual card</h1><p class="muted">Spend online with a virtual card in EUR or USDT, see every transaction, freeze the card whenever you want.</p>
<div class="empty"><p>Open this page from your account in the app to see your cards.</p></div>`,
    { brand },
  );
}

function money(amount: number, currency: string): string {
  return formatMoney(fromMajor(amount, currency), currency);
}

export interface CardView {
  card: CardModel;
  activity: ActivityPage;
  /** Whether this is an older page (not the newest). */
  paged: boolean;
}

export interface HolderView {
  name: string;
  /** The cardholder's e-mail ("Signed in as"). */
  email: string;
  auditStatus: number;
  cards: CardView[];
}

export interface PageContext {
  brand: string;
  email: string;
  /** The session's form token, put in every form. */
  formToken: string;
  notice?: string | undefined;
  /** Card details being revealed now. */
  revealed?: CardDetails;
}

const last4 = (cardNo: string) => cardNo.slice(-4);
const group4 = (digits: string) => digits.replace(/(.{4})/g, '$1 ').trim();

function cardFace(card: CardModel, revealed: CardDetails | undefined): string {
  const frozen = card.status === 'frozen';
  const label = card.status.charAt(0).toUpperCase() + card.status.slice(1);
  const secret = revealed
    ? `<div class="num" aria-label="Card number">${esc(group4(revealed.cardNo))}</div>
  <div class="secret"><div><small>Expires</small><br><span aria-label="Expiry">${esc(revealed.expiry)}</span></div><div><small>CVV</small><br><span aria-label="CVV">${esc(revealed.cvv)}</span></div></div>`
    : `<div class="num" aria-label="Card number, masked">${esc(group4(card.cardNo))}</div>`;
  return `<section class="card${frozen ? ' frozen' : ''}" aria-label="${esc(card.currency)} card ending ${esc(last4(card.cardNo))}">
  <div class="row"><span>Virtual · ${esc(card.currency)}</span><span class="pill">${esc(label)}</span></div>
  ${secret}
  <div class="row"><div><small>Available</small><br><strong>${esc(money(card.availableBalance, card.currency))}</strong></div>
  <div><small>Balance</small><br>${card.ledgerBalance < 0 ? '−' : ''}${esc(money(card.ledgerBalance, card.currency))}${
    // The net position (decisions §12.13): what the card owes is said, not left to a sign.
    card.debtBalance > 0 ? `<br><small>owes ${esc(money(card.debtBalance, card.currency))}</small>` : ''
  }</div></div>
</section>`;
}

function cardActions(card: CardModel, ctx: PageContext, revealed: boolean): string {
  const form = (action: string, label: string, cls: string) =>
    `<form method="post" action="/page/cards/${esc(card.cardId)}/${action}"><input type="hidden" name="form" value="${esc(ctx.formToken)}"><button type="submit" class="${cls}">${label}</button></form>`;
  const reveal = revealed
    ? `<a class="button secondary" href="/page">Hide card details</a>`
    : card.status === 'active'
      ? form('reveal', 'Show card details', '')
      : '';
  const freeze =
    card.status === 'active'
      ? form('freeze', 'Freeze card', 'danger')
      : card.status === 'frozen' && card.statusSource === 'cardholder'
        ? form('unfreeze', 'Unfreeze card', 'secondary')
        : card.status === 'frozen' && card.statusSource === 'security'
          ? '<p class="muted">Frozen for your protection after wrong card details were entered several times: your card provider can unfreeze it.</p>'
          : card.status === 'frozen'
            ? '<p class="muted">Frozen by your card provider: only they can unfreeze it.</p>'
            : '';
  return `<div class="actions">${reveal}${freeze}</div>`;
}

const STATE_CLASS: Record<LineState, string> = {
  Pending: 'pending',
  Posted: 'posted',
  Reversed: 'void',
  Cancelled: 'void',
  Refunded: 'posted',
  Declined: 'declined',
};

/** A purchase's dispute in the cardholder's words. */
const DISPUTE_WORDS: Record<DisputeStatus, string> = {
  unsubmitted: 'Reported: your card provider is looking into it',
  submitted: 'Disputed: sent to the card network',
  won: 'Dispute won: the money came back',
  lost: 'Dispute closed: the card network did not refund it',
  expired: 'Report closed: it was not sent in time',
  withdrawn: 'Report withdrawn',
};

/**
 * "I don't recognise this" under a cleared purchase without an open dispute: a form (no script,
 * behind a disclosure so one click reports nothing) with the session's form token and, on an active
 * card, the offer to freeze it at the same time.
 */
function report(l: ActivityLine, card: CardModel, ctx: PageContext): string {
  if (l.dispute) return `<br><small class="dispute">${esc(DISPUTE_WORDS[l.dispute])}</small>`;
  if (!l.disputable || !l.purchaseId) return '';
  const freeze = card.status === 'active' ? '<label><input type="checkbox" name="freeze" value="on"> Also freeze the card now</label>' : '';
  return `<details class="report"><summary>I don’t recognise this</summary><form method="post" action="/page/cards/${esc(card.cardId)}/purchases/${esc(l.purchaseId)}/dispute"><input type="hidden" name="form" value="${esc(ctx.formToken)}"><small class="muted">Your card provider opens a fraud dispute for this purchase.</small>${freeze}<button type="submit" class="danger">Report this purchase</button></form></details>`;
}

function line(l: ActivityLine, card: CardModel, ctx: PageContext): string {
  const amount =
    l.amount === null
      ? `<s aria-label="${esc(l.state)}, nothing taken">${esc(formatMoney(l.asked, l.currency))}</s>`
      : `${l.amount > 0 ? '+' : l.amount < 0 ? '−' : ''}${esc(formatMoney(l.amount, l.currency))}`;
  const notes = l.notes.map((n) => `<br><small class="muted">${esc(n)}</small>`).join('');
  return `<tr><td>${esc(l.date)}</td><td>${esc(l.title)}<br><small class="muted">${esc(l.kind)} · <span class="state ${STATE_CLASS[l.state]}">${esc(l.state)}</span></small>${notes}${report(l, card, ctx)}</td><td class="amt">${amount}</td></tr>`;
}

function history(view: CardView, ctx: PageContext): string {
  const { card, activity, paged } = view;
  const rows = activity.lines.length
    ? activity.lines.map((l) => line(l, card, ctx)).join('')
    : `<tr><td colspan="3" class="muted">${paged ? 'Nothing older.' : 'No transactions yet.'}</td></tr>`;
  const newest = `<a rel="first" href="/page#tx-${esc(card.cardId)}">← Newest</a>`;
  const older = activity.older
    ? `<a rel="next" href="/page?card=${esc(card.cardId)}&amp;older=${esc(formatCursor(activity.older))}#tx-${esc(card.cardId)}">Older →</a>`
    : '';
  const pager =
    paged || older
      ? `<nav class="pager" aria-label="Transactions of the card ending ${esc(last4(card.cardNo))}"><span>${paged ? newest : ''}</span><span>${older}</span></nav>`
      : '';
  return `<h2 id="tx-${esc(card.cardId)}">Transactions · card ending ${esc(last4(card.cardNo))}</h2><div class="table-wrap"><table><caption>Newest first; a purchase is one line, pending until it is paid</caption><thead><tr><th scope="col">Date</th><th scope="col">Description</th><th scope="col" class="amt">Amount</th></tr></thead><tbody>${rows}</tbody></table></div>${pager}`;
}

export function holderPage(view: HolderView | null, ctx: PageContext): string {
  const opts = { brand: ctx.brand, who: ctx.email, refreshSeconds: ctx.revealed ? REVEAL_SECONDS : undefined };
  const notice = ctx.notice ? `<p class="notice" role="status">${esc(ctx.notice)}</p>` : '';
  if (!view) {
    return layout(
      'Your virtual card',
      `<h1>Welcome</h1>${notice}<div class="empty"><h2>No card yet</h2><p>Once your identity is verified, your virtual card will appear here.</p></div>`,
      opts,
    );
  }
  const status = AUDIT_STATUS_NAMES[view.auditStatus as AuditStatusValue] ?? String(view.auditStatus);
  const revealNote = ctx.revealed
    ? `<p class="notice" role="status">Card details are shown for ${REVEAL_SECONDS} seconds, then hidden again. Never share your CVV.</p>`
    : '';
  const cards = view.cards.length
    ? `<div class="cards">${view.cards
        .map(({ card }) => {
          const revealed = ctx.revealed?.cardId === card.cardId ? ctx.revealed : undefined;
          return `<div class="wallet">${cardFace(card, revealed)}${cardActions(card, ctx, revealed !== undefined)}</div>`;
        })
        .join('')}</div>`
    : '<div class="empty"><h2>No card yet</h2><p>Your virtual card will appear here once it is issued.</p></div>';
  return layout(
    'Your virtual card',
    `<h1>${esc(view.name)}</h1><p>Identity check: <span class="pill${view.auditStatus === 2 ? ' approved' : ''}">${esc(status)}</span></p>${notice}${revealNote}<h2>Your cards</h2>${cards}${view.cards.map((v) => history(v, ctx)).join('')}`,
    opts,
  );
}
