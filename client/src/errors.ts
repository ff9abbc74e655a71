import type { DeclineReasonValue } from './wire.js';

/** What a sandbox service answers with a signature error (docs/errors.md). */
export interface SignatureDetail {
  signingString: string;
  signedFields: string[];
  unsignedFields: string[];
  signType: string;
}

function isSignatureDetail(v: unknown): v is SignatureDetail {
  if (typeof v !== 'object' || v === null) return false;
  const d = v as Record<string, unknown>;
  return (
    typeof d.signingString === 'string' &&
    Array.isArray(d.signedFields) &&
    Array.isArray(d.unsignedFields) &&
    typeof d.signType === 'string'
  );
}

/** What a declined sandbox authorization answers (2724, 2725, 2728, 2729, 2731): read it with `trades.get(tradeId)`. */
export interface DeclineDetail {
  tradeId: string;
  declineReason: DeclineReasonValue;
}

function isDeclineDetail(v: unknown): v is DeclineDetail {
  if (typeof v !== 'object' || v === null) return false;
  const d = v as Record<string, unknown>;
  return typeof d.tradeId === 'string' && typeof d.declineReason === 'string';
}

/** Every error the SDK throws is one of these. */
export class CardProgramError extends Error {
  override name = 'CardProgramError';
}

/** The service answered with an error envelope (or a non-JSON error). */
export class APIError extends CardProgramError {
  override name = 'APIError';
  constructor(
    /** HTTP status. */
    readonly status: number,
    /** The service's result code (docs/errors.md), e.g. "1002"; "" when the body was not an envelope. */
    readonly code: string,
    /** The service's message: for a bad field it names the field and the rule. */
    readonly msg: string,
    /** The request's trace id: quote it to the service's operator. */
    readonly traceId: string | undefined,
    readonly headers: Headers,
    /**
     * Sandbox only, on a 1006: what the service signed (`signingString`, `signedFields`,
     * `unsignedFields`, `signType`); compare it with the string you signed. Never the secret.
     */
    readonly detail?: SignatureDetail,
    /** On a declined sandbox authorization: its id (read it with `trades.get`) and `declineReason`. */
    readonly decline?: DeclineDetail,
  ) {
    super(`${code ? `${code} ` : ''}${msg}${traceId ? ` (traceId ${traceId})` : ''}`);
  }

  /** The error class for a status. */
  static from(status: number, body: unknown, headers: Headers): APIError {
    const env = (typeof body === 'object' && body !== null ? body : {}) as {
      code?: unknown;
      msg?: unknown;
      traceId?: unknown;
      detail?: unknown;
    };
    const code = env.code === undefined ? '' : String(env.code);
    const msg = typeof env.msg === 'string' ? env.msg : `HTTP ${status}`;
    const traceId = typeof env.traceId === 'string' ? env.traceId : (headers.get('x-trace-id') ?? undefined);
    const Class =
      status === 400 || status === 413
        ? BadRequestError
        : status === 401
          ? AuthenticationError
          : status === 403
            ? PermissionDeniedError
            : status === 404
              ? NotFoundError
              : status === 409
                ? ConflictError
                : status === 429
                  ? RateLimitError
                  : status >= 500
                    ? InternalServerError
                    : APIError;
    return new Class(
      status,
      code,
      msg,
      traceId,
      headers,
      isSignatureDetail(env.detail) ? env.detail : undefined,
      isDeclineDetail(env.detail) ? env.detail : undefined,
    );
  }
}

/** 1002: a field broke a rule (the message names it). Not retried. */
export class BadRequestError extends APIError {
  override name = 'BadRequestError';
}
/**
 * 1006 signature, 1007 timestamp, 2601 unknown or disabled merchant. Not retried, but for the 1007 of a
 * request signed before the service's read-nonce store last started empty (retried with a fresh timestamp).
 */
export class AuthenticationError extends APIError {
  override name = 'AuthenticationError';
}
/** 2605: the operation is not enabled for this merchant. */
export class PermissionDeniedError extends APIError {
  override name = 'PermissionDeniedError';
}
/** 1004 no such operation, 2606 cardholder, 2613 KYC request, 2648 card not found. */
export class NotFoundError extends APIError {
  override name = 'NotFoundError';
}
/** 1008 randomStr reused with another request, or a state conflict (2607, 2724, 2725, 2730, …). */
export class ConflictError extends APIError {
  override name = 'ConflictError';
}
/** 1009: too many requests; retried after `Retry-After`. */
export class RateLimitError extends APIError {
  override name = 'RateLimitError';
}
/** 5xx: retried. */
export class InternalServerError extends APIError {
  override name = 'InternalServerError';
}

/** No answer: the connection failed or was cut. Retried (a write is replayed by its randomStr). */
export class APIConnectionError extends CardProgramError {
  override name = 'APIConnectionError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
/** No answer within `timeoutMs`. Retried. */
export class APIConnectionTimeoutError extends APIConnectionError {
  override name = 'APIConnectionTimeoutError';
}

/** A callback whose signature or timestamp does not verify: do not trust its body. */
export class WebhookVerificationError extends CardProgramError {
  override name = 'WebhookVerificationError';
}
