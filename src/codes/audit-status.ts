/**
 * The cardholder audit status (interface §3.1) and its state machine, defined here once; the
 * schemas, docs/cardholders.md and the review verb all derive from this table.
 */
export const AuditStatus = {
  pending: 0,
  underReview: 1,
  approved: 2,
  rejected: 3,
  dataToBeCompleted: 4,
} as const;
export type AuditStatusValue = (typeof AuditStatus)[keyof typeof AuditStatus];

export const AUDIT_STATUS_NAMES: Record<AuditStatusValue, string> = {
  0: 'Pending review',
  1: 'Under review',
  2: 'Approved',
  3: 'Rejected',
  4: 'Data to be completed',
};

/**
 * Allowed reviewer decisions. A reviewer may decide straight from pending; "data to be completed"
 * goes back to review once the data arrives; an approval can be withdrawn (rejected) later, e.g.
 * after a fraud finding; a rejection is final (a new application is a new cardholder).
 */
export const AUDIT_TRANSITIONS: Record<AuditStatusValue, readonly AuditStatusValue[]> = {
  0: [1, 2, 3, 4],
  1: [2, 3, 4],
  2: [3],
  3: [],
  4: [1, 2, 3],
};

export function canTransition(from: number, to: number): boolean {
  const allowed = AUDIT_TRANSITIONS[from as AuditStatusValue];
  return allowed?.includes(to as AuditStatusValue);
}
