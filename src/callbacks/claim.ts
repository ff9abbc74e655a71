import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Database } from '../db/index.js';
import type { CallbackEventsTable, DB } from '../db/schema.js';
import { releaseProbe, takeProbes } from './breaker.js';
import { endpointOf } from './endpoint.js';
import { NOTIFY_EVENTS } from './outbox.js';

/** Up to this many open breakers are named in the claim; more, and it reads callback_endpoints. */
const OPEN_LISTED = 200;

export type EventRow = Omit<CallbackEventsTable, 'endpoint'> & { endpoint: string };

/** A claimed event: ours until `lease_until`; `probe` when it is an open breaker's one attempt. */
export type Claimed = EventRow & { probe: boolean };

export interface ClaimRequest {
  owner: string;
  now: number;
  leaseUntil: number;
  /** At most this many events. */
  limit: number;
  /** At most this many per merchant and endpoint (unless endpointRoom says less). */
  slots: number;
  /** At most this many per merchant, over all its endpoints (unless merchantRoom says less). */
  perMerchant: number;
  /** Merchant and endpoint pairs whose slots are all taken in this worker: not claimed. */
  busy: Array<{ merchantId: string; endpoint: string }>;
  /** Merchants that hold their whole share of this worker: not claimed. */
  busyMerchants?: string[];
  /** Endpoints this worker holds some events of: at most this many more. */
  endpointRoom?: Array<{ merchantId: string; endpoint: string; room: number }>;
  /** Merchants this worker holds some events of: at most this many more. */
  merchantRoom?: Array<{ merchantId: string; room: number }>;
}

const num = (r: EventRow): EventRow => ({
  ...r,
  attempts: Number(r.attempts),
  created_at: Number(r.created_at),
  next_attempt_at: Number(r.next_attempt_at),
  sequence: Number(r.sequence),
});

/** A bound that depends on the row's merchant (and endpoint): `case when … then n … else fallback end`. */
function bound(cases: Array<{ when: RawBuilder<unknown>; room: number }>, fallback: number): RawBuilder<unknown> {
  if (cases.length === 0) return sql`${fallback}`;
  return sql`(case ${sql.join(
    cases.map((c) => sql`when ${c.when} then cast(${c.room} as integer)`),
    sql` `,
  )} else cast(${fallback} as integer) end)`;
}

/**
 * The claimed events in the claim's fair order (the update returns rows in no set order): round by
 * round over merchants, a merchant's events round-robin over its endpoints, oldest first in each.
 */
export function fairOrder<T extends { merchant_id: string; endpoint: string; next_attempt_at: number; id: string }>(rows: T[]): T[] {
  const byAge = [...rows].sort((a, b) => a.next_attempt_at - b.next_attempt_at || a.id.localeCompare(b.id));
  const endpointRank = new Map<string, number>();
  const ranked = byAge.map((e) => {
    const k = `${e.merchant_id} ${e.endpoint}`;
    const rank = (endpointRank.get(k) ?? 0) + 1;
    endpointRank.set(k, rank);
    return { e, rank };
  });
  ranked.sort((a, b) => a.rank - b.rank || a.e.next_attempt_at - b.e.next_attempt_at || a.e.id.localeCompare(b.e.id));
  const merchantRank = new Map<string, number>();
  const rounds = ranked.map(({ e }) => {
    const round = (merchantRank.get(e.merchant_id) ?? 0) + 1;
    merchantRank.set(e.merchant_id, round);
    return { e, round };
  });
  rounds.sort((a, b) => a.round - b.round || a.e.next_attempt_at - b.e.next_attempt_at || a.e.id.localeCompare(b.e.id));
  return rounds.map((r) => r.e);
}

/**
 * Claims due events fairly, in one transaction: round-robin by merchant (every merchant's first
 * event, then every merchant's second, …), a merchant's own events round-robin by endpoint (its
 * endpoints' oldest, then their second, …), at most `slots` per endpoint and `perMerchant` per
 * merchant (less where this worker holds some already), none of an endpoint whose breaker is open;
 * plus one event of each open endpoint whose back-off is over (its probe), within its merchant's
 * share. Leases as before (docs/callbacks.md, "Workers"): `FOR UPDATE SKIP LOCKED` on PostgreSQL,
 * the write lock on SQLite, so that two workers never claim one event.
 */
export async function claimDue(database: Database, req: ClaimRequest): Promise<Claimed[]> {
  const { owner, now, leaseUntil } = req;
  const busyMerchants = req.busyMerchants ?? [];
  const merchantRoom = req.merchantRoom ?? [];
  const endpointRoom = req.endpointRoom ?? [];
  const lock = database.dialect === 'postgres' ? sql`for update skip locked` : sql``;
  // The open breakers, read first and outside the transaction: most of the time there are none,
  // and the claim is then one statement on callback_events alone (nothing else locked with it).
  // A breaker that opens between this read and the claim is seen by the next claim (meanwhile the
  // worker's own count of failures holds the endpoint: worker.ts, streak).
  const open = await database.read((db) =>
    db
      .selectFrom('callback_endpoints')
      .select(['merchant_id', 'endpoint', 'open_until', 'probe_until'])
      .where('state', '=', 'open')
      .limit(OPEN_LISTED + 1)
      .execute(),
  );
  const probing = open.some((b) => Number(b.open_until) <= now && (b.probe_until === null || Number(b.probe_until) < now));
  const listed = open.length <= OPEN_LISTED;
  const skip = [...req.busy, ...(listed ? open.map((b) => ({ merchantId: b.merchant_id, endpoint: b.endpoint })) : [])];
  const skipped: RawBuilder<unknown> =
    skip.length === 0
      ? sql``
      : sql`and not (${sql.join(
          skip.map((b) => sql`(e.merchant_id = ${b.merchantId} and e.endpoint = ${b.endpoint})`),
          sql` or `,
        )})`;
  const skippedMerchants: RawBuilder<unknown> =
    busyMerchants.length === 0 ? sql`` : sql`and e.merchant_id not in (${sql.join(busyMerchants)})`;
  // Past OPEN_LISTED open breakers, the claim asks the table itself.
  const openTable = listed
    ? sql``
    : sql`and not exists (
        select 1 from callback_endpoints b
        where b.merchant_id = e.merchant_id and b.endpoint = e.endpoint and b.state = 'open'
      )`;
  const perEndpoint = bound(
    endpointRoom.map((r) => ({ when: sql`merchant_id = ${r.merchantId} and endpoint = ${r.endpoint}`, room: r.room })),
    req.slots,
  );
  const perMerchant = bound(
    merchantRoom.map((r) => ({ when: sql`merchant_id = ${r.merchantId}`, room: r.room })),
    req.perMerchant,
  );
  const probeRoom = (merchantId: string) =>
    busyMerchants.includes(merchantId) ? 0 : (merchantRoom.find((r) => r.merchantId === merchantId)?.room ?? req.perMerchant);
  // A lease lost in a crash only means the event is claimed again: no need to wait for the disk.
  const claimed = await database.withTx(
    async (tx) => {
      const probes = probing ? await takeProbes(tx, owner, now, leaseUntil, req.limit, probeRoom) : [];
      const out: Claimed[] = [];
      for (const p of probes) {
        const { rows } = await sql<EventRow>`
          update callback_events set lease_owner = ${owner}, lease_until = ${leaseUntil}
          where id in (
            select id from callback_events
            where merchant_id = ${p.merchant_id} and endpoint = ${p.endpoint} and status = 'pending'
              and next_attempt_at <= ${now} and (lease_until is null or lease_until < ${now})
            order by next_attempt_at limit 1 ${lock}
          )
          returning *`.execute(tx);
        if (rows[0]) out.push({ ...num(rows[0]), probe: true });
        else await releaseProbe(tx, owner, p);
      }
      const limit = req.limit - out.length;
      if (limit <= 0) return out;
      // The inner window ranks each endpoint's due events (rn_e), the outer one each merchant's, its
      // endpoints in turn (rn_m); the claim takes them round by round over merchants. The outer
      // select locks (PostgreSQL) and checks again that each is still pending and free, on the row
      // as another worker may just have left it. A probe taken above counts in its merchant's share.
      const probed = new Map<string, number>();
      for (const p of out) probed.set(p.merchant_id, (probed.get(p.merchant_id) ?? 0) + 1);
      const afterProbes =
        probed.size === 0
          ? perMerchant
          : bound(
              [...probed].map(([merchantId, n]) => ({
                when: sql`merchant_id = ${merchantId}`,
                room: Math.max(0, probeRoom(merchantId) - n),
              })),
              req.perMerchant,
            );
      const { rows } = await sql<EventRow>`
        update callback_events set lease_owner = ${owner}, lease_until = ${leaseUntil}
        where id in (
          select id from callback_events
          where id in (
            select id from (
              select id, next_attempt_at,
                row_number() over (partition by merchant_id order by rn_e, next_attempt_at, id) as rn_m,
                merchant_id
              from (
                select e.id, e.merchant_id, e.endpoint, e.next_attempt_at,
                  row_number() over (partition by e.merchant_id, e.endpoint order by e.next_attempt_at, e.id) as rn_e
                from callback_events e
                where e.status = 'pending' and e.next_attempt_at <= ${now} and (e.lease_until is null or e.lease_until < ${now})
                  ${openTable}
                  ${skipped}
                  ${skippedMerchants}
              ) by_endpoint
              where rn_e <= ${perEndpoint}
            ) by_merchant
            where rn_m <= ${probed.size === 0 ? perMerchant : afterProbes}
            order by rn_m, next_attempt_at, id
            limit ${limit}
          )
          and status = 'pending' and (lease_until is null or lease_until < ${now})
          ${lock}
        )
        returning *`.execute(tx);
      for (const e of fairOrder(rows.map(num))) out.push({ ...e, probe: false });
      return out;
    },
    { durable: false },
  );
  // Rows written before the endpoint column (or by hand) get theirs from the URL.
  for (const e of claimed) e.endpoint = endpointOf(e.url);
  await database.read((db) => followNotifyUrl(db, claimed));
  return claimed;
}

/**
 * A notify event goes to the merchant's notify URL as it is now. An event committed with the URL
 * of a moment before (its transaction read it just before the operator's change committed, so the
 * change's re-targeting missed it) still goes where the operator points. A removed URL leaves the
 * events where they were written for.
 */
async function followNotifyUrl(db: Kysely<DB>, claimed: Claimed[]): Promise<void> {
  const notify = claimed.filter((e) => (NOTIFY_EVENTS as readonly string[]).includes(e.type));
  if (notify.length === 0) return;
  const merchants = await db
    .selectFrom('merchants')
    .select(['id', 'notify_url'])
    .where('id', 'in', [...new Set(notify.map((e) => e.merchant_id))])
    .execute();
  const urls = new Map(merchants.map((m) => [m.id, m.notify_url]));
  for (const e of notify) {
    const url = urls.get(e.merchant_id);
    if (url && url !== e.url) {
      e.url = url;
      e.endpoint = endpointOf(url);
    }
  }
}

/** Gives back events claimed beyond this worker's free slots (their lease ends now). */
export async function unclaim(database: Database, owner: string, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await database.withTx(
    (tx) =>
      tx
        .updateTable('callback_events')
        .set({ lease_owner: null, lease_until: null })
        .where('id', 'in', ids)
        .where('lease_owner', '=', owner)
        .execute(),
    { durable: false },
  );
}
