import type { AuditSpec } from '../audit/trail.js';

/**
 * A clearing file's message posted by an operator (`cardprogram network import`): recorded in the
 * audit trail in the transaction that posts it, as `disputes import` and `holds expire` are, under
 * the card it moved money on. The link's own messages are not (the network is their actor).
 */
export type ImportAudit = (cardId: string) => AuditSpec;
