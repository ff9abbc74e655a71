import type { Services } from '../context.js';

/** How long an AReq's browser data is kept (decisions §14.7). */
export const BROWSER_DATA_DAYS = 30;

/**
 * Drops the browser's data (address, user agent, screen, language) of authentications older than 30
 * days: the rest of the record stays. Run hourly by the service's reaper (src/app.ts); idempotent.
 */
export async function purgeBrowserData(svc: Services, now: number): Promise<number> {
  const before = now - BROWSER_DATA_DAYS * 86_400_000;
  const res = await svc.database.withTx((tx) =>
    tx
      .updateTable('three_ds_authentications')
      .set({ browser: null })
      .where('browser', 'is not', null)
      .where('created_at', '<', before)
      .executeTakeFirst(),
  );
  return Number(res.numUpdatedRows);
}
