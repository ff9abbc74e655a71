import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { startOfDay } from './queries.js';

/**
 * The console's reads of 3-D Secure (decisions §14.6, docs/console.md): a card's authentications,
 * and today's counts on the overview. Reads only: nothing here changes an authentication.
 */

/** A card's latest authentications (outcome, reason, method, merchant, amount), newest first. */
export function cardAuthentications(db: Kysely<DB>, cardId: string, limit = 20) {
  return db
    .selectFrom('three_ds_authentications')
    .select([
      'acs_trans_id',
      'trans_status',
      'trans_status_reason',
      'decided_by',
      'authentication_type',
      'challenge_method',
      'challenge_state',
      'eci',
      'merchant_name',
      'amount',
      'currency',
      'exponent',
      'used_trade_id',
      'created_at',
      'completed_at',
    ])
    .where('card_id', '=', cardId)
    .orderBy('created_at', 'desc')
    .orderBy('acs_trans_id', 'desc')
    .limit(limit)
    .execute();
}
export type CardAuthentication = Awaited<ReturnType<typeof cardAuthentications>>[number];

/** Today's (UTC) authentications of every merchant by outcome (`transStatus`) and reason. */
export async function threeDsToday(db: Kysely<DB>, now: number) {
  const rows = await db
    .selectFrom('three_ds_authentications')
    .select(['trans_status', 'trans_status_reason', (eb) => eb.fn.countAll<number>().as('n')])
    .where('created_at', '>=', startOfDay(now))
    .groupBy(['trans_status', 'trans_status_reason'])
    .execute();
  return rows.map((r) => ({ status: r.trans_status, reason: r.trans_status_reason, n: Number(r.n) }));
}
export type ThreeDsToday = Awaited<ReturnType<typeof threeDsToday>>;
