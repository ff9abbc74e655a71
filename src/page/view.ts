import { createHash } from 'node:crypto';
import type { CardModel } from '../cards/model.js';
import { AUDIT_STATUS_NAMES, type AuditStatusValue } from '../holders/audit-status.js';
import type { TradeRecord } from '../trades/store.js';

/** Everything interpolated into the page goes through here. */
export function esc(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const STYLE = `
:root{color-scheme:light;--ink:#14213d;--muted:#4a5568;--line:#d9dee7;--bg:#f5f7fb;--accent:#1f4fd1}
*{box-sizing:border-box}body{margin:0;font:16px/1.5 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;color:var(--ink);background:var(--bg)}
main{max-width:880px;margin:0 auto;padding:24px 16px}h1{font-size:1.6rem;margin:0 0 4px}h2{font-size:1.15rem;margin:28px 0 12px}
.muted{color:var(--muted)}.pill{display:inline-block;padding:2px 10px;border-radius:999px;background:#e6ecfb;color:#1b3a8a;font-size:.85rem;font-weight:600}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:16px}
.card{aspect-ratio:1.586;border-radius:16px;padding:20px;color:#fff;background:linear-gradient(135deg,#1f4fd1,#14213d);display:flex;flex-direction:column;justify-content:space-between;box-shadow:0 8px 24px rgba(20,33,61,.25)}
.card .num{font:600 1.25rem/1 ui-monospace,Menlo,Consolas,monospace;letter-spacing:.08em}.card .row{display:flex;justify-content:space-between;align-items:flex-end}
.card small{opacity:.85}table{width:100%;border-collapse:collapse;background:#fff;border:1px solid var(--line);border-radius:8px}
th,td{text-align:left;padding:8px 10px;border-bottom:1px solid var(--line);font-size:.95rem}th{color:var(--muted);font-weight:600}td.amt{text-align:right;font-variant-numeric:tabular-nums}
.empty{background:#fff;border:1px dashed var(--line);border-radius:12px;padding:24px;text-align:center}
`;

/** The CSP admits exactly this stylesheet and no script at all. */
export const STYLE_HASH = `'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`;

function layout(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${esc(title)}</title><style>${STYLE}</style></head><body><main>${body}</main></body></html>`;
}

export function messagePage(title: string, text: string): string {
  return layout(title, `<h1>${esc(title)}</h1><p class="muted">${esc(text)}</p>`);
}

/** Without an e-mail the link opens the product page: nothing personal. */
export function productPage(): string {
  return layout(
    'Your virtual card',
    `<h1>Your virtual card</h1><p class="muted">Spend online with a virtual card in EUR or USDT, see every transaction, and keep control of your card.</p>
<div class="empty"><p>Open this page from your account in the app to see your cards.</p></div>`,
  );
}

const TRADE_NAMES: Record<number, string> = {
  150: 'Authorization',
  151: 'Payment',
  100: 'Top-up',
  110: 'Withdrawal',
  120: 'Transfer in',
  121: 'Transfer out',
  200: 'Adjustment',
  300: 'Balance inquiry',
  500: 'Fee',
};

function money(amount: number, currency: string): string {
  return `${amount.toFixed(currency === 'JPY' ? 0 : 2)} ${currency}`;
}

export interface HolderView {
  name: string;
  auditStatus: number;
  cards: Array<{ card: CardModel; trades: TradeRecord[] }>;
}

export function holderPage(view: HolderView | null, email: string): string {
  if (!view) {
    return layout(
      'Your virtual card',
      `<h1>Welcome</h1><p class="muted">Signed in as ${esc(email)}.</p><div class="empty"><h2>No card yet</h2><p>Once your identity is verified, your virtual card will appear here.</p></div>`,
    );
  }
  const status = AUDIT_STATUS_NAMES[view.auditStatus as AuditStatusValue] ?? String(view.auditStatus);
  const cards = view.cards.length
    ? `<div class="cards">${view.cards
        .map(
          ({ card }) => `<section class="card" aria-label="Card ending ${esc(card.cardNo.slice(-4))}">
  <div class="row"><span>Virtual card</span><span class="pill">${esc(card.status)}</span></div>
  <div class="num">${esc(card.cardNo.replace(/(.{4})/g, '$1 ').trim())}</div>
  <div class="row"><div><small>Available</small><br><strong>${esc(money(card.availableBalance, card.currency))}</strong></div>
  <div><small>Balance</small><br>${esc(money(card.ledgerBalance, card.currency))}</div></div>
</section>`,
        )
        .join('')}</div>`
    : '<div class="empty"><h2>No card yet</h2><p>Your virtual card will appear here once it is issued.</p></div>';
  const history = view.cards
    .map(({ card, trades }) => {
      const rows = trades.length
        ? trades
            .map(
              (t) =>
                `<tr><td>${esc(t.businessDate)}</td><td>${esc(TRADE_NAMES[t.tradeType] ?? t.tradeType)}</td><td>${esc(t.remark)}</td><td class="amt">${esc(money(t.amount, t.currency))}</td></tr>`,
            )
            .join('')
        : '<tr><td colspan="4" class="muted">No transactions in the last 30 days.</td></tr>';
      return `<h2>Transactions · card ending ${esc(card.cardNo.slice(-4))}</h2><table><caption class="muted">Last 30 days</caption><thead><tr><th scope="col">Date</th><th scope="col">Type</th><th scope="col">Description</th><th scope="col">Amount</th></tr></thead><tbody>${rows}</tbody></table>`;
    })
    .join('');
  return layout(
    'Your virtual card',
    `<h1>${esc(view.name)}</h1><p><span class="pill">${esc(status)}</span></p><h2>Your cards</h2>${cards}${history}`,
  );
}
