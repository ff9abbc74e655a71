// A table of src/db/schema.ts's DB, in a file of its own to keep schema.ts short; re-exported there.

/** A circuit breaker per merchant and endpoint (src/callbacks/breaker.ts). */
export interface CallbackEndpointsTable {
  merchant_id: string;
  endpoint: string;
  state: 'closed' | 'open';
  /** Consecutive attempts that got no answer (timed out, refused, reset). */
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
}
