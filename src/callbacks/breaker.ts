import type { Kysely, Selectable } from 'kysely';
import type { CallbackConfig } from '../config.js';
import { forUpdate } from '../db/locks.js';
import type { CallbackEndpointsTable, DB } from '../db/schema.js';

/**
 * A circuit breaker per merchant and endpoint (docs/callbacks.md, "Isolation"), kept in the
 * database so that every worker (threads, `cardprogram worker` processes, other instances) sees
 * the same state:
 *
 * - **closed**: attempts go as the retry schedule says. `failures` counts consecutive attempts
 *   that got no answer at all (timed out, refused, reset, not resolved): an endpoint that answers,
 *   whatever the status, is there, and its failures are the retry schedule's business.
 * - **open**, after `breaker.failures` of them: the endpoint's events are deferred (not claimed, not
 *   attempted, their attempts and schedule untouched) until `open_until`; then one worker takes the
 *   probe and sends one due event. An answer closes the breaker; no answer opens it again for
 *   twice as long (up to `breaker.maxOpenMs`).
 */

export type EndpointRow = Selectable<CallbackEndpointsTable>;

export interface BreakerSettings {
  failures: number;
  openMs: number;
  maxOpenMs: number;
}

export const DEFAULT_BREAKER: BreakerSettings = { failures: 5, openMs: 10_000, maxOpenMs: 600_000 };
export const DEFAULT_SLOTS = 16;

export function breakerSettings(config: CallbackConfig): BreakerSettings {
  const b = config.breaker ?? {};
  return {
    failures: b.failures ?? DEFAULT_BREAKER.failures,
    openMs: b.openMs ?? DEFAULT_BREAKER.openMs,
    maxOpenMs: b.maxOpenMs ?? DEFAULT_BREAKER.maxOpenMs,
  };
}

/** An attempt's outcome as the breaker sees it. */
export interface Observation {
  /** Any HTTP answer (2xx or not). */
  answered: boolean;
  /** The attempt was the open breaker's probe. */
  probe: boolean;
  error: string | null;
}

type State = Omit<EndpointRow, 'merchant_id' | 'endpoint' | 'changed_at'>;

/** An endpoint with no failures counted: where every breaker starts, and what an answer brings it back to. */
export const CLOSED: State = {
  state: 'closed',
  failures: 0,
  trips: 0,
  opened_at: null,
  open_until: null,
  probe_owner: null,
  probe_until: null,
  last_error: null,
};

/** The breaker's next state after one attempt (pure: the tests' and the record's one rule). */
export function observe(state: State, o: Observation, now: number, s: BreakerSettings): State {
  if (o.answered) return CLOSED;
  const next: State = { ...state, failures: state.failures + 1, last_error: o.error };
  if (state.state === 'open') {
    // An attempt sent before the breaker opened only adds to the count; a failed probe backs off.
    if (!o.probe) return next;
    return {
      ...next,
      trips: state.trips + 1,
      open_until: now + Math.min(s.maxOpenMs, s.openMs * 2 ** state.trips),
      probe_owner: null,
      probe_until: null,
    };
  }
  if (next.failures < s.failures) return next;
  return { ...next, state: 'open', trips: 1, opened_at: now, open_until: now + s.openMs, probe_owner: null, probe_until: null };
}

/**
 * Applies one batch's observations of an endpoint, in the record's transaction: one read (locked
 * on PostgreSQL) and at most one write. Returns the state written (null: closed and clean), and
 * whether this batch opened the breaker.
 */
export async function recordObservations(
  tx: Kysely<DB>,
  key: { merchantId: string; endpoint: string },
  observations: Observation[],
  now: number,
  s: BreakerSettings,
): Promise<{ state: State | null; opened: boolean }> {
  const row = await forUpdate(
    tx,
    tx.selectFrom('callback_endpoints').selectAll().where('merchant_id', '=', key.merchantId).where('endpoint', '=', key.endpoint),
  ).executeTakeFirst();
  let state: State = row ? { ...row, failures: Number(row.failures), trips: Number(row.trips) } : CLOSED;
  for (const o of observations) state = observe(state, o, now, s);
  const opened = state.state === 'open' && row?.state !== 'open';
  const clean = state.state === 'closed' && state.failures === 0;
  if (clean) {
    if (row)
      await tx.deleteFrom('callback_endpoints').where('merchant_id', '=', key.merchantId).where('endpoint', '=', key.endpoint).execute();
    return { state: null, opened };
  }
  const values = { ...state, merchant_id: key.merchantId, endpoint: key.endpoint, changed_at: now };
  await tx
    .insertInto('callback_endpoints')
    .values(values)
    .onConflict((oc) => oc.columns(['merchant_id', 'endpoint']).doUpdateSet(state))
    .execute();
  return { state, opened };
}

/**
 * Takes the probe of every open endpoint whose back-off is over (one worker each: the update's
 * condition is checked again on a row another worker just took). Returns them.
 */
export async function takeProbes(tx: Kysely<DB>, owner: string, now: number, leaseUntil: number) {
  return tx
    .updateTable('callback_endpoints')
    .set({ probe_owner: owner, probe_until: leaseUntil })
    .where('state', '=', 'open')
    .where('open_until', '<=', now)
    .where((eb) => eb.or([eb('probe_until', 'is', null), eb('probe_until', '<', now)]))
    .returning(['merchant_id', 'endpoint'])
    .execute();
}

/** A probe with no due event to send: give it back. */
export async function releaseProbe(tx: Kysely<DB>, owner: string, key: { merchant_id: string; endpoint: string }): Promise<void> {
  await tx
    .updateTable('callback_endpoints')
    .set({ probe_owner: null, probe_until: null })
    .where('merchant_id', '=', key.merchant_id)
    .where('endpoint', '=', key.endpoint)
    .where('probe_owner', '=', owner)
    .execute();
}

/**
 * After a failed probe: the endpoint's events past their time (maxAgeMs) are given up, as a failed
 * attempt past its time would be; the endpoint was tried and did not answer. Returns how many.
 */
export async function giveUpExpired(
  tx: Kysely<DB>,
  key: { merchantId: string; endpoint: string },
  now: number,
  maxAgeMs: number,
  error: string,
): Promise<number> {
  const res = await tx
    .updateTable('callback_events')
    .set({ status: 'failed', last_error: `endpoint unavailable: ${error}` })
    .where('merchant_id', '=', key.merchantId)
    .where('endpoint', '=', key.endpoint)
    .where('status', '=', 'pending')
    .where('created_at', '<', now - maxAgeMs)
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
    .executeTakeFirst();
  return Number(res.numUpdatedRows);
}

/** The operator resends events: their endpoints' breakers close (they expect an attempt now). */
export async function closeBreakers(tx: Kysely<DB>, keys: Array<{ merchant_id: string; endpoint: string }>): Promise<void> {
  for (const k of keys) {
    await tx.deleteFrom('callback_endpoints').where('merchant_id', '=', k.merchant_id).where('endpoint', '=', k.endpoint).execute();
  }
}

/** Endpoints with a breaker open or failures counted, open ones first (the console's callbacks page). */
export async function listEndpoints(db: Kysely<DB>, merchantId?: string): Promise<EndpointRow[]> {
  let q = db.selectFrom('callback_endpoints').selectAll().orderBy('state', 'desc').orderBy('changed_at', 'desc').limit(100);
  if (merchantId) q = q.where('merchant_id', '=', merchantId);
  return q.execute();
}

/** Metrics' merchant labels are bounded: the `cap` largest by value, then `other` for the rest. */
export function capLabels(rows: Array<{ merchant: string; n: number }>, cap: number): Array<[string, number]> {
  const sorted = [...rows].sort((a, b) => b.n - a.n || a.merchant.localeCompare(b.merchant));
  const top = sorted.slice(0, cap).map((r): [string, number] => [r.merchant, r.n]);
  const rest = sorted.slice(cap).reduce((sum, r) => sum + r.n, 0);
  return sorted.length > cap ? [...top, ['other', rest]] : top;
}

/** Merchants' label cap in the callback gauges. */
export const MERCHANT_LABELS = 10;

/** Open breakers per merchant (`cardprogram_callback_endpoint_open`). */
export async function openEndpointsByMerchant(db: Kysely<DB>): Promise<Array<[string, number]>> {
  const rows = await db
    .selectFrom('callback_endpoints')
    .select(['merchant_id', (eb) => eb.fn.countAll<number>().as('n')])
    .where('state', '=', 'open')
    .groupBy('merchant_id')
    .execute();
  return capLabels(
    rows.map((r) => ({ merchant: r.merchant_id, n: Number(r.n) })),
    MERCHANT_LABELS,
  );
}

/** Events not yet delivered per merchant (`cardprogram_callback_queue_depth`). */
export async function queueDepthByMerchant(db: Kysely<DB>): Promise<Array<[string, number]>> {
  const rows = await db
    .selectFrom('callback_events')
    .select(['merchant_id', (eb) => eb.fn.countAll<number>().as('n')])
    .where('status', '=', 'pending')
    .groupBy('merchant_id')
    .execute();
  return capLabels(
    rows.map((r) => ({ merchant: r.merchant_id, n: Number(r.n) })),
    MERCHANT_LABELS,
  );
}
