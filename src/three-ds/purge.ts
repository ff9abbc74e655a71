import { sql } from 'kysely';
import type { Services } from '../context.js';
import { updateInPages } from '../db/sweep.js';

/** How long an AReq's browser data is kept (decisions §14.7). */
export const BROWSER_DATA_DAYS = 30;

/** The pass's name in the log, the metrics and `sweep_failures`. */
export const BROWSER_DATA_PURGE = 'three_ds_browser_purge';

/**
 * Drops the browser's data (address, user agent, screen, language) of authentications older than 30
 * days: the rest of the record stays. A periodic pass of its own, run hourly by the service's reaper
 * (src/app.ts); in pages of the index `three_ds_browser_kept`, a page in one statement, row by row
 * when that fails, a failing row recorded and skipped (src/db/sweep.ts). Idempotent, and safe on
 * every instance at once.
 */
export function purgeBrowserData(svc: Services, now: number): Promise<number> {
  const before = now - BROWSER_DATA_DAYS * 86_400_000;
  return updateInPages(svc, BROWSER_DATA_PURGE, {
    table: 'three_ds_authentications',
    key: ['created_at', 'acs_trans_id'],
    where: sql`browser is not null and created_at < ${before}`,
    set: sql`browser = null`,
  });
}
