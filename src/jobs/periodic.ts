import type { WorkerJob } from '../callbacks/worker.js';
import { reapConsoleSessions } from '../console/sessions.js';
import type { Services } from '../context.js';
import { ensureTradePartitions } from '../db/partitions.js';
import type { SweepDeps } from '../db/sweep.js';
import { expireDisputes } from '../disputes/expire.js';
import { disputeSandbox } from '../disputes/sandbox.js';
import type { PeriodicJob } from '../http/reaper.js';
import { reapKeys } from '../idempotency/keys.js';
import { NONCE_MAINTAIN_MS } from '../idempotency/read-nonces.js';
import { kycAutomation } from '../kyc/automation.js';
import { expireHolds } from '../ledger/expire.js';
import { reapPage } from '../page/links.js';
import { purgeBrowserData } from '../three-ds/purge.js';
import { reapTokenRecords } from '../tokens/purge.js';
import { sendTspCallsOnce } from '../tokens/tsp-calls.js';

const HOUR_MS = 60 * 60 * 1000;
/** How often the token changes the service made are sent to the TSP (a change waits at most this, plus the TSP's answer). */
export const TSP_SEND_MS = 1000;

/**
 * Every periodic job of the service, in one list, handed out by src/app.ts (and the `worker`
 * command): the passes the reaper runs on its timers (src/http/reaper.ts), and the jobs the callback
 * worker runs on each of its polls (src/callbacks/worker.ts). A new periodic job is one entry here.
 *
 * The reaper's, every hour: randomStr keys past the retention period; spent or expired page links and
 * sessions; console sessions past their bounds; on PostgreSQL, the coming months' partitions of
 * `trades` (src/db/partitions.ts); the authorizations' holds whose window is over (hold expiry,
 * decisions §12.9); the unsubmitted disputes past their deadline (decisions §13.2); the 3-D Secure
 * browser data of authentications older than 30 days (decisions §14.7); the wallet tokens'
 * provisioning requests and TSP notifications older than 30 days (src/tokens/purge.ts). Every minute, the read-nonce
 * store's aged buckets. Every second, the wallet tokens' changes to the TSP (src/tokens/tsp-calls.ts:
 * leased, one pass at a time per process; on the reaper rather than the worker's poll, so that a TSP
 * that hangs never holds up the callbacks' delivery, and so that it runs whether or not this process
 * delivers callbacks). Each is safe on every instance at once, and each works in pages, a failing
 * row recorded and skipped (src/db/sweep.ts).
 *
 * The worker's, in the sandbox only: the automatic KYC reviewer (CARDPROGRAM_KYC_AUTO_DECISION_MS)
 * and the sandbox network's dispute decisions (CARDPROGRAM_DISPUTE_SANDBOX_MS).
 */
export function periodicJobs(svc: Services): { reaper: PeriodicJob[]; worker: WorkerJob[] } {
  const deps: SweepDeps = { database: svc.database, clock: svc.clock, metrics: svc.metrics, log: svc.log };
  const hourly = (what: string, run: PeriodicJob['run']): PeriodicJob => ({ what, everyMs: HOUR_MS, run });
  const readNonces = svc.readNonces;
  const reaper = [
    hourly('reaping idempotency keys', (now) => reapKeys(deps, now - svc.config.idempotencyRetentionMs)),
    hourly('reaping page links and sessions', (now) => reapPage(deps, now)),
    hourly('reaping console sessions', (now) => reapConsoleSessions(deps, now)),
    hourly('creating partitions of trades', (now) => ensureTradePartitions(svc.database, now)),
    hourly('releasing expired holds', async (now) => {
      // Each failed item is logged by the pass itself (src/db/sweep.ts) and skipped.
      const { released, failed } = await expireHolds(svc, now);
      if (released > 0 || failed.length > 0) svc.log.info({ released, failed: failed.length }, 'hold expiry: authorizations released');
    }),
    hourly('expiring disputes', async (now) => {
      const { expired, failed } = await expireDisputes(svc, now);
      if (expired > 0 || failed.length > 0) svc.log.info({ expired, failed: failed.length }, 'dispute expiry: disputes expired');
    }),
    hourly('dropping 3-D Secure browser data', async (now) => {
      const purged = await purgeBrowserData(svc, now);
      if (purged > 0) svc.log.info({ purged }, '3-D Secure: browser data of authentications older than 30 days dropped');
    }),
    { what: 'sending token changes to the TSP', everyMs: TSP_SEND_MS, run: () => sendTspCallsOnce(svc) },
    hourly('reaping wallet-token requests and notifications', async (now) => {
      const reaped = await reapTokenRecords(deps, now);
      if (reaped > 0) svc.log.info({ reaped }, 'tokens: provisioning requests and TSP notifications older than 30 days deleted');
    }),
    ...(readNonces
      ? [{ what: 'dropping aged read nonces', everyMs: NONCE_MAINTAIN_MS, run: (now: number) => readNonces.maintain(now) }]
      : []),
  ];
  const sandbox = svc.config.env === 'sandbox';
  const worker = [
    ...(sandbox && svc.config.kyc.autoDecisionMs > 0 ? [kycAutomation(svc)] : []),
    ...(sandbox && svc.config.disputes.sandboxMs > 0 ? [disputeSandbox(svc)] : []),
  ];
  return { reaper, worker };
}
