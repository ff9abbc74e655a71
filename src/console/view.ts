import { createHash } from 'node:crypto';
import { esc } from '../page/view.js';
import { can, type Permission } from './roles.js';
import type { ConsoleSession } from './sessions.js';

/**
 * The console's HTML frame: server-rendered, no script at all, one stylesheet admitted by its hash
 * (the card page's discipline, src/page/view.ts). Everything interpolated goes through `esc`.
 */
export { esc };

// Colours meet WCAG AA contrast on their backgrounds; focus is always visible.
const STYLE = `
:root{color-scheme:light;--ink:#111827;--muted:#4b5563;--line:#dde1e8;--bg:#f4f6f9;--accent:#1f4fd1;--danger:#a61b1b;--ok:#116b3a;--warn:#7a4f00}
*{box-sizing:border-box}body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:var(--bg)}
.shell{display:grid;grid-template-columns:210px 1fr;min-height:100vh}
nav.side{background:#111827;color:#e5e7eb;padding:18px 0}nav.side .brand{font-weight:700;padding:0 18px 14px;display:block;color:#fff}
nav.side a{display:block;padding:8px 18px;color:#d1d5db;text-decoration:none}nav.side a[aria-current=page]{background:#1f2937;color:#fff;border-left:3px solid #60a5fa;padding-left:15px}
nav.side a:hover{color:#fff}
.bar{display:flex;justify-content:space-between;align-items:center;gap:12px;padding:12px 24px;background:#fff;border-bottom:1px solid var(--line)}
.bar form{margin:0}.who{color:var(--muted)}
main{padding:24px;max-width:1200px}h1{font-size:1.5rem;margin:0 0 16px}h2{font-size:1.1rem;margin:28px 0 10px}
.muted{color:var(--muted)}.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(200px,1fr));gap:14px}
.tile{background:#fff;border:1px solid var(--line);border-radius:10px;padding:14px 16px}.tile b{display:block;font-size:1.6rem;font-variant-numeric:tabular-nums}
.tile a{text-decoration:none;color:inherit}
.panel{background:#fff;border:1px solid var(--line);border-radius:10px;padding:16px;margin-bottom:16px}
table{width:100%;border-collapse:collapse;background:#fff}caption{text-align:left;padding:8px 10px;color:var(--muted)}
th,td{text-align:left;padding:8px 10px;border-bottom:1px solid var(--line);vertical-align:top}th{color:var(--muted);font-weight:600;font-size:.9rem}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}td.num{white-space:nowrap}
.table-wrap{overflow-x:auto;border:1px solid var(--line);border-radius:10px;background:#fff}
.pill{display:inline-block;padding:1px 9px;border-radius:999px;background:#e6ecfb;color:#1b3a8a;font-size:.85rem;font-weight:600}
.pill.bad{background:#fde8e8;color:var(--danger)}.pill.good{background:#e3f4ea;color:var(--ok)}.pill.warn{background:#fdf3dc;color:var(--warn)}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:6px 18px;margin:0}dl.kv dt{color:var(--muted)}dl.kv dd{margin:0;overflow-wrap:anywhere}
form.inline{display:inline-flex;gap:8px;align-items:center;flex-wrap:wrap;margin:0 8px 8px 0}
label{font-weight:600;font-size:.9rem}input,select{font:inherit;padding:7px 9px;border:1px solid #9ca3af;border-radius:7px;background:#fff;color:var(--ink)}
.stack{display:flex;flex-direction:column;gap:10px;max-width:380px}.stack label{display:flex;flex-direction:column;gap:4px}
button{font:inherit;font-weight:600;padding:7px 14px;border-radius:7px;border:1px solid var(--accent);background:var(--accent);color:#fff;cursor:pointer}
button.secondary{background:#fff;color:var(--accent)}button.danger{background:#fff;color:var(--danger);border-color:var(--danger)}
button:focus-visible,a:focus-visible,input:focus-visible,select:focus-visible{outline:3px solid #f5a623;outline-offset:2px}
a{color:var(--accent)}.notice{border-left:4px solid var(--accent);background:#fff;padding:10px 14px;border-radius:8px;margin-bottom:16px}
.notice.bad{border-left-color:var(--danger)}code,.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.9em;overflow-wrap:anywhere}
pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:0;font-size:.85rem}
figure{margin:0 0 16px}.chart text{font-size:11px;fill:#4b5563}.legend{display:flex;gap:14px;font-size:.9rem;color:var(--muted)}.sw{display:inline-block;width:10px;height:10px;margin-right:5px}
.sw.ok{background:#2563eb}.sw.no{background:#dc2626}
.login{max-width:420px;margin:8vh auto;background:#fff;border:1px solid var(--line);border-radius:12px;padding:28px}
.pager{display:flex;gap:12px;margin-top:10px}
@media (max-width:720px){.shell{grid-template-columns:1fr}nav.side{display:flex;flex-wrap:wrap;padding:8px}nav.side .brand{width:100%}}
`;

/** The CSP admits exactly this stylesheet and no script. */
export const CONSOLE_STYLE_HASH = `'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`;

const NAV: Array<{ href: string; label: string; permission: Permission }> = [
  { href: '/console', label: 'Overview', permission: 'read' },
  { href: '/console/reviews', label: 'Reviews', permission: 'read' },
  { href: '/console/disputes', label: 'Disputes', permission: 'read' },
  { href: '/console/exceptions', label: 'Exceptions', permission: 'read' },
  { href: '/console/search', label: 'Search', permission: 'read' },
  { href: '/console/callbacks', label: 'Callbacks', permission: 'read' },
  { href: '/console/merchants', label: 'Merchants', permission: 'read' },
  { href: '/console/audit', label: 'Audit trail', permission: 'read' },
  { href: '/console/operators', label: 'Operators', permission: 'operators' },
];

export interface Frame {
  session: ConsoleSession;
  csrf: string;
  /** Which nav entry is current. */
  current: string;
  notice?: { text: string; bad?: boolean } | undefined;
}

function doc(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="referrer" content="no-referrer"><title>${esc(title)} · cardprogram console</title><style>${STYLE}</style></head><body>${body}</body></html>`;
}

/** A page of the console: the side navigation (what the role may see), the operator, the content. */
export function page(title: string, frame: Frame, content: string): string {
  const nav = NAV.filter((n) => can(frame.session.role, n.permission))
    .map((n) => `<a href="${n.href}"${n.href === frame.current ? ' aria-current="page"' : ''}>${esc(n.label)}</a>`)
    .join('');
  const notice = frame.notice ? `<p class="notice${frame.notice.bad ? ' bad' : ''}" role="status">${esc(frame.notice.text)}</p>` : '';
  return doc(
    title,
    `<div class="shell"><nav class="side" aria-label="Console"><span class="brand">cardprogram console</span>${nav}</nav><div><div class="bar"><span class="who">${esc(frame.session.email)} · <span class="pill">${esc(frame.session.role)}</span></span>${form(frame, '/console/logout', '', 'Log out', 'secondary')}</div><main id="main"><h1>${esc(title)}</h1>${notice}${content}</main></div></div>`,
  );
}

/** A bare page (login, set-up, errors without a session). */
export function barePage(title: string, content: string): string {
  return doc(title, `<main class="login" id="main"><h1>${esc(title)}</h1>${content}</main>`);
}

/** A POST form carrying the CSRF token; `fields` is HTML of its inputs. */
export function form(
  frame: Pick<Frame, 'csrf'>,
  action: string,
  fields: string,
  button: string,
  kind: 'primary' | 'secondary' | 'danger' = 'primary',
): string {
  return `<form class="inline" method="post" action="${esc(action)}"><input type="hidden" name="csrf" value="${esc(frame.csrf)}">${fields}<button type="submit"${kind === 'primary' ? '' : ` class="${kind}"`}>${esc(button)}</button></form>`;
}

/** A reason field (required or not), labelled. */
export function reasonField(id: string, required: boolean, placeholder = 'Reason'): string {
  return `<label for="${id}">Reason</label><input id="${id}" name="reason" maxlength="200" placeholder="${esc(placeholder)}"${required ? ' required' : ''}>`;
}

export function table(caption: string, head: string[], rows: string[][], numeric: number[] = []): string {
  if (rows.length === 0) return `<p class="muted">${esc(caption)}: none.</p>`;
  const th = head.map((h, i) => `<th scope="col"${numeric.includes(i) ? ' class="num"' : ''}>${esc(h)}</th>`).join('');
  const body = rows
    .map((r) => `<tr>${r.map((c, i) => `<td${numeric.includes(i) ? ' class="num"' : ''}>${c}</td>`).join('')}</tr>`)
    .join('');
  return `<div class="table-wrap"><table><caption>${esc(caption)}</caption><thead><tr>${th}</tr></thead><tbody>${body}</tbody></table></div>`;
}

export function kv(pairs: Array<[string, string]>): string {
  return `<dl class="kv">${pairs.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${v}</dd>`).join('')}</dl>`;
}

export const when = (ms: number | string | null | undefined) =>
  ms === null || ms === undefined ? '—' : esc(new Date(Number(ms)).toISOString().replace('T', ' ').slice(0, 19));

export const link = (href: string, text: string) => `<a href="${esc(href)}">${esc(text)}</a>`;

export function pill(text: string, tone: 'good' | 'bad' | 'warn' | '' = ''): string {
  return `<span class="pill${tone ? ` ${tone}` : ''}">${esc(text)}</span>`;
}

/** Authorizations per hour as stacked bars (inline SVG: no script, no image request). */
export function hourChart(hours: Array<{ approved: number; declined: number }>): string {
  const max = Math.max(1, ...hours.map((h) => h.approved + h.declined));
  const W = 720;
  const H = 160;
  const bw = W / 24;
  const bars = hours
    .map((h, i) => {
      const a = (h.approved / max) * (H - 20);
      const d = (h.declined / max) * (H - 20);
      const x = i * bw + 3;
      return `<g><title>${String(i).padStart(2, '0')}:00 UTC: ${h.approved} approved, ${h.declined} declined</title><rect x="${x}" y="${H - 16 - a}" width="${bw - 6}" height="${a}" fill="#2563eb"/><rect x="${x}" y="${H - 16 - a - d}" width="${bw - 6}" height="${d}" fill="#dc2626"/>${i % 3 === 0 ? `<text x="${x}" y="${H - 2}">${String(i).padStart(2, '0')}h</text>` : ''}</g>`;
    })
    .join('');
  const total = hours.reduce((s, h) => s + h.approved + h.declined, 0);
  return `<figure class="panel"><figcaption><b>Authorizations per hour (UTC)</b> <span class="muted">${total} today, highest hour ${max === 1 && total === 0 ? 0 : max}</span></figcaption><svg class="chart" role="img" aria-label="Authorizations per hour today: ${total} in all" viewBox="0 0 ${W} ${H}" width="100%" preserveAspectRatio="none">${bars}</svg><div class="legend"><span><i class="sw ok"></i>approved</span><span><i class="sw no"></i>declined</span></div></figure>`;
}

/** Horizontal bars for a few labelled counts (decline reasons). */
export function barList(title: string, items: Array<{ label: string; n: number }>): string {
  if (items.length === 0) return '';
  const max = Math.max(...items.map((i) => i.n));
  const rows = items
    .map((it, i) => {
      const w = Math.max(2, (it.n / max) * 300);
      return `<text x="0" y="${i * 24 + 15}">${esc(it.label)}</text><rect x="220" y="${i * 24 + 4}" width="${w}" height="14" fill="#dc2626"/><text x="${226 + w}" y="${i * 24 + 15}">${it.n}</text>`;
    })
    .join('');
  return `<figure class="panel"><figcaption><b>${esc(title)}</b></figcaption><svg class="chart" role="img" aria-label="${esc(title)}" viewBox="0 0 600 ${items.length * 24 + 6}" width="600">${rows}</svg></figure>`;
}
