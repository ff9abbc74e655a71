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
  /** At most this many per merchant and endpoint (this worker's free slots are checked after). */
  slots: number;
  /** Merchant and endpoint pairs whose slots are all taken in this worker: not claimed. */
  busy: Array<{ merchantId: string; endpoint: string }>;
}

const num = (r: EventRow): EventRow => ({
  ...r,
  attempts: Number(r.attempts),
  created_at: Number(r.created_at),
  next_attempt_at: Number(r.next_attempt_at),
  sequence: Number(r.sequence),
});

/**
 * Claims due events fairly, in one transaction: round-robin by merchant and endpoint (every
 * endpoint's oldest due event, then every endpoint's second, …), at most `slots` per endpoint, none
 * of an endpoint whose breaker is open; plus one event of each open endpoint whose back-off is over
 * (its probe). Leases as before (docs/callbacks.md, "Workers"): `FOR UPDATE SKIP LOCKED` on
 * PostgreSQL, the write lock on SQLite, so that two workers never claim one event.
 */
export async function claimDue(database: Database, req: ClaimRequest): Promise<Claimed[]> {
  const { owner, now, leaseUntil } = req;
  const lock = database.dialect === 'postgres' ? sql`for update skip locked` : sql``;
  // The open breakers, read first and outside the transaction: most of the time there are none,
  // and the claim is then one statement on callback_events alone (nothing else locked with it).
  // A breaker that opens between this read and the claim is seen by the next claim (meanwhile the
  // worker's own count of failures holds the endpoint: worker.ts, streak).
  const open = await database.db
    .selectFrom('callback_endpoints')
    .select(['merchant_id', 'endpoint', 'open_until', 'probe_until'])
    .where('state', '=', 'open')
    .limit(OPEN_LISTED + 1)
    .execute();
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
  // Past OPEN_LISTED open breakers, the claim asks the table itself.
  const openTable = listed
    ? sql``
    : sql`and not exists (
        select 1 from callback_endpoints b
        where b.merchant_id = e.merchant_id and b.endpoint = e.endpoint and b.state = 'open'
      )`;
  // A lease lost in a crash only means the event is claimed again: no need to wait for the disk.
  const claimed = await database.withTx(
    async (tx) => {
      const probes = probing ? await takeProbes(tx, owner, now, leaseUntil) : [];
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
      // The window ranks each endpoint's due events; the outer select locks (PostgreSQL) and checks
      // again that each is still pending and free, on the row as another worker may just have left it.
      const { rows } = await sql<EventRow>`
        update callback_events set lease_owner = ${owner}, lease_until = ${leaseUntil}
        where id in (
          select id from callback_events
          where id in (
            select id from (
              select e.id, e.next_attempt_at,
                row_number() over (partition by e.merchant_id, e.endpoint order by e.next_attempt_at, e.id) as rn
              from callback_events e
              where e.status = 'pending' and e.next_attempt_at <= ${now} and (e.lease_until is null or e.lease_until < ${now})
                ${openTable}
                ${skipped}
            ) ranked
            where rn <= ${req.slots}
            order by rn, next_attempt_at
            limit ${limit}
          )
          and status = 'pending' and (lease_until is null or lease_until < ${now})
          ${lock}
        )
        returning *`.execute(tx);
      // The update returns rows in no set order: the round-robin order again, for the caller.
      const fair = rows.map(num).sort((a, b) => a.next_attempt_at - b.next_attempt_at || a.id.localeCompare(b.id));
      const seen = new Map<string, number>();
      const ranked = fair.map((e) => {
        const k = `${e.merchant_id} ${e.endpoint}`;
        const rank = (seen.get(k) ?? 0) + 1;
        seen.set(k, rank);
        return { e, rank };
      });
      ranked.sort((a, b) => a.rank - b.rank);
      for (const { e } of ranked) out.push({ ...e, probe: false });
      return out;
    },
    { durable: false },
  );
  // Rows written before the endpoint column (or by hand) get theirs from the URL.
  for (const e of claimed) e.endpoint = endpointOf(e.url);
  await followNotifyUrl(database.db, claimed);
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
