import type { Kysely } from 'kysely';
import type { DB, DisputeStatus } from '../db/schema.js';
import { exponent } from '../money/currency.js';
import { cardRootTrades, type HistoryCursor, tradesFollowing } from '../trades/card-history.js';
import { forcedAmong } from '../trades/network-reads.js';
import type { AuthorizationRow, TradeRow } from '../trades/record.js';
import { DeclineReason, type DeclineReasonValue, TradeStatus, TradeType } from '../trades/types.js';

/**
 * A card's activity as the cardholder reads it on the card page (docs/login-free-page.md): one line
 * per purchase, whatever records the network sent for it (its hold, payment, reversals, void,
 * refunds), "Pending" while held and "Posted" once cleared; declined purchases with their reason in
 * words; every other record (top-ups, withdrawals, transfers, adjustments, fees) one line each.
 * The merchant's 4.1 list is not this: it lists records, as the interface says.
 *
 * Paging is by position, not offset (flat cost whatever the card's history): a line is keyed by its
 * business date and then its order of writing, and a page continues from the last line shown of
 * each of the two sources (records, declines), so a purchase's parts never split across pages.
 */

/** Lines per page. */
export const ACTIVITY_PAGE = 10;

export type LineState = 'Pending' | 'Posted' | 'Reversed' | 'Cancelled' | 'Refunded' | 'Declined';

export interface ActivityLine {
  date: string;
  title: string;
  /** What kind of line: "Card payment", "Top-up", … */
  kind: string;
  state: LineState;
  /** What it did to the balance, in minor units: negative out, positive in; null when nothing moved (declined, cancelled). */
  amount: number | null;
  /** The amount asked for, shown on a declined or cancelled line (minor units). */
  asked: number;
  currency: string;
  /** Further facts in words ("Refunded 2.50 EUR", "Includes a 0.20 EUR fee", a decline's reason). */
  notes: string[];
  /** A purchase's id (its authorization's): what "I don't recognise this" names. */
  purchaseId?: string;
  /** A cleared purchase not refunded in full: it may be disputed (docs/disputes.md). */
  disputable?: boolean;
  /** Its newest dispute's status, if any (an unsubmitted one past its deadline reads expired). */
  dispute?: DisputeStatus;
}

/** Where the next page starts: after this record (business date, seq) and this decline (business date, created_at, id). */
export interface ActivityCursor {
  trade: HistoryCursor | null;
  decline: { date: string; at: number; id: string } | null;
}

export interface ActivityPage {
  lines: ActivityLine[];
  /** The next (older) page's cursor; null on the last page. */
  older: ActivityCursor | null;
}

/** A cursor in a URL: `T<date>.<seq>` and/or `D<date>.<at>.<id>`, joined by `~`; null when malformed. */
export function parseCursor(text: string): ActivityCursor | null {
  if (text.length > 200) return null;
  const cursor: ActivityCursor = { trade: null, decline: null };
  for (const part of text.split('~')) {
    const t = /^T(\d{4}-\d\d-\d\d)\.(\d{1,15})$/.exec(part);
    const d = /^D(\d{4}-\d\d-\d\d)\.(\d{1,15})\.(dcl_[A-Za-z0-9]{1,40})$/.exec(part);
    if (t?.[1] && t[2]) cursor.trade = { date: t[1], seq: Number(t[2]) };
    else if (d?.[1] && d[2] && d[3]) cursor.decline = { date: d[1], at: Number(d[2]), id: d[3] };
    else return null;
  }
  return cursor;
}

export function formatCursor(c: ActivityCursor): string {
  return [c.trade ? `T${c.trade.date}.${c.trade.seq}` : '', c.decline ? `D${c.decline.date}.${c.decline.at}.${c.decline.id}` : '']
    .filter(Boolean)
    .join('~');
}

/** Money for people: the currency's own decimals and its code. */
export function formatMoney(minor: number, currency: string): string {
  const e = exponent(currency);
  return `${(Math.abs(minor) / 10 ** e).toFixed(e)} ${currency}`;
}

const DECLINE_WORDS: Record<DeclineReasonValue, string> = {
  [DeclineReason.cardInactive]: 'the card was frozen or closed',
  [DeclineReason.insufficientFunds]: 'not enough money on the card',
  [DeclineReason.spendingLimit]: 'over a spending limit of the card',
  [DeclineReason.mccNotAllowed]: 'this kind of shop is not allowed for the card',
  [DeclineReason.mccBlocked]: 'this kind of shop is blocked for the card',
  [DeclineReason.countryNotAllowed]: 'purchases in this country are not allowed for the card',
  [DeclineReason.countryBlocked]: 'purchases in this country are blocked for the card',
  [DeclineReason.channelNotAllowed]: 'this way of paying is not allowed for the card',
  [DeclineReason.merchantDeclined]: 'declined by your card provider',
  [DeclineReason.merchantTimeout]: 'your card provider did not answer in time',
  [DeclineReason.merchantError]: 'your card provider could not be reached',
  [DeclineReason.cvv2Mismatch]: 'the security code (CVV2) entered was not the card’s',
  [DeclineReason.expiryMismatch]: 'the expiry date entered was not the card’s',
  [DeclineReason.cardVerificationMissing]: 'the card’s security code (CVV2) was not given',
  [DeclineReason.authenticationFailed]: 'the online purchase’s verification (3-D Secure) did not match it',
  [DeclineReason.authenticationRequired]: 'the shop did not verify the purchase with you (3-D Secure)',
  [DeclineReason.tokenUnknown]: 'the phone wallet or saved card used is not known for this card',
  [DeclineReason.tokenInactive]: 'the card in this phone wallet or saved at this shop is suspended or removed',
  [DeclineReason.walletNotAllowed]: 'this phone wallet or saved card is not allowed for the card',
};

export function declineWords(reason: string | null): string {
  return (reason !== null && DECLINE_WORDS[reason as DeclineReasonValue]) || 'declined';
}

const KIND: Record<number, string> = {
  [TradeType.authorization]: 'Card payment',
  [TradeType.payment]: 'Card payment',
  [TradeType.topUp]: 'Top-up',
  [TradeType.withdrawal]: 'Cash withdrawal',
  [TradeType.transferIn]: 'Transfer in',
  [TradeType.transferOut]: 'Transfer out',
  [TradeType.settlementAdjustment]: 'Adjustment',
  [TradeType.fee]: 'Fee',
};
/** Records whose amount leaves the card (the rest arrive), besides a debit adjustment's negative amount. */
const OUT: ReadonlySet<number> = new Set([TradeType.withdrawal, TradeType.transferOut, TradeType.fee]);

/** One purchase: its hold (150) and what the network sent for it since. */
function purchaseLine(auth: TradeRow, parts: TradeRow[], acceptor: AuthorizationRow | undefined, forced: Set<string>): ActivityLine {
  const c = auth.currency;
  const payments = parts.filter((p) => p.trade_type === TradeType.payment && p.original_id === auth.id);
  const paymentIds = new Set(payments.map((p) => p.id));
  const posted = payments.filter((p) => p.trade_status === TradeStatus.success).reduce((s, p) => s + Number(p.amount), 0);
  const refunds = parts.filter((p) => p.trade_status === TradeStatus.refund && p.original_id !== null && paymentIds.has(p.original_id));
  const refunded = refunds.reduce((s, p) => s + Number(p.amount), 0);
  const reversed = parts
    .filter((p) => p.trade_type === TradeType.authorization && p.trade_status === TradeStatus.reversal)
    .reduce((s, p) => s + Number(p.amount), 0);
  const held = Number(auth.held);
  // The authorization's fee is charged with the hold and returned when it is reversed in full.
  const fee = auth.trade_status === TradeStatus.reversed || auth.trade_status === TradeStatus.voided ? 0 : Number(auth.fee);
  const notes: string[] = [];
  let state: LineState;
  let amount: number | null;
  if (auth.trade_status === TradeStatus.voided || (posted === 0 && held === 0 && payments.length > 0)) {
    state = 'Cancelled';
    amount = null;
  } else if (auth.trade_status === TradeStatus.reversed && posted === 0) {
    state = 'Reversed';
    amount = null;
  } else if (posted > 0) {
    state = refunded >= posted ? 'Refunded' : 'Posted';
    amount = -(posted + fee) + refunded;
    if (posted + held < Number(auth.amount)) notes.push(`${formatMoney(Number(auth.amount) - posted - held, c)} of the hold released`);
  } else {
    state = 'Pending';
    amount = -(held + fee);
    if (reversed > 0) notes.push(`${formatMoney(reversed, c)} of the hold released`);
  }
  // Each clearing named when there are several or one was forced (issue 43): "charged three times"
  // reads as what the network sent, the hold once, never as a charge of its own.
  const cleared = payments.filter((p) => p.trade_status === TradeStatus.success);
  if (cleared.length > 1 || cleared.some((p) => forced.has(p.id)))
    for (const [i, p] of cleared.entries())
      notes.push(
        `Cleared ${i + 1} of ${cleared.length}: ${formatMoney(Number(p.amount), c)} on ${p.business_date}${forced.has(p.id) ? ' (a forced post: the card network cleared it again, with nothing left on hold)' : ''}`,
      );
  if (forced.has(auth.id)) notes.push('Approved by the card network on the card’s behalf (a forced post)');
  for (const r of refunds) notes.push(`Refunded ${formatMoney(Number(r.amount), c)} on ${r.business_date}`);
  if (fee > 0 && amount !== null) notes.push(`Includes a ${formatMoney(fee, c)} fee`);
  const title = acceptor?.merchant_name ?? (auth.remark || 'Card payment');
  const place = [acceptor?.merchant_city, acceptor?.merchant_country].filter(Boolean).join(', ');
  if (place) notes.unshift(place);
  return {
    date: auth.business_date,
    title,
    kind: KIND[TradeType.authorization] ?? '',
    state,
    amount,
    asked: Number(auth.amount),
    currency: c,
    notes,
    purchaseId: auth.id,
    disputable: state === 'Posted',
  };
}

function recordLine(t: TradeRow, forced: Set<string>): ActivityLine {
  const refund = t.trade_type === TradeType.payment && t.trade_status === TradeStatus.refund;
  const kind = refund ? 'Refund' : (KIND[t.trade_type] ?? String(t.trade_type));
  const a = Number(t.amount);
  const fee = Number(t.fee);
  // What reached or left the balance, its fee folded in (a top-up's fee is taken from what arrives);
  // a debit adjustment is recorded with a negative amount, the others positive.
  const out = OUT.has(t.trade_type) || (t.trade_type === TradeType.payment && !refund);
  const amount = out ? -(Math.abs(a) + fee) : a - fee;
  const notes = fee > 0 ? [`Includes a ${formatMoney(fee, t.currency)} fee`] : [];
  // A payment or refund standing alone: the network posted it with no original (a forced post).
  if (forced.has(t.id))
    notes.push(
      refund ? 'A forced post: returned by the card network' : 'A forced post: the card network charged it without an authorization',
    );
  return { date: t.business_date, title: t.remark || kind, kind, state: 'Posted', amount, asked: Math.abs(a), currency: t.currency, notes };
}

function declineLine(d: AuthorizationRow): ActivityLine {
  return {
    date: d.business_date,
    title: d.merchant_name ?? (d.remark || 'Card payment'),
    kind: 'Card payment',
    state: 'Declined',
    amount: null,
    asked: Number(d.amount),
    currency: d.currency,
    notes: [`Declined: ${declineWords(d.decline_reason)}`],
  };
}

/** A page of a card's activity, newest first, from `cursor` (null: the newest). */
export async function cardActivity(db: Kysely<DB>, cardId: string, cursor: ActivityCursor | null, now = Date.now()): Promise<ActivityPage> {
  const n = ACTIVITY_PAGE + 1;
  let declines = db.selectFrom('authorizations').selectAll().where('card_id', '=', cardId).where('approved', '=', 0);
  const dc = cursor?.decline;
  if (dc) {
    declines = declines.where((eb) => eb(eb.refTuple('business_date', 'created_at', 'id'), '<', eb.tuple(dc.date, dc.at, dc.id)));
  }
  const [trades, declined] = await Promise.all([
    // Lines of their own: every record except a purchase's parts, and balance inquiries.
    cardRootTrades(db, cardId, cursor?.trade ?? null, n),
    declines.orderBy('business_date', 'desc').orderBy('created_at', 'desc').orderBy('id', 'desc').limit(n).execute(),
  ]);

  // Merge the two, newest first (by day, then by when it was written), one page: a two-way merge
  // takes a prefix of each source, so each source's cursor is its last line shown.
  type Entry = { trade?: TradeRow; decline?: AuthorizationRow };
  const page: Entry[] = [];
  let i = 0;
  let j = 0;
  const newer = (t: TradeRow, d: AuthorizationRow) =>
    t.business_date !== d.business_date ? t.business_date > d.business_date : Number(t.created_at) >= Number(d.created_at);
  while (page.length < ACTIVITY_PAGE && (i < trades.length || j < declined.length)) {
    const t = trades[i];
    const d = declined[j];
    if (t && (!d || newer(t, d))) {
      page.push({ trade: t });
      i++;
    } else if (d) {
      page.push({ decline: d });
      j++;
    }
  }
  const more = i < trades.length || j < declined.length;

  // What the network sent for the purchases on this page, and their acceptors.
  const authIds = page.flatMap((e) => (e.trade?.trade_type === TradeType.authorization ? [e.trade.id] : []));
  const parts = await tradesFollowing(db, authIds);
  const paymentIds = parts.filter((p) => p.trade_type === TradeType.payment).map((p) => p.id);
  const paymentParts = await tradesFollowing(db, paymentIds);
  const acceptors = authIds.length ? await db.selectFrom('authorizations').selectAll().where('id', 'in', authIds).execute() : [];
  const acceptorOf = new Map(acceptors.map((a) => [a.id, a]));
  const partsOf = new Map<string, TradeRow[]>();
  const paymentAuth = new Map(parts.filter((p) => p.trade_type === TradeType.payment).map((p) => [p.id, p.original_id as string]));
  for (const p of [...parts, ...paymentParts]) {
    const root = paymentAuth.get(p.original_id as string) ?? (p.original_id as string);
    partsOf.set(root, [...(partsOf.get(root) ?? []), p]);
  }

  const [disputes, forced] = await Promise.all([
    purchaseDisputes(db, paymentAuth, now),
    forcedAmong(db, [...page.flatMap((e) => (e.trade ? [e.trade.id] : [])), ...paymentIds]),
  ]);
  const lines = page.map((e) => {
    if (e.decline) return declineLine(e.decline);
    if (e.trade?.trade_type !== TradeType.authorization) return recordLine(e.trade as TradeRow, forced);
    const l = purchaseLine(e.trade, partsOf.get(e.trade.id) ?? [], acceptorOf.get(e.trade.id), forced);
    const dispute = disputes.get(e.trade.id);
    return dispute ? { ...l, dispute } : l;
  });
  if (!more) return { lines, older: null };
  // Continue after the last line shown of each source (or where that source's cursor was).
  const lastTrade = [...page].reverse().find((e) => e.trade)?.trade;
  const lastDecline = [...page].reverse().find((e) => e.decline)?.decline;
  return {
    lines,
    older: {
      trade: lastTrade ? { date: lastTrade.business_date, seq: Number(lastTrade.seq) } : (cursor?.trade ?? null),
      decline: lastDecline
        ? { date: lastDecline.business_date, at: Number(lastDecline.created_at), id: lastDecline.id }
        : (cursor?.decline ?? null),
    },
  };
}

/** Each purchase's newest dispute's status, found by its clearings (payment id → purchase id). */
async function purchaseDisputes(db: Kysely<DB>, purchaseOf: Map<string, string>, now: number): Promise<Map<string, DisputeStatus>> {
  if (purchaseOf.size === 0) return new Map();
  const rows = await db
    .selectFrom('disputes')
    .select(['trade_id', 'status', 'deadline_at'])
    .where('trade_id', 'in', [...purchaseOf.keys()])
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  const out = new Map<string, DisputeStatus>();
  for (const r of rows) {
    const purchase = purchaseOf.get(r.trade_id);
    if (purchase) out.set(purchase, r.status === 'unsubmitted' && Number(r.deadline_at) <= now ? 'expired' : r.status);
  }
  return out;
}
