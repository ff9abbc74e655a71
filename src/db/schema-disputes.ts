/* The disputes' tables (migration 0022, decisions §13; re-exported by ./schema.ts). */
import type { ColumnType } from 'kysely';

/** A dispute's statuses (decisions §13.1), listed once: the column's type and the record's schema read this. */
export const DISPUTE_STATUSES = ['unsubmitted', 'submitted', 'won', 'lost', 'expired', 'withdrawn'] as const;
export type DisputeStatus = (typeof DISPUTE_STATUSES)[number];
/** The statuses of an open dispute: at most one per transaction (the partial unique index `disputes_one_open`). */
export const OPEN_DISPUTE_STATUSES = ['unsubmitted', 'submitted'] as const satisfies readonly DisputeStatus[];

/** Why a cardholder disputes (decisions §13.1). */
export const DISPUTE_REASONS = [
  'fraudulent',
  'not_received',
  'duplicate',
  'canceled',
  'not_as_described',
  'credit_not_processed',
  'other',
] as const;
export type DisputeReason = (typeof DISPUTE_REASONS)[number];

export interface DisputesTable {
  id: string;
  merchant_id: string;
  card_id: string;
  trade_id: string;
  reason: DisputeReason;
  /** Minor units of the card's currency. */
  amount: number;
  currency: string;
  status: DisputeStatus;
  /** The explanation, sealed and bound to the dispute (src/disputes/sealed.ts); null: none. */
  explanation_enc: string | null;
  /** The clearing's business date, yyyy-MM-dd. */
  clearing_date: string;
  /** The first moment (ms) a submission is too late: the start of the 121st day after the clearing. */
  deadline_at: number;
  /** What the submission credited the card provisionally (0: none). */
  provisional_credit: ColumnType<number, number | undefined, number>;
  /** What the network's outcome said (a won dispute's credit); null until decided. */
  outcome_amount: number | null;
  /** Who decided it (`network:<peer>`, an operator, `sandbox-auto`); null until decided. */
  decided_by: string | null;
  /** Sandbox: when its network decides it by its explanation (src/disputes/sandbox.ts); null: never, or done. */
  sandbox_decide_at: ColumnType<number | null, number | null | undefined, number | null>;
  created_at: number;
  updated_at: number;
  submitted_at: number | null;
  decided_at: number | null;
}

export interface DisputeEvidenceTable {
  id: string;
  dispute_id: string;
  merchant_id: string;
  file_name: string;
  /** What its first bytes say it is: application/pdf, image/png or image/jpeg (never the declared type). */
  content_type: string;
  /** Decoded bytes. */
  size: number;
  sha256: string;
  /** The file's Base64, sealed and bound to the dispute and the file's id. */
  data_enc: string;
  created_at: number;
}

/** A dispute's history: each change of status, and each money movement with its journal entry. */
export interface DisputeEventsTable {
  id: string;
  dispute_id: string;
  merchant_id: string;
  status: DisputeStatus;
  /** created, updated, submitted, provisional_credit, won, lost, credit_reversed, expired, withdrawn. */
  kind: string;
  /** Minor units moved (0: none). */
  amount: ColumnType<number, number | undefined, number>;
  entry_id: string | null;
  actor: string;
  note: ColumnType<string, string | undefined, string>;
  created_at: number;
}
