/**
 * The one table of result codes (decisions §5, plus the codes this project adds, documented in
 * docs/errors.md). Every failure anywhere in the service is a DomainError carrying one of these;
 * the HTTP layer maps it to the envelope in exactly one place (src/http/errors.ts).
 */
export const ErrorCodes = {
  internal: { code: '1', status: 500, msg: 'Internal error' },
  operationNotFound: { code: '1004', status: 404, msg: 'Operation not found' },
  validation: { code: '1002', status: 400, msg: 'Parameter validation failed' },
  bodyTooLarge: { code: '1002', status: 413, msg: 'Request body is larger than 1 MiB' },
  signature: { code: '1006', status: 401, msg: 'Signature error' },
  timestamp: { code: '1007', status: 401, msg: 'timestamp is outside the allowed window of 5 minutes' },
  duplicateRequest: { code: '1008', status: 409, msg: 'Duplicate request' },
  rateLimited: { code: '1009', status: 429, msg: 'Rate limit exceeded' },
  merchantNotFound: { code: '2601', status: 401, msg: 'Merchant not found or disabled' },
  notEnabled: { code: '2605', status: 403, msg: 'Operation not enabled for this merchant' },
  holderNotFound: { code: '2606', status: 404, msg: 'Cardholder not found' },
  holderNotApproved: { code: '2607', status: 409, msg: 'Cardholder not approved' },
  kycEmailUsed: { code: '2610', status: 409, msg: 'E-mail already used by another KYC request' },
  holderDuplicateId: {
    code: '2611',
    status: 409,
    msg: 'A cardholder with this idnoType and idno already exists',
  },
  auditTransition: { code: '2612', status: 409, msg: 'Audit status change not allowed' },
  kycNotFound: { code: '2613', status: 404, msg: 'KYC request not found' },
  kycState: { code: '2614', status: 409, msg: 'KYC request already decided' },
  cardNotFound: { code: '2648', status: 404, msg: 'Card not found' },
  unsupportedCurrency: { code: '2720', status: 400, msg: 'Unsupported currency' },
  incorrectAmount: { code: '2723', status: 400, msg: 'Incorrect amount' },
  cardStatus: { code: '2724', status: 409, msg: 'Card status abnormal' },
  insufficientBalance: { code: '2725', status: 409, msg: 'Insufficient balance' },
  insufficientFunding: { code: '2726', status: 409, msg: 'Insufficient funding balance' },
  statusSource: { code: '2727', status: 409, msg: 'Card status set by another party' },
  spendingControl: { code: '2728', status: 409, msg: 'Declined by the card’s spending controls' },
  merchantDeclined: { code: '2729', status: 409, msg: 'Declined by the program’s authorization endpoint' },
  tradeState: {
    code: '2730',
    status: 409,
    msg: 'Transaction not found, or not in a state that allows the operation',
  },
  cardVerification: { code: '2731', status: 409, msg: 'Card verification failed: the CVV2 or expiry is not the card’s' },
  authenticationFailed: {
    code: '2732',
    status: 409,
    msg: '3-D Secure: the authentication value is not one issued for this card, unused, recent and for this amount',
  },
  authenticationRequired: { code: '2733', status: 409, msg: '3-D Secure: additional customer authentication required' },
  tokenDeclined: { code: '2734', status: 409, msg: 'The wallet token is not an active token of this card' },
  disputeNotFound: { code: '2740', status: 404, msg: 'Dispute not found' },
  disputeOpen: { code: '2741', status: 409, msg: 'The transaction already has an open dispute' },
  disputeState: { code: '2742', status: 409, msg: 'Dispute not in a status that allows the operation' },
  disputeDeadline: { code: '2743', status: 409, msg: 'The dispute’s deadline has passed' },
  disputeEvidence: { code: '2744', status: 400, msg: 'Evidence file refused' },
  authenticationNotFound: { code: '2750', status: 404, msg: '3-D Secure authentication not found' },
  authenticationState: { code: '2751', status: 409, msg: '3-D Secure authentication not in a state that allows the operation' },
  tokenNotFound: { code: '2760', status: 404, msg: 'Token not found' },
  tokenState: { code: '2761', status: 409, msg: 'Token not in a status that allows the operation' },
  unavailable: { code: '1', status: 503, msg: 'Service temporarily unavailable' },
} as const;

export type ErrorKind = keyof typeof ErrorCodes;

export class DomainError extends Error {
  readonly kind: ErrorKind;
  readonly code: string;
  readonly status: number;
  /** The stored answer of an earlier request with the same key (a recorded decline). */
  replayed = false;
  /** Sent as the Retry-After header (rate limits, a database that is not reachable). */
  retryAfterSeconds: number | undefined;
  /** Sent as the envelope's `detail` (a sandbox signature failure: src/http/signature-detail.ts). */
  detail: Record<string, unknown> | undefined;

  constructor(kind: ErrorKind, msg?: string) {
    const def = ErrorCodes[kind];
    super(msg ?? def.msg);
    this.name = 'DomainError';
    this.kind = kind;
    this.code = def.code;
    this.status = def.status;
  }
}

/** 1009 with the seconds to wait, sent as Retry-After. */
export function rateLimited(msg: string, retryAfterSeconds: number): DomainError {
  const err = new DomainError('rateLimited', msg);
  err.retryAfterSeconds = retryAfterSeconds;
  return err;
}

/** A bad field: the message always names the field and the rule it broke. */
export function invalid(field: string, rule: string): DomainError {
  return new DomainError('validation', `${field}: ${rule}`);
}

/**
 * A failure whose writes so far are still committed, and whose answer is stored for replay like a
 * success: a declined authorization is recorded for audit although the request fails.
 */
export class CommittedFailure extends Error {
  constructor(readonly error: DomainError) {
    super(error.message);
    this.name = 'CommittedFailure';
  }
}
