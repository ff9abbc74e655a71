// A table of src/db/schema.ts's DB, in a file of its own to keep schema.ts short; re-exported there.
import type { ColumnType } from 'kysely';

/** A circuit breaker per merchant and endpoint (src/callbacks/breaker.ts). */
export interface CallbackEndpointsTable {
  merchant_id: string;
  endpoint: string;
  state: 'closed' | 'open';
  /** Consecutive failed attempts: no answer (timed out, refused, reset), a 5xx, a slow refusal (breaker.ts, healthy). */
  failures: number;
  /** How many times in a row it opened (its back-off doubles each time). */
  trips: number;
  opened_at: number | null;
  /** Open: when one probe may go. */
  open_until: number | null;
  probe_owner: string | null;
  probe_until: number | null;
  last_error: string | null;
  changed_at: number;
  /** The time those failed attempts held their slots, in ms (migration 0028). */
  held_ms: ColumnType<number, number | undefined, number>;
}

/**
 * Items a periodic pass could not process (src/db/sweep.ts): a hold whose release threw, a dispute
 * whose expiry did. Kept until a pass gets through the item (or a whole pass no longer meets it).
 */
export interface SweepFailuresTable {
  /** The pass: `hold_expiry`, `dispute_expiry`. */
  job: string;
  item_id: string;
  /** Passes in a row that failed on it. */
  failures: number;
  first_failed_at: number;
  last_failed_at: number;
  last_error: string;
}
