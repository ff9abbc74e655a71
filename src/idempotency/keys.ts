import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../db/index.js';
import type { DB } from '../db/schema.js';
import { DomainError } from '../errors.js';

export interface RequestKey {
  merchantId: string;
  randomStr: string;
  operation: string;
  /** The verified signing string of the request. */
  signed: string;
}

export interface WriteResult<T> {
  body: T;
  /** true when this is the stored answer of an earlier request with the same key. */
  replayed: boolean;
}

/**
 * What makes two requests "the same": the operation and the signing string without `timestamp`.
 * The timestamp is left out so that a client retrying later, with a fresh timestamp, still gets
 * its first answer instead of 1008 (a deliberate reading of decisions §4, see docs/adr/0002).
 */
export function fingerprint(key: RequestKey): string {
  const withoutTimestamp = key.signed
    .split('&')
    .filter((part) => !part.startsWith('timestamp='))
    .join('&');
  return createHash('sha256').update(`${key.operation}\n${withoutTimestamp}`).digest('hex');
}

class KeyTaken extends Error {}

async function replay<T>(db: Kysely<DB>, key: RequestKey, fp: string): Promise<WriteResult<T>> {
  const row = await db
    .selectFrom('idempotency_keys')
    .select(['kind', 'fingerprint', 'response_body'])
    .where('merchant_id', '=', key.merchantId)
    .where('random_str', '=', key.randomStr)
    .executeTakeFirst();
  if (row?.kind !== 'write' || row.fingerprint !== fp || row.response_body === null) {
    throw new DomainError(
      'duplicateRequest',
      row && row.kind === 'write' && row.fingerprint !== fp ? 'randomStr: already used for a different request' : 'randomStr: already used',
    );
  }
  return { body: JSON.parse(row.response_body) as T, replayed: true };
}

/**
 * Runs a write exactly once per (merchant, randomStr) (decisions §4). The key row is inserted first,
 * in the same transaction as the write's effect and its stored response: a concurrent duplicate
 * blocks on that row (PostgreSQL) or on the write lock (SQLite) until the first commits, then finds
 * the key taken and replays the stored response. A failed write rolls back its key with it, so a
 * retry runs again.
 */
export async function runWrite<T>(
  database: Database,
  key: RequestKey,
  now: number,
  effect: (tx: Kysely<DB>) => Promise<T>,
): Promise<WriteResult<T>> {
  const fp = fingerprint(key);
  // Fast path for retries: no write lock is taken to answer a replay.
  const seen = await database.db
    .selectFrom('idempotency_keys')
    .select('random_str')
    .where('merchant_id', '=', key.merchantId)
    .where('random_str', '=', key.randomStr)
    .executeTakeFirst();
  if (seen) return replay<T>(database.db, key, fp);
  try {
    return await database.withTx(async (tx) => {
      const inserted = await tx
        .insertInto('idempotency_keys')
        .values({
          merchant_id: key.merchantId,
          random_str: key.randomStr,
          kind: 'write',
          operation: key.operation,
          fingerprint: fp,
          response_status: null,
          response_body: null,
          created_at: now,
        })
        .onConflict((oc) => oc.columns(['merchant_id', 'random_str']).doNothing())
        .executeTakeFirst();
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 0) throw new KeyTaken();
      const body = await effect(tx);
      await tx
        .updateTable('idempotency_keys')
        .set({ response_status: 200, response_body: JSON.stringify(body) })
        .where('merchant_id', '=', key.merchantId)
        .where('random_str', '=', key.randomStr)
        .execute();
      return { body, replayed: false };
    });
  } catch (err) {
    if (err instanceof KeyTaken) return replay<T>(database.db, key, fp);
    throw err;
  }
}

/** A read's randomStr is a nonce: used once, then any reuse is 1008 (decisions §4). */
export async function consumeNonce(database: Database, key: RequestKey, now: number): Promise<void> {
  const inserted = await database.db
    .insertInto('idempotency_keys')
    .values({
      merchant_id: key.merchantId,
      random_str: key.randomStr,
      kind: 'read',
      operation: key.operation,
      fingerprint: fingerprint(key),
      response_status: null,
      response_body: null,
      created_at: now,
    })
    .onConflict((oc) => oc.columns(['merchant_id', 'random_str']).doNothing())
    .executeTakeFirst();
  if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 0) {
    throw new DomainError('duplicateRequest', 'randomStr: already used');
  }
}

/** Deletes keys older than the retention period; returns how many went. */
export async function reapKeys(database: Database, olderThan: number): Promise<number> {
  const res = await database.db.deleteFrom('idempotency_keys').where('created_at', '<', olderThan).executeTakeFirst();
  return Number(res.numDeletedRows);
}
