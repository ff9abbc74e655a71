import type { Database } from '../db/index.js';
import { DomainError } from '../errors.js';
import { consumeNonce, type RequestKey, usedNonce } from './keys.js';

/**
 * Where a signed timestamp is required (production, CARDPROGRAM_REQUIRE_TIMESTAMP), a read's
 * randomStr is an anti-replay mark, not a record (issue 31, decision 1): a captured read can be sent
 * again only while its timestamp is fresh (±5 minutes), so its nonce needs remembering for that long
 * and no longer, without the durability of money. The store keeps nonces in time buckets of the
 * request's signed timestamp, dropped whole as they age; and makes its loss safe with a watermark:
 * every request stamped before the moment the store last started empty is refused (1007), so a crash
 * that empties it cannot reopen a replay window (docs/idempotency.md, "Reads").
 *
 * A nonce is spent once per bucket of its timestamp: a replay carries the timestamp it was signed
 * with, so it meets its first use in the same bucket; only the merchant could sign the same
 * randomStr again with a timestamp in another bucket, and that is no replay.
 *
 * Three stores: the process's memory (SQLite, one process), a non-synchronous SQLite file shared by
 * the processes of `serve --processes N` (read-nonces-file.ts), an UNLOGGED table on PostgreSQL
 * (read-nonces-pg.ts).
 */
export interface ReadNonceStore {
  readonly kind: 'memory' | 'file' | 'postgres';
  /** Spends a read's randomStr, signed at `timestamp`: 1008 when spent already, 1007 before the watermark. */
  spend(key: RequestKey, timestamp: number, now: number): Promise<void>;
  /** Drops the buckets no fresh request can fall in any more (a timer of the service runs it). */
  maintain(now: number): Promise<void>;
  close(): Promise<void>;
}

/** A bucket's length: nonces are kept by the 5-minute interval of their request's timestamp. */
export const NONCE_BUCKET_MS = 5 * 60_000;
/**
 * How far from now a bucket is kept: the freshness window (5 minutes) and a minute for the clocks of
 * several instances (docs/operations.md: keep them synchronised). A request outside the window is
 * refused before its nonce is looked at, so a bucket past this holds nothing a fresh request could
 * repeat.
 */
export const NONCE_KEEP_MS = 6 * 60_000;
/** How often the service drops old buckets. */
export const NONCE_MAINTAIN_MS = 60_000;

export const bucketOf = (timestamp: number) => Math.floor(timestamp / NONCE_BUCKET_MS);

/** The buckets a fresh request may fall in now, oldest first. */
export function liveBuckets(now: number): number[] {
  const out: number[] = [];
  for (let b = bucketOf(now - NONCE_KEEP_MS); b <= bucketOf(now + NONCE_KEEP_MS); b++) out.push(b);
  return out;
}

/**
 * The beginning of the watermark's refusal. The SDK (client/src/client.ts) retries a 1007 that
 * starts with it, signing a fresh timestamp: keep the two the same (test/read-nonces.test.ts).
 */
export const WATERMARK_REFUSAL = "timestamp is before the replay store's watermark";

/** The refusal of a request stamped before the store last started empty. */
export function beforeWatermark(watermark: number): DomainError {
  return new DomainError(
    'timestamp',
    `${WATERMARK_REFUSAL} (${new Date(watermark).toISOString()}, when it last started empty): sign the request again with the current time`,
  );
}

/**
 * Spends a read's randomStr: in the store where there is one and the request is timestamped,
 * otherwise as a durable row of `idempotency_keys` (the sandbox's default, without a required timestamp).
 */
export function spendReadNonce(database: Database, store: ReadNonceStore | null, key: RequestKey, now: number): Promise<void> {
  if (store === null || key.timestamp === undefined) return consumeNonce(database, key, now);
  return store.spend(key, key.timestamp, now);
}

/**
 * The process's memory: a set of (merchant, randomStr) per bucket. It starts empty with the
 * process, so its watermark is the moment it was made (the service's start).
 */
export class MemoryNonces implements ReadNonceStore {
  readonly kind = 'memory';
  private readonly buckets = new Map<number, Set<string>>();

  constructor(readonly watermark: number) {}

  async spend(key: RequestKey, timestamp: number, now: number): Promise<void> {
    if (timestamp < this.watermark) throw beforeWatermark(this.watermark);
    const id = `${key.merchantId}\n${key.randomStr}`;
    // Per bucket, as every store: a replay's signed timestamp is in its first use's bucket.
    const bucket = bucketOf(timestamp);
    let set = this.buckets.get(bucket);
    if (set?.has(id)) throw usedNonce();
    const fresh = set === undefined;
    if (!set) {
      set = new Set();
      this.buckets.set(bucket, set);
    }
    // Spent before any await: a copy of this request whose spend runs while this one waits must find it.
    set.add(id);
    // A new bucket: the time to let the old ones go (a bucket is dropped whole).
    if (fresh) await this.maintain(now);
  }

  async maintain(now: number): Promise<void> {
    const oldest = bucketOf(now - NONCE_KEEP_MS);
    for (const b of this.buckets.keys()) if (b < oldest) this.buckets.delete(b);
  }

  async close(): Promise<void> {
    this.buckets.clear();
  }
}
