import type { Kysely } from 'kysely';
import { type DB, LIVE_TOKEN_STATUSES, WALLET_PROVIDERS } from '../db/schema.js';

/**
 * Live tokens (pending, active, suspended: decisions §15.3) by wallet, every wallet listed (0 when it
 * has none): the `cardprogram_tokens_live` gauge, read when scraped.
 */
export async function liveTokensByWallet(db: Kysely<DB>): Promise<Array<[string, number]>> {
  const rows = await db
    .selectFrom('tokens')
    .select(['wallet_provider', (eb) => eb.fn.countAll<number>().as('n')])
    .where('status', 'in', [...LIVE_TOKEN_STATUSES])
    .groupBy('wallet_provider')
    .execute();
  const n = new Map(rows.map((r) => [r.wallet_provider as string, Number(r.n)]));
  return WALLET_PROVIDERS.map((w) => [w, n.get(w) ?? 0]);
}
