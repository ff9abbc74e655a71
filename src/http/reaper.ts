import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { reapConsoleSessions } from '../console/sessions.js';
import type { Database } from '../db/index.js';
import { ensureTradePartitions } from '../db/partitions.js';
import { reapKeys } from '../idempotency/keys.js';
import { NONCE_MAINTAIN_MS, type ReadNonceStore } from '../idempotency/read-nonces.js';
import type { Metrics } from '../metrics.js';
import { reapPage } from '../page/links.js';

const EVERY_MS = 60 * 60 * 1000;

export interface ReaperOptions {
  database: Database;
  clock: () => number;
  /** Where the passes count the rows they failed on (src/db/sweep.ts). */
  metrics: Metrics;
  /** How long a randomStr is remembered (decisions §4: at least 24 h). */
  retentionMs: number;
  /** Releases the holds whose window is over (decisions §12.9, src/ledger/expire.ts); safe on every instance at once. */
  expireHolds?: () => Promise<unknown>;
  /** Expires the unsubmitted disputes past their deadline (decisions §13.2, src/disputes/expire.ts); as safe. */
  expireDisputes?: () => Promise<unknown>;
  /** Drops the 3-D Secure browser data of authentications older than 30 days (decisions §14.7, src/three-ds/purge.ts); as safe. */
  purgeBrowserData?: () => Promise<unknown>;
  /** The read-nonce store, whose aged buckets go every minute (src/idempotency/read-nonces.ts). */
  readNonces?: ReadNonceStore | null;
}

/**
 * Once an hour, forgets what has outlived its use: randomStr keys past the retention period, and
 * spent or expired page links and sessions, and console sessions past their bounds; releases the
 * authorizations' holds whose window is over (hold expiry), expires disputes past their deadline
 * and drops the 3-D Secure browser data of authentications older than 30 days; and, on PostgreSQL, makes the coming months' partitions of `trades` (src/db/partitions.ts). Every
 * minute, drops the read-nonce store's aged buckets. Stopped when the service closes.
 *
 * Each job is a pass of its own (one failing stops no other), and each works in pages, each row its
 * own unit of work: a row that fails is logged, counted and recorded, and skipped; the next pass tries
 * it again (src/db/sweep.ts; docs/operations.md, "Periodic passes").
 */
export const reaperPlugin = fp(
  async (
    app: FastifyInstance,
    { database, clock, metrics, retentionMs, expireHolds, expireDisputes, purgeBrowserData, readNonces }: ReaperOptions,
  ) => {
    const deps = { database, clock, metrics, log: app.log };
    const timer = setInterval(() => {
      reapKeys(deps, clock() - retentionMs).catch((err) => app.log.warn({ err }, 'reaping idempotency keys failed'));
      reapPage(deps, clock()).catch((err) => app.log.warn({ err }, 'reaping page links and sessions failed'));
      reapConsoleSessions(deps, clock()).catch((err) => app.log.warn({ err }, 'reaping console sessions failed'));
      ensureTradePartitions(database, clock()).catch((err) => app.log.warn({ err }, 'creating partitions of trades failed'));
      expireHolds?.().catch((err) => app.log.warn({ err }, 'releasing expired holds failed'));
      expireDisputes?.().catch((err) => app.log.warn({ err }, 'expiring disputes failed'));
      purgeBrowserData?.().catch((err) => app.log.warn({ err }, 'dropping 3-D Secure browser data failed'));
    }, EVERY_MS);
    timer.unref();
    const nonces = readNonces
      ? setInterval(() => {
          readNonces.maintain(clock()).catch((err) => app.log.warn({ err }, 'dropping aged read nonces failed'));
        }, NONCE_MAINTAIN_MS)
      : null;
    nonces?.unref();
    app.addHook('onClose', async () => {
      clearInterval(timer);
      if (nonces) clearInterval(nonces);
    });
  },
  { name: 'cardprogram-reaper' },
);
