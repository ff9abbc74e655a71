import { sql } from 'kysely';
import { reapInPages, type SweepDeps } from '../db/sweep.js';

/**
 * How long a provisioning request and a TSP notification are kept: their repeats are answered from
 * them (a TSP retries within minutes or hours), and the per-card counts need one day. Beyond, a
 * request is gone (the token it made stays, with its history).
 */
export const TOKEN_RECORDS_DAYS = 30;

/**
 * Deletes the provisioning requests and notifications older than TOKEN_RECORDS_DAYS, in pages of
 * their time indexes (src/db/sweep.ts: a failing row recorded and skipped). Run hourly by the
 * reaper; idempotent, and safe on every instance at once.
 */
export async function reapTokenRecords(deps: SweepDeps, now: number): Promise<number> {
  const before = now - TOKEN_RECORDS_DAYS * 86_400_000;
  const requests = await reapInPages(deps, 'reap_token_provision_requests', {
    table: 'token_provision_requests',
    key: ['created_at', 'request_id'],
    where: sql`created_at < ${before}`,
  });
  const notifications = await reapInPages(deps, 'reap_token_notifications', {
    table: 'token_notifications',
    key: ['received_at', 'token_reference_id', 'event', 'at'],
    where: sql`received_at < ${before}`,
  });
  return requests + notifications;
}
