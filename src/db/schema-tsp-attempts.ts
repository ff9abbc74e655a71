/* Each attempt of a call to the wallet tokens' TSP (migration 0035, decisions §15.1; re-exported by ./schema.ts). */

/** What an attempt made of its call: done (the TSP took it), retry (tried again later), failed (given up). */
export const TSP_ATTEMPT_OUTCOMES = ['done', 'retry', 'failed'] as const;
export type TspAttemptOutcome = (typeof TSP_ATTEMPT_OUTCOMES)[number];

export interface TspCallAttemptsTable {
  /** The `tsp_calls` row. */
  call_id: string;
  /** 1, 2, … per call. */
  attempt: number;
  at: number;
  duration_ms: number;
  /** The TSP's HTTP status; null: no answer (refused, timed out, TLS). */
  http_status: number | null;
  /** Why not done, briefly (never a body's secrets: the TSP's answer is not kept). */
  error: string | null;
  outcome: TspAttemptOutcome;
}
