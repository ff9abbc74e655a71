/**
 * What a verb is given of a signed body: the operation's own fields, without the signed envelope
 * (decisions §3). Wire format, below the domains, so that a verb can name its input as
 * `OperationInput<Static<typeof TheBody>>` (its body schema, the one source of the type) without
 * seeing src/http; routes split a body with `operationInput(req.body)`.
 */

/** The fields of the signed envelope (decisions §3), not of the operation itself. */
export type EnvelopeField = 'appId' | 'sign' | 'timestamp' | 'randomStr';

/** What every signed write's body carries (SignedFields and RandomStr in src/http/schemas.ts). */
export interface SignedBody {
  appId: string;
  sign: string;
  timestamp?: number;
  randomStr: string;
}

/** Any signed body: a write's carries its randomStr; a link's may not, KYC's has its requestNo instead. */
export interface EnvelopeOf {
  appId: string;
  sign: string;
  timestamp?: number;
  randomStr?: string;
}

/** A signed body without its envelope: what the operation's verb is given. */
export type OperationInput<B> = Omit<B, EnvelopeField>;

/**
 * Splits a signed body into its randomStr and the operation's own fields: the one place that knows
 * which fields are the envelope's (appId, sign and timestamp are the authentication's; randomStr
 * the idempotency key).
 */
export function operationInput<B extends EnvelopeOf>(body: B): { randomStr: B['randomStr']; input: OperationInput<B> } {
  const { appId: _appId, sign: _sign, timestamp: _timestamp, randomStr, ...input } = body;
  return { randomStr: randomStr as B['randomStr'], input };
}
