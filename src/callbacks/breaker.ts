import type { Kysely, Selectable } from 'kysely';
import type { CallbackConfig } from '../config.js';
import { forUpdate } from '../db/locks.js';
import type { CallbackEndpointsTable, DB } from '../db/schema.js';

/**
 * A circuit breaker per merchant and endpoint (docs/callbacks.md, "Isolation"), kept in the
 * database so that every worker (threads, `cardprogram worker` processes, other instances) sees
 * the same state:
 *
 * - **closed**: attempts go as the retry schedule says. `failures` counts consecutive failed
 *   attempts: no answer at all (timed out, refused, reset, not resolved), a 5xx, or any other
 *   non-2xx answer slower than `slowMs` (unhealthy); `held_ms` the time they held their slots. A
 *   receiver that answers 500 just before the timeout holds a slot as long as one that does not
 *   answer, and is as unwell. A 2xx (however slow, within the timeout) and a quick 4xx close it.
 * - **open**, after `breaker.failures` of them: the endpoint's events are deferred (not claimed, not
 *   attempted, their attempts and schedule untouched) until `open_until`; then one worker takes the
 *   probe and sends one due event. A healthy answer closes the breaker; a failed probe opens it again
 *   for twice as long (up to `breaker.maxOpenMs`).
 */

export type EndpointRow = Selectable<CallbackEndpointsTable>;

export interface BreakerSettings {
  failures: number;
  openMs: number;
  maxOpenMs: number;
  /** A non-2xx answer after this long counts as a failure (a 5xx always does). */
  slowMs: number;
}

export const DEFAULT_BREAKER = { failures: 5, openMs: 10_000, maxOpenMs: 600_000 } as const;
export const DEFAULT_SLOTS = 16;
/** The share of a worker's attempts (percent) one merchant may hold, over all its endpoints. */
export const DEFAULT_MERCHANT_SHARE = 25;

export function breakerSettings(config: CallbackConfig): BreakerSettings {
  const b = config.breaker ?? {};
  return {
    failures: b.failures ?? DEFAULT_BREAKER.failures,
    openMs: b.openMs ?? DEFAULT_BREAKER.openMs,
    maxOpenMs: b.maxOpenMs ?? DEFAULT_BREAKER.maxOpenMs,
    slowMs: b.slowMs ?? Math.floor(config.timeoutMs / 2),
  };
}

/**
 * Whether an attempt shows its endpoint well (the breaker's one rule of health, for the record and
 * for the worker's own count): a 2xx, or another answer that came quickly and is not a 5xx. No
 * answer, a 5xx, or a slow refusal is a failure: each held a slot, and none delivered.
 */
export function healthy(result: { status: number | null; durationMs: number }, slowMs: number): boolean {
  const { status, durationMs } = result;
  if (status === null || status >= 500) return false;
  return (status >= 200 && status < 300) || durationMs < slowMs;
}

/** An attempt's outcome as the breaker sees it. */
export interface Observation {
  /** The attempt showed the endpoint well (healthy()). */
  healthy: boolean;
  /** The attempt was the open breaker's probe. */
  probe: boolean;
  error: string | null;
  /** How long the attempt held its slot. */
  heldMs: number;
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
  held_ms: 0,
};

/** The breaker's next state after one attempt (pure: the tests' and the record's one rule). */
export function observe(state: State, o: Observation, now: number, s: BreakerSettings): State {
  if (o.healthy) return CLOSED;
  const next: State = { ...state, failures: state.failures + 1, last_error: o.error, held_ms: state.held_ms + o.heldMs };
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
  let state: State = row ? { ...row, failures: Number(row.failures), trips: Number(row.trips), held_ms: Number(row.held_ms) } : CLOSED;
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

/** Open endpoints looked at for probes in one claim (the oldest back-offs first; the rest: the next claim). */
const PROBES_LOOKED_AT = 500;

/**
 * Takes the probe of open endpoints whose back-off is over (one worker each: the update's condition
 * is checked again on a row another worker just took), at most `limit`, and at most what
 * `room(merchantId)` allows per merchant: a merchant whose many endpoints are open gets no more
 * probes in flight than its share of the worker (docs/callbacks.md, "Isolation"). Returns them.
 */
export async function takeProbes(
  tx: Kysely<DB>,
  owner: string,
  now: number,
  leaseUntil: number,
  limit: number,
  room: (merchantId: string) => number,
) {
  const due = await tx
    .selectFrom('callback_endpoints')
    .select(['merchant_id', 'endpoint'])
    .where('state', '=', 'open')
    .where('open_until', '<=', now)
    .where((eb) => eb.or([eb('probe_until', 'is', null), eb('probe_until', '<', now)]))
    .orderBy('open_until')
    .limit(PROBES_LOOKED_AT)
    .execute();
  const taken = new Map<string, number>();
  const chosen = due.filter((p) => {
    const n = taken.get(p.merchant_id) ?? 0;
    if (n >= room(p.merchant_id)) return false;
    taken.set(p.merchant_id, n + 1);
    return true;
  });
  chosen.splice(Math.max(0, limit));
  if (chosen.length === 0) return [];
  return tx
    .updateTable('callback_endpoints')
    .set({ probe_owner: owner, probe_until: leaseUntil })
    .where((eb) => eb.or(chosen.map((p) => eb.and([eb('merchant_id', '=', p.merchant_id), eb('endpoint', '=', p.endpoint)]))))
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
