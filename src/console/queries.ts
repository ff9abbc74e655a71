import { type ExpressionBuilder, type Kysely, sql } from 'kysely';
import { openPayload } from '../callbacks/outbox.js';
import { shownPayload } from '../callbacks/shown-payload.js';
import { settlement } from '../card-network/settlement.js';
import { maskedCardNo } from '../cards/model.js';
import type { Services } from '../context.js';
import type { DB } from '../db/schema.js';
import { documentHash, emailHash, openIdentity } from '../holders/identity.js';
import { kycEmail } from '../kyc/email.js';
import type { KycData } from '../kyc/submit.js';
import { openExceptions } from '../ledger/exceptions-query.js';
import { tokenById, tokenByReference } from '../tokens/store.js';
import { locateTrade } from '../trades/card-history.js';
import { forcedPostsSince } from '../trades/network-reads.js';
import { openDisputes } from './queries-disputes.js';

/**
 * What the console's pages read. Reads only (no transaction of their own): every change goes
 * through a verb with its audit record (src/console/routes.ts).
 */

const DAY_MS = 86_400_000;
const count = (eb: ExpressionBuilder<any, any>) => eb.fn.countAll<number>().as('n');
export const startOfDay = (now: number) => now - (now % DAY_MS);

export interface Overview {
  day: string;
  approved: number;
  declined: number;
  /** Approved volume per currency, minor units. */
  volume: Array<{ currency: string; amount: number }>;
  /** Authorizations per UTC hour of the day, approved and declined. */
  hours: Array<{ approved: number; declined: number }>;
  declineReasons: Array<{ reason: string; n: number }>;
  callbacksFailed: number;
  callbacksRetrying: number;
  holdersWaiting: number;
  kycWaiting: number;
  /** Disputes open (unsubmitted before their deadline, or submitted). */
  disputesOpen: number;
}

/** Today's counts (UTC), each one grouped query on an indexed time column. */
export async function overview(db: Kysely<DB>, now: number): Promise<Overview> {
  const since = startOfDay(now);
  const day = new Date(since).toISOString().slice(0, 10);
  // Counted by business day (the network's day of the authorization), charted by the hour it was recorded.
  const today = db.selectFrom('authorizations').where('business_date', '=', day);
  const [byDecision, hourly, reasons, callbacks, holders, kyc, disputesOpen] = await Promise.all([
    today
      .select(['approved', 'currency', count, (eb) => eb.fn.sum<number>('amount').as('amount')])
      .groupBy(['approved', 'currency'])
      .execute(),
    db
      .selectFrom('authorizations')
      // Literals, not parameters: PostgreSQL types the expression (and groups by it) before it sees values.
      .select([sql<number>`cast((created_at - ${sql.lit(since)}) / 3600000 as integer)`.as('hour'), 'approved', count])
      .where('business_date', '=', day)
      .where('created_at', '>=', since)
      .groupBy(['hour', 'approved'])
      .execute(),
    today.select(['decline_reason', count]).where('approved', '=', 0).groupBy('decline_reason').execute(),
    db
      .selectFrom('callback_events')
      .select([
        sql<number>`sum(case when status = 'failed' then 1 else 0 end)`.as('failed'),
        sql<number>`sum(case when status = 'pending' and attempts > 0 then 1 else 0 end)`.as('retrying'),
      ])
      .where('status', 'in', ['failed', 'pending'])
      .executeTakeFirst(),
    db.selectFrom('cardholders').select(count).where('audit_status', 'in', [0, 1]).executeTakeFirst(),
    db.selectFrom('kyc_requests').select(count).where('status', 'in', ['init', 'reviewing']).executeTakeFirst(),
    openDisputes(db, now),
  ]);
  const volume = new Map<string, number>();
  let approved = 0;
  let declined = 0;
  for (const r of byDecision) {
    if (Number(r.approved) === 1) {
      approved += Number(r.n);
      volume.set(r.currency, (volume.get(r.currency) ?? 0) + Number(r.amount ?? 0));
    } else declined += Number(r.n);
  }
  const hours = Array.from({ length: 24 }, () => ({ approved: 0, declined: 0 }));
  for (const r of hourly) {
    const slot = hours[Math.min(23, Math.max(0, Number(r.hour)))];
    if (slot) slot[Number(r.approved) === 1 ? 'approved' : 'declined'] += Number(r.n);
  }
  return {
    day,
    approved,
    declined,
    volume: [...volume].map(([currency, amount]) => ({ currency, amount })).sort((a, b) => a.currency.localeCompare(b.currency)),
    hours,
    declineReasons: reasons.map((r) => ({ reason: r.decline_reason ?? 'unknown', n: Number(r.n) })).sort((a, b) => b.n - a.n),
    callbacksFailed: Number(callbacks?.failed ?? 0),
    callbacksRetrying: Number(callbacks?.retrying ?? 0),
    holdersWaiting: Number(holders?.n ?? 0),
    kycWaiting: Number(kyc?.n ?? 0),
    disputesOpen,
  };
}

/** The card network link on the overview, from the database (every instance's): today's forced posts, the cards in debt, per currency, and the day's settlement. */
export async function networkOverview(db: Kysely<DB>, now: number) {
  const day = new Date(startOfDay(now)).toISOString().slice(0, 10);
  const [forced, debt, settled] = await Promise.all([
    forcedPostsSince(db, startOfDay(now)),
    db
      .selectFrom('cards')
      .select(['currency', count, (eb) => eb.fn.sum<number>('debt').as('amount')])
      // The partial index's predicate, word for word (migration 2026_11_25_0024).
      .where(sql<boolean>`debt > 0`)
      .groupBy('currency')
      .execute(),
    // The day's clearing and settlement with the network, as `cardprogram network settlement` gives it.
    settlement(db, day),
  ]);
  return {
    forced,
    exceptions: (await openExceptions(db)).byCurrency,
    debt: debt
      .map((r) => ({ currency: r.currency, cards: Number(r.n), amount: Number(r.amount ?? 0) }))
      .sort((a, b) => a.currency.localeCompare(b.currency)),
    settlement: settled,
  };
}
export type NetworkOverview = Awaited<ReturnType<typeof networkOverview>>;

/** The review queues, oldest first: cardholders pending or under review, KYC requests not decided. */
export async function reviewQueues(db: Kysely<DB>, limit = 100) {
  const [holders, kyc] = await Promise.all([
    db
      .selectFrom('cardholders')
      .select(['id', 'merchant_id', 'first_name', 'last_name', 'country_code', 'audit_status', 'created_at'])
      .where('audit_status', 'in', [0, 1])
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute(),
    db
      .selectFrom('kyc_requests')
      .select(['id', 'merchant_id', 'request_no', 'platform', 'status', 'created_at'])
      .where('status', 'in', ['init', 'reviewing'])
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute(),
  ]);
  return { holders, kyc };
}

/** A cardholder with its identity opened (the caller records the view), its reviews and cards. */
export async function holderDetail(svc: Services, holderId: string) {
  return svc.database.read(async (db) => {
    const row = await db.selectFrom('cardholders').selectAll().where('id', '=', holderId).executeTakeFirst();
    if (!row) return null;
    const [reviews, cards] = await Promise.all([
      db.selectFrom('holder_reviews').selectAll().where('holder_id', '=', holderId).orderBy('created_at', 'desc').limit(50).execute(),
      db.selectFrom('cards').selectAll().where('holder_id', '=', holderId).orderBy('created_at').execute(),
    ]);
    return { row, identity: openIdentity(svc.box, row), reviews, cards };
  });
}

/** A payload as the callback page shows it: as the CLI's list does (src/callbacks/shown-payload.ts), as text. */
function shownText(payload: string): string {
  const shown = shownPayload(payload);
  return typeof shown === 'string' ? shown : JSON.stringify(shown);
}

/** A KYC request with its submitted data opened (the caller records the view). */
export async function kycDetail(svc: Services, kycId: string) {
  const row = await svc.database.read((db) => db.selectFrom('kyc_requests').selectAll().where('id', '=', kycId).executeTakeFirst());
  if (!row) return null;
  return { row, email: kycEmail(svc.box, row), data: JSON.parse(svc.box.open(row.data_enc, `kyc:${row.id}`)) as KycData };
}

export interface SearchHit {
  kind: 'cardholder' | 'card' | 'transaction' | 'declined authorization' | 'KYC request' | 'merchant' | 'wallet token';
  id: string;
  href: string;
  label: string;
}

const SEARCH_LIMIT = 50;

/**
 * Finds what an operator types: any id; a cardholder's e-mail (by its keyed hash, as e-mails are
 * sealed) or name; a card's BIN and last four ("489537 1234", "489537…1234"); a KYC request number.
 */
export async function search(svc: Services, text: string): Promise<SearchHit[]> {
  const q = text.trim().normalize('NFC');
  if (!q || q.length > 200) return [];
  return svc.database.read(async (db) => {
    const hits: SearchHit[] = [];
    const holderHit = (r: { id: string; first_name: string; last_name: string; merchant_id: string }): SearchHit => ({
      kind: 'cardholder',
      id: r.id,
      href: `/console/holders/${r.id}`,
      label: `${r.first_name} ${r.last_name} · ${r.merchant_id}`,
    });
    const kycHit = (k: { id: string; request_no: string; merchant_id: string; status: string }): SearchHit => ({
      kind: 'KYC request',
      id: k.id,
      href: `/console/kyc/${k.id}`,
      label: `${k.request_no} · ${k.merchant_id} · ${k.status}`,
    });
    const cardHit = (r: {
      id: string;
      pan_first6: string;
      pan_last4: string;
      pan_length: number;
      currency: string;
      status: string;
    }): SearchHit => ({
      kind: 'card',
      id: r.id,
      href: `/console/cards/${r.id}`,
      label: `${maskedCardNo(r)} · ${r.currency} · ${r.status}`,
    });
    const holderCols = ['id', 'first_name', 'last_name', 'merchant_id'] as const;
    const cardCols = ['id', 'pan_first6', 'pan_last4', 'pan_length', 'currency', 'status'] as const;
    if (/^[A-Za-z0-9_-]{1,64}$/.test(q)) {
      const [holder, card, trade, declined, kyc, merchant, token] = await Promise.all([
        db.selectFrom('cardholders').select(holderCols).where('id', '=', q).executeTakeFirst(),
        db.selectFrom('cards').select(cardCols).where('id', '=', q).executeTakeFirst(),
        locateTrade(db, q),
        db.selectFrom('authorizations').select(['id', 'card_id', 'approved']).where('id', '=', q).executeTakeFirst(),
        db
          .selectFrom('kyc_requests')
          .select(['id', 'request_no', 'merchant_id', 'status'])
          .where((eb) => eb.or([eb('id', '=', q), eb('request_no', '=', q)]))
          .limit(SEARCH_LIMIT)
          .execute(),
        db.selectFrom('merchants').select(['id', 'name']).where('id', '=', q).executeTakeFirst(),
        // A wallet token by the service's id or the TSP's (what the scheme quotes to a support desk): its card's page.
        tokenById(db, q).then((t) => t ?? tokenByReference(db, q)),
      ]);
      if (token) {
        hits.push({
          kind: 'wallet token',
          id: token.id,
          href: `/console/cards/${token.card_id}`,
          label: `${token.wallet_provider} · ${token.status}, on card ${token.card_id}`,
        });
      }
      if (holder) hits.push(holderHit(holder));
      if (card) hits.push(cardHit(card));
      if (trade) {
        // The card's page, its transactions shown for the 30 days up to the transaction's day (it is on the first page or near it).
        const to = trade.business_date;
        const from = new Date(Date.parse(`${to}T00:00:00Z`) - 29 * DAY_MS).toISOString().slice(0, 10);
        hits.push({
          kind: 'transaction',
          id: trade.id,
          href: `/console/cards/${trade.card_id}?from=${from}&to=${to}`,
          label: `${to}, on card ${trade.card_id}`,
        });
      }
      if (declined && !trade) {
        hits.push({
          kind: 'declined authorization',
          id: declined.id,
          href: `/console/cards/${declined.card_id}`,
          label: `on card ${declined.card_id}`,
        });
      }
      hits.push(...kyc.map(kycHit));
      if (merchant) hits.push({ kind: 'merchant', id: merchant.id, href: `/console/merchants/${merchant.id}`, label: merchant.name });
    }
    const digits = q.replace(/[\s-]/g, '');
    if (/^\d{13,19}$/.test(digits)) {
      // A full card number: found by its keyed hash, as the API's cardNo is (never compared in clear).
      const hash = await svc.vault.hash(db, digits);
      hits.push(...(await db.selectFrom('cards').select(cardCols).where('pan_hash', '=', hash).limit(SEARCH_LIMIT).execute()).map(cardHit));
    }
    if (/^\d{4}$/.test(q)) {
      const cards = await db
        .selectFrom('cards')
        .select(cardCols)
        .where('pan_last4', '=', q)
        .orderBy('created_at', 'desc')
        .limit(SEARCH_LIMIT)
        .execute();
      hits.push(...cards.map(cardHit));
    }
    if (/^[A-Za-z0-9][A-Za-z0-9 -]{2,39}$/.test(q) && /\d/.test(q)) {
      // A document number: by its keyed hash, as the one-holder-per-document rule finds it.
      const key = await documentHash(svc.vault, db, q);
      const holders = await db.selectFrom('cardholders').select(holderCols).where('idno_key', '=', key).limit(SEARCH_LIMIT).execute();
      for (const h of holders) if (!hits.some((x) => x.id === h.id)) hits.push(holderHit(h));
    }
    const binLast4 = /^(\d{6})\s*(?:[*x•.…\s-]*)\s*(\d{4})$/i.exec(q);
    if (binLast4 && !/^\d{13,19}$/.test(digits)) {
      const cards = await db
        .selectFrom('cards')
        .select(cardCols)
        .where('pan_first6', '=', binLast4[1] as string)
        .where('pan_last4', '=', binLast4[2] as string)
        .limit(SEARCH_LIMIT)
        .execute();
      hits.push(...cards.map(cardHit));
    }
    if (q.includes('@')) {
      const hash = await emailHash(svc.vault, db, q);
      const holders = await db.selectFrom('cardholders').select(holderCols).where('email_hash', '=', hash).limit(SEARCH_LIMIT).execute();
      hits.push(...holders.map(holderHit));
      const kyc = await db
        .selectFrom('kyc_requests')
        .select(['id', 'request_no', 'merchant_id', 'status'])
        // Sealed, found by the same keyed hash (kyc/email.ts).
        .where('email_hash', '=', hash)
        .limit(SEARCH_LIMIT)
        .execute();
      hits.push(...kyc.map(kycHit));
    } else if (/\p{L}/u.test(q) && !binLast4) {
      // Names are kept plain for this (src/holders/identity.ts): a case-insensitive match on the full name.
      const like = `%${q.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      const holders = await db
        .selectFrom('cardholders')
        .select(holderCols)
        .where(sql<boolean>`lower(first_name || ' ' || last_name) like ${like} escape '\\'`)
        .orderBy('created_at', 'desc')
        .limit(SEARCH_LIMIT)
        .execute();
      for (const h of holders) if (!hits.some((x) => x.id === h.id)) hits.push(holderHit(h));
    }
    return hits;
  });
}

/** Callback events that are failed or still pending after an attempt, per merchant, newest first. */
export async function troubledCallbacks(
  db: Kysely<DB>,
  filter: { merchantId?: string | undefined; status?: 'failed' | 'pending' | undefined },
) {
  let q = db
    .selectFrom('callback_events')
    .select(['id', 'merchant_id', 'type', 'url', 'status', 'attempts', 'next_attempt_at', 'last_error', 'created_at'])
    .orderBy('created_at', 'desc')
    .limit(200);
  q = filter.status ? q.where('status', '=', filter.status) : q.where('status', 'in', ['failed', 'pending']);
  if (filter.merchantId) q = q.where('merchant_id', '=', filter.merchantId);
  return q.execute();
}

export async function callbackDetail(svc: Services, eventId: string) {
  return svc.database.read(async (db) => {
    const stored = await db.selectFrom('callback_events').selectAll().where('id', '=', eventId).executeTakeFirst();
    if (!stored) return null;
    const event = { ...stored, payload: shownText(openPayload(svc.box, stored)) };
    const attempts = await db
      .selectFrom('callback_attempts')
      .selectAll()
      .where('event_id', '=', eventId)
      .orderBy('attempt', 'desc')
      .limit(100)
      .execute();
    return { event, attempts };
  });
}
