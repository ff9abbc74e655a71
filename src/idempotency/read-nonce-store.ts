import type { Database } from '../db/index.js';
import { MemoryNonces, type ReadNonceStore } from './read-nonces.js';
import { FileNonces } from './read-nonces-file.js';
import { PgNonces } from './read-nonces-pg.js';

/**
 * The read-nonce store of a service (docs/idempotency.md, "Reads"), or null where a signed timestamp
 * is not required (the sandbox's default): there a read's randomStr is a durable row of
 * `idempotency_keys`, as it always was, because nothing else bounds how long it must be remembered.
 */
export async function openReadNonces(opts: {
  /** CARDPROGRAM_REQUIRE_TIMESTAMP. */
  requireTimestamp: boolean;
  database: Database;
  /** SQLite, `serve --processes N`: the file the processes share (read-nonces-file.ts); otherwise memory. */
  sharedFile?: string | undefined;
  now: number;
}): Promise<ReadNonceStore | null> {
  if (!opts.requireTimestamp) return null;
  if (opts.database.dialect === 'postgres') {
    const store = new PgNonces(opts.database);
    await store.init(opts.now);
    return store;
  }
  return opts.sharedFile ? new FileNonces(opts.sharedFile, opts.now) : new MemoryNonces(opts.now);
}
