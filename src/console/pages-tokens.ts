import type { Token } from '../tokens/schemas.js';
import { can } from './roles.js';
import { esc, type Frame, form, pill, reasonField, table } from './view.js';

/** A card's wallet tokens on its console page (decisions §15.6), and the actions a role may take on them. */

const WALLET_WORDS: Record<string, string> = {
  apple_pay: 'Apple Pay',
  google_pay: 'Google Pay',
  samsung_pay: 'Samsung Pay',
  card_on_file: 'Card on file',
};

const TONE: Record<string, 'good' | 'warn' | 'bad'> = { active: 'good', pending: 'warn', suspended: 'bad', deleted: 'bad' };

const iso = (at: string) => `<time datetime="${esc(at)}">${esc(at.replace('T', ' ').slice(0, 19))} UTC</time>`;

/** The token's device in words: its name and kind, as the TSP gave them. */
function device(t: Token): string {
  const parts = [t.device.name, t.device.type].filter((p): p is string => p !== null);
  return parts.length === 0 ? '<span class="muted">none given</span>' : esc(parts.join(' · '));
}

/** The status, and while suspended who suspended it (the last change's source). */
function status(t: Token): string {
  const last = t.history.at(-1);
  const by = t.status === 'suspended' && last ? ` <span class="muted">by the ${esc(last.source)}</span>` : '';
  return `${pill(t.status, TONE[t.status] ?? 'warn')}${by}`;
}

/** Each change of the token's status, oldest first. */
function history(t: Token): string {
  return `<details><summary>${t.history.length} change${t.history.length === 1 ? '' : 's'}</summary><ol class="history">${t.history
    .map(
      (h) =>
        `<li>${iso(h.at)} ${pill(h.status, TONE[h.status] ?? 'warn')} <span class="muted">by the ${esc(h.source)}</span>${h.reason ? `: ${esc(h.reason)}` : ''}</li>`,
    )
    .join('')}</ol></details>`;
}

/** What an operator with the right may do to a token in its status: suspend an active one, resume a suspended one, delete any but a deleted one. */
function actions(frame: Frame, t: Token): string {
  if (!can(frame.session.role, 'tokens') || t.status === 'deleted') return '';
  const base = `/console/tokens/${encodeURIComponent(t.tokenId)}`;
  const id = esc(t.tokenId);
  const suspend = t.status === 'active' ? form(frame, `${base}/suspend`, reasonField(`suspend-${id}`, false), 'Suspend', 'secondary') : '';
  const resume = t.status === 'suspended' ? form(frame, `${base}/resume`, reasonField(`resume-${id}`, false), 'Resume') : '';
  const remove = form(
    frame,
    `${base}/delete`,
    `${reasonField(`delete-${id}`, false)}<label for="confirm-${id}">Type the token id to confirm</label><input id="confirm-${id}" name="confirm" required autocomplete="off">`,
    'Delete for good',
    'danger',
  );
  return `${suspend}${resume}${remove}`;
}

export function tokensSection(frame: Frame, tokens: Token[], total: number): string {
  if (tokens.length === 0) return '<h2>Wallet tokens</h2><p class="muted">No wallet tokens (Apple Pay, Google Pay, cards on file).</p>';
  const rows = tokens.map((t) => [
    `<code>${esc(t.tokenId)}</code>`,
    esc(WALLET_WORDS[t.walletProvider] ?? t.walletProvider),
    esc(t.tokenRequestorName),
    t.tokenLast4 ? `<code>${esc(t.tokenLast4)}</code>` : '—',
    device(t),
    status(t),
    iso(t.createdAt),
    history(t),
    actions(frame, t),
  ]);
  const caption = total > tokens.length ? `The newest ${tokens.length} of ${total} tokens` : 'Its tokens, newest first';
  const note = can(frame.session.role, 'tokens')
    ? '<p class="muted">A change is told to the token service and to the merchant (token.updated), and recorded in the audit trail. A token the card’s freeze suspended is resumed by its unfreeze; one you suspend stays suspended until resumed here or by the merchant.</p>'
    : '';
  return `<h2>Wallet tokens</h2>${note}${table(caption, ['Token', 'Wallet', 'Requestor', 'Last 4', 'Device', 'Status', 'Created', 'History', ''], rows)}`;
}
