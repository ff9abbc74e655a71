import { type Kysely, sql } from 'kysely';
import type { TxCtx } from '../context.js';
import { forUpdate } from '../db/locks.js';
import type { DB } from '../db/schema.js';
import { toMajor, toMinor } from '../money/currency.js';
import { spentOnCards } from '../trades/books.js';
import { TradeStatus, TradeType } from '../trades/types.js';
import { period } from './periods.js';
import type { Controls, SpendInterval, SpendingLimit } from './schemas.js';

/**
 * Spending limits, counted in O(1) per authorization whatever the card's history: one counter per
 * limit (`spend_counters`: owner, limit key, currency → the current interval's start and what was
 * spent in it), read under lock when an authorization is decided and moved in the same transaction
 * as the money. A counter holds, for its interval, the sum over the owner's approved authorizations
 * of what each still takes: the amount, less what reversals released, a clearing of less left
 * unused, or a void gave back (refunds do not give room back); a cash withdrawal counts whole. `spendOfHistory` is that sum
 * computed from the records; a counter is (re)built from it whenever its limit is set, and
 * `ledger check` compares the two.
 *
 * Owners: a card counts its own limits; a cardholder's limits count all of its cards in one currency.
 * Lock order: the card (lockCard), then its counters and its cardholder's, by primary key.
 */

/** A limit's counter key: its interval and its categories (sorted), e.g. `daily|5411,5812`. */
export function limitKey(limit: Pick<SpendingLimit, 'interval' | 'mccs'>): string {
  return `${limit.interval}|${[...(limit.mccs ?? [])].sort().join(',')}`;
}

function parseKey(key: string): { interval: SpendInterval; mccs: string[] | null } {
  const [interval, list] = key.split('|') as [SpendInterval, string];
  return { interval, mccs: list ? list.split(',') : null };
}

/** Does a limit count an authorization with this MCC? One without categories counts every one. */
export function counts(limit: { mccs?: readonly string[] | null | undefined }, mcc: string | null | undefined): boolean {
  return !limit.mccs || (mcc != null && limit.mccs.includes(mcc));
}

export function parseControls(text: string | null | undefined): Controls {
  return text ? (JSON.parse(text) as Controls) : {};
}

/** The limits an owner's counters are kept for: all but per_authorization, which counts nothing. */
const counted = (controls: Controls) => (controls.spendingLimits ?? []).filter((l) => l.interval !== 'per_authorization');

export interface SpendOwners {
  card: { id: string; currency: string; controls: Controls };
  holder: { id: string; controls: Controls };
}

interface CounterRow {
  owner_id: string;
  limit_key: string;
  used: number;
  period_start: number;
}

async function lockCounters(ctx: TxCtx, owners: string[], currency: string, lock = true): Promise<CounterRow[]> {
  if (owners.length === 0) return [];
  const q = ctx.tx
    .selectFrom('spend_counters')
    .select(['owner_id', 'limit_key', 'used', 'period_start'])
    .where('owner_id', 'in', owners)
    .where('currency', '=', currency)
    .orderBy('owner_id')
    .orderBy('limit_key');
  return (await (lock ? forUpdate(ctx.tx, q) : q).execute()).map(counterRow);
}

/** A counter as read: its numbers as numbers (bigint columns). */
const counterRow = (r: CounterRow): CounterRow => ({ ...r, used: Number(r.used), period_start: Number(r.period_start) });

/**
 * The limits that decide a card's spending: the card's own when it sets `spendingLimits`, else its
 * cardholder's ("the card wins"), with whose they are and whose counters hold them.
 */
function effectiveLimits({ card, holder }: SpendOwners): { source: 'card' | 'cardholder'; ownerId: string; limits: SpendingLimit[] } {
  return card.controls.spendingLimits
    ? { source: 'card', ownerId: card.id, limits: card.controls.spendingLimits }
    : { source: 'cardholder', ownerId: holder.id, limits: holder.controls.spendingLimits ?? [] };
}

/** What a counter holds at `at`: its sum if it is of `at`'s interval, else 0 (a new interval began). */
const usedAt = (row: CounterRow | undefined, interval: SpendInterval, at: number) =>
  row && row.period_start === period(interval, at).start ? row.used : 0;

export interface SpendCheck {
  /**
   * The moment the authorization is decided at, and counted in: not before the transaction's start,
   * the clock once the counters are locked, or any counter's interval. Why: a transaction that began
   * before midnight and waited for a lock held by one after it must not count itself in (and write
   * back) an interval that the counter has already left: that erased the new day's spending.
   */
  at: number;
  /** The limit that the authorization would pass, if any, with what it had left. */
  exceeded: { source: 'card' | 'cardholder'; limit: SpendingLimit; remaining: number } | null;
  /** Adds the authorization to every counter that counts it; call once the money has moved. */
  record(): Promise<void>;
}

/**
 * Checks `amount` (minor units, the card's currency) against the effective limits (the card's when it
 * sets `spendingLimits`, else its cardholder's) and prepares the counting. The counters are locked
 * here, so the check holds until the commit.
 */
export async function checkSpend(
  ctx: TxCtx,
  owners: SpendOwners,
  amount: number,
  mcc: string | null | undefined,
  clock: () => number,
  /** false: read the counters without locking them (a check that moves no money: 3-D Secure's, src/three-ds). */
  lock = true,
): Promise<SpendCheck> {
  const { card, holder } = owners;
  const effective = effectiveLimits(owners);
  const tracked = [...(counted(card.controls).length ? [card.id] : []), ...(counted(holder.controls).length ? [holder.id] : [])].sort();
  const rows = await lockCounters(ctx, tracked, card.currency, lock);
  const row = (owner: string, key: string) => rows.find((r) => r.owner_id === owner && r.limit_key === key);
  const at = Math.max(ctx.now, clock(), ...rows.map((r) => r.period_start));

  let exceeded: SpendCheck['exceeded'] = null;
  for (const limit of effective.limits) {
    if (!counts(limit, mcc)) continue;
    const max = toMinor(limit.amount, card.currency, 'spendingLimits.amount');
    const used = limit.interval === 'per_authorization' ? 0 : usedAt(row(effective.ownerId, limitKey(limit)), limit.interval, at);
    if (used + amount > max) {
      exceeded = { source: effective.source, limit, remaining: Math.max(0, max - used) };
      break;
    }
  }
  const record = async () => {
    for (const [ownerId, controls] of [
      [card.id, card.controls],
      [holder.id, holder.controls],
    ] as const) {
      for (const limit of counted(controls)) {
        if (!counts(limit, mcc)) continue;
        const key = limitKey(limit);
        const start = period(limit.interval, at).start;
        const used = usedAt(row(ownerId, key), limit.interval, at) + amount;
        await writeCounter(ctx, { ownerId, key, currency: card.currency, start, used });
      }
    }
  };
  return { at, exceeded, record };
}

async function writeCounter(ctx: TxCtx, c: { ownerId: string; key: string; currency: string; start: number; used: number }) {
  await ctx.tx
    .insertInto('spend_counters')
    .values({ owner_id: c.ownerId, limit_key: c.key, currency: c.currency, period_start: c.start, used: c.used, updated_at: ctx.now })
    .onConflict((oc) =>
      oc.columns(['owner_id', 'limit_key', 'currency']).doUpdateSet({ period_start: c.start, used: c.used, updated_at: ctx.now }),
    )
    .execute();
}

/**
 * Gives room back: `amount` (minor units) of the authorization `authId` no longer counts (a
 * reversal, the unused part of a clearing, a void). Only counters still in the authorization's
 * interval change; an interval that has ended is history. The card is locked by the caller.
 */
export async function releaseSpend(
  ctx: TxCtx,
  card: { id: string; holder_id: string; currency: string },
  authId: string,
  amount: number,
): Promise<void> {
  if (amount <= 0) return;
  await moveSpend(ctx, card, authId, -amount);
}

/**
 * Counts more against the limits for the authorization `authId`: a forced clearing above its hold,
 * or after it was released (decisions §12.7), whose payment the records count as spent. Only
 * counters still in the authorization's interval change, as for releaseSpend. The card is locked by
 * the caller.
 */
export async function addSpend(
  ctx: TxCtx,
  card: { id: string; holder_id: string; currency: string },
  authId: string,
  amount: number,
): Promise<void> {
  if (amount <= 0) return;
  await moveSpend(ctx, card, authId, amount);
}

async function moveSpend(ctx: TxCtx, card: { id: string; holder_id: string; currency: string }, authId: string, delta: number) {
  const rows = await lockCounters(ctx, [card.id, card.holder_id].sort(), card.currency);
  if (rows.length === 0) return;
  const auth = await ctx.tx.selectFrom('authorizations').select(['mcc', 'created_at']).where('id', '=', authId).executeTakeFirst();
  if (!auth) return;
  const at = Number(auth.created_at);
  for (const row of rows) {
    const { interval, mccs } = parseKey(row.limit_key);
    if (!counts({ mccs }, auth.mcc) || row.period_start !== period(interval, at).start) continue;
    await ctx.tx
      .updateTable('spend_counters')
      .set({ used: Math.max(0, row.used + delta), updated_at: ctx.now })
      .where('owner_id', '=', row.owner_id)
      .where('limit_key', '=', row.limit_key)
      .where('currency', '=', card.currency)
      .execute();
  }
}

/**
 * What the records say a set of cards spent from `since` on, in one currency and optionally a set
 * of MCCs: each approved authorization's amount still held plus what it cleared into payments
 * that were not voided (so reversals, the unused part of a clearing and voids are left out). The
 * naive recomputation that a counter is built from and checked against.
 */
export async function spendOfHistory(
  db: Kysely<DB>,
  q: { cardIds: string[]; currency: string; since: number; mccs: string[] | null },
): Promise<number> {
  return spentOnCards(db, q);
}

/**
 * Builds an owner's counters afresh from the records, for the limits it now has: called whenever
 * its limits are set, under the locks of every card it counts (so no authorization is half-counted).
 */
export async function rebuildCounters(
  ctx: TxCtx,
  owner: { id: string; cardIds: string[]; currencies: readonly string[]; controls: Controls },
  clock: () => number,
): Promise<void> {
  // The clock once the cards are locked, not the transaction's start: an authorization that
  // committed meanwhile after midnight is in the new day's history, and so must the counter be.
  const now = Math.max(ctx.now, clock());
  await ctx.tx.deleteFrom('spend_counters').where('owner_id', '=', owner.id).execute();
  // One counter per limit: checkControls refused two limits with one key.
  for (const limit of counted(owner.controls)) {
    const key = limitKey(limit);
    const start = period(limit.interval, now).start;
    for (const currency of owner.currencies) {
      const used = await spendOfHistory(ctx.tx, { cardIds: owner.cardIds, currency, since: start, mccs: limit.mccs ?? null });
      await writeCounter({ ...ctx, now }, { ownerId: owner.id, key, currency, start, used });
    }
  }
}

/** A limit as cardQuery reports it. */
export interface SpendingState {
  source: 'card' | 'cardholder';
  amount: number;
  interval: SpendInterval;
  mccs: string[] | null;
  spent: number;
  remaining: number;
  resetsAt: string | null;
}

/** The card's effective limits with what is spent and left of each now (counters read, not locked). */
export async function spendingState(db: Kysely<DB>, owners: SpendOwners, now: number): Promise<SpendingState[]> {
  const { card } = owners;
  const { source, ownerId, limits } = effectiveLimits(owners);
  if (limits.length === 0) return [];
  const rows = (
    await db
      .selectFrom('spend_counters')
      .select(['owner_id', 'limit_key', 'used', 'period_start'])
      .where('owner_id', '=', ownerId)
      .where('currency', '=', card.currency)
      .execute()
  ).map(counterRow);
  return limits.map((limit) => {
    const max = toMinor(limit.amount, card.currency, 'spendingLimits.amount');
    const r = rows.find((x) => x.limit_key === limitKey(limit));
    const spent = limit.interval === 'per_authorization' ? 0 : usedAt(r, limit.interval, now);
    const end = limit.interval === 'per_authorization' ? null : period(limit.interval, now).end;
    return {
      source,
      amount: limit.amount,
      interval: limit.interval,
      mccs: limit.mccs ? [...limit.mccs] : null,
      spent: toMajor(spent, card.currency),
      remaining: toMajor(Math.max(0, max - spent), card.currency),
      resetsAt: end === null ? null : new Date(end).toISOString(),
    };
  });
}

/**
 * `ledger check`'s look at the spending limits: each counter must hold what the records say its
 * owner spent since the start of its interval (spendOfHistory), else it would let too much through
 * or too little.
 */
export async function counterProblems(db: Kysely<DB>): Promise<string[]> {
  const problems: string[] = [];
  const counters = await db.selectFrom('spend_counters').selectAll().execute();
  for (const c of counters) {
    const cardIds = c.owner_id.startsWith('card_')
      ? [c.owner_id]
      : (await db.selectFrom('cards').select('id').where('holder_id', '=', c.owner_id).execute()).map((r) => r.id);
    const { mccs } = parseKey(c.limit_key);
    const want = await spendOfHistory(db, { cardIds, currency: c.currency, since: Number(c.period_start), mccs });
    if (Number(c.used) !== want) {
      problems.push(`spending counter ${c.owner_id} ${c.limit_key} ${c.currency}: ${Number(c.used)}, the records say ${want}`);
    }
  }
  return problems;
}
