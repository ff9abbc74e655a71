import { CompiledQuery, sql } from 'kysely';
import type { Database } from '../db/index.js';
import { preparedText } from '../db/prepared.js';
import type { RequestKey } from './keys.js';
import { usedNonce } from './keys.js';
import { beforeWatermark, liveBuckets, NONCE_BUCKET_MS, type ReadNonceStore } from './read-nonces.js';

/**
 * How many partitions `read_nonces` has (migration 0023): a bucket goes to partition
 * `bucket % NONCE_SLOTS`. At most 4 buckets are live at once (liveBuckets), so at any moment the
 * other partitions hold only buckets no fresh request can fall in, and are truncated whole.
 */
export const NONCE_SLOTS = 8;

/**
 * The read-nonce store on PostgreSQL (issue 31): `read_nonces`, partitioned by slot, each partition
 * an UNLOGGED table (no WAL: its insert's commit does not wait for the disk), and its sentinel, the
 * one row of the unlogged `read_nonce_store` with the watermark. PostgreSQL's crash recovery
 * empties every unlogged table, the sentinel with the nonces: a statement that finds no sentinel
 * spends nothing, the store is initialised again with the watermark at now, and every request
 * stamped before is refused (1007). Old partitions are truncated, never deleted from.
 *
 * As common table expressions, for a read that spends its nonce in its own statement (the 4.1 list,
 * src/trades/list.ts): $1 the merchant, $2 the randomStr, $3 the request's timestamp, $4 now.
 * `nonce` returns one row when the nonce was spent; `nonce_store` the watermark (none: the store
 * was emptied). Nothing is spent when the sentinel is missing or the timestamp is before the watermark.
 * A nonce is spent per bucket: the primary key (merchant, randomStr, slot) is the whole check, and a
 * replay, whose timestamp is signed, always falls in its first use's bucket. (A look in every slot
 * for the randomStr made the statement half as costly again, measured: not worth it for a reuse
 * only the merchant itself could sign.)
 */
export const STORE_NONCE_CTES = `nonce_store as (select watermark from read_nonce_store where id = 1),
nonce as (
  insert into read_nonces (merchant_id, random_str, slot, created_at)
  select $1, $2, (($3::int8 / ${NONCE_BUCKET_MS}) % ${NONCE_SLOTS})::int2, $4::int8
  where exists (select 1 from nonce_store where watermark <= $3::int8)
  on conflict do nothing
  returning 1
)`;

/** What a statement with STORE_NONCE_CTES selects of them. */
export const STORE_NONCE_RESULT = '(select count(*) from nonce)::int as fresh, (select watermark from nonce_store) as watermark';

/** What STORE_NONCE_RESULT gave. */
export interface NonceOutcome {
  fresh: number;
  watermark: number | string | null;
}

export function storeNonceParameters(key: RequestKey, timestamp: number, now: number): unknown[] {
  return [key.merchantId, key.randomStr, timestamp, now];
}

const SPEND = preparedText(`with ${STORE_NONCE_CTES} select ${STORE_NONCE_RESULT}`);

export class PgNonces implements ReadNonceStore {
  readonly kind = 'postgres';

  constructor(private readonly database: Database) {}

  /**
   * At the service's start, and whenever a statement finds the sentinel gone: the store is empty
   * (first use, or crash recovery emptied it), so its watermark is now. Several instances may do it
   * at once: the first one's row stays.
   */
  async init(now: number): Promise<void> {
    await sql`insert into read_nonce_store (id, watermark) values (1, ${now}) on conflict (id) do nothing`.execute(this.database.db);
  }

  /**
   * Runs a statement that spends a nonce with STORE_NONCE_CTES and returns its row once the nonce is
   * spent: 1007 before the watermark, 1008 when reused. A statement that found the sentinel gone
   * spent nothing: the store is initialised again (its watermark now) and the statement runs once more.
   */
  async spending<R extends NonceOutcome>(statement: () => Promise<R | undefined>, timestamp: number, now: number): Promise<R> {
    for (let attempt = 0; ; attempt++) {
      const row = await statement();
      if (!row || row.watermark === null) {
        await this.init(now);
        // Emptied twice in a row: refuse rather than loop.
        if (attempt > 0) throw beforeWatermark(now);
        continue;
      }
      const watermark = Number(row.watermark);
      if (timestamp < watermark) throw beforeWatermark(watermark);
      if (row.fresh === 0) throw usedNonce();
      return row;
    }
  }

  async spend(key: RequestKey, timestamp: number, now: number): Promise<void> {
    const parameters = storeNonceParameters(key, timestamp, now);
    await this.spending(
      async () => (await this.database.db.executeQuery<NonceOutcome>(CompiledQuery.raw(SPEND, parameters))).rows[0],
      timestamp,
      now,
    );
  }

  /**
   * Truncates the partitions that hold no live bucket (a look first: most of the time they are empty
   * already, and a TRUNCATE takes the partition's exclusive lock), and initialises the store if a
   * crash emptied it while no request came.
   */
  async maintain(now: number): Promise<void> {
    const live = new Set(liveBuckets(now).map((b) => b % NONCE_SLOTS));
    const { db } = this.database;
    for (let slot = 0; slot < NONCE_SLOTS; slot++) {
      if (live.has(slot)) continue;
      const table = sql.table(`read_nonces_${slot}`);
      const { rows } = await sql<{ used: boolean }>`select exists (select 1 from ${table}) as used`.execute(db);
      if (!rows[0]?.used) continue;
      await db.transaction().execute(async (tx) => {
        // Never a queue of requests behind the truncate: if a statement holds the partition, next time.
        await sql`set local lock_timeout = '200ms'`.execute(tx);
        await sql`truncate ${table}`.execute(tx);
      });
    }
    await this.init(now);
  }

  async close(): Promise<void> {}
}
