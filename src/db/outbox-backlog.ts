import type { Kysely } from 'kysely';
import type { DB } from './schema.js';

/** The outboxes of messages to an outside party, each row `pending` until sent or `failed` once given up. */
export type OutboxTable = 'three_ds_results' | 'tsp_calls';

/** An outbox's backlog (the metrics, the console): how many are pending, the oldest's age in seconds (0 when none), how many were given up on. */
export interface OutboxBacklog {
  pending: number;
  oldestSeconds: number;
  failed: number;
}

/** A read of the pending rows (each outbox's partial index of the due ones) and a count of the failed ones. */
export async function outboxBacklog(db: Kysely<DB>, table: OutboxTable, now: number): Promise<OutboxBacklog> {
  const [pending, failed] = await Promise.all([
    db
      .selectFrom(table)
      .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min('created_at').as('oldest')])
      .where('status', '=', 'pending')
      .executeTakeFirst(),
    db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('status', '=', 'failed')
      .executeTakeFirst(),
  ]);
  return {
    pending: Number(pending?.n ?? 0),
    oldestSeconds: pending?.oldest == null ? 0 : Math.max(0, (now - Number(pending.oldest)) / 1000),
    failed: Number(failed?.n ?? 0),
  };
}
