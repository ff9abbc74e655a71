import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuditSpec } from '../audit/trail.js';
import type { Actor, MerchantCtx, Services, Verb } from '../context.js';
import { invalid } from '../errors.js';
import type { RequestKey } from '../idempotency/keys.js';
import { spendReadNonce } from '../idempotency/read-nonces.js';
import { runVerb } from '../runner.js';

/** How a signed write is run besides its verb and input. */
export interface SignedWriteOptions {
  /** A sandbox-only simulation (a reviewer's decision): the verb keeps `sandbox:<appId>` as its actor. */
  sandbox?: boolean;
  /**
   * A merchant's change that needs a record: written to the audit trail in the verb's transaction,
   * like an operator's (src/runner.ts), with the merchant as the actor (`source` merchant) and the
   * request's address as the origin.
   */
  audit?: AuditSpec;
}

/**
 * Runs a verb for a signed write, for the request's merchant, once per randomStr (decisions §4),
 * and marks a replayed answer with the `x-idempotent-replay` header. A replay writes no second
 * audit record: the first answer is given back, nothing runs.
 */
export function signedWrite<I, O>(
  svc: Services,
  req: FastifyRequest,
  reply: FastifyReply,
  randomStr: string,
  verb: Verb<I, O, MerchantCtx>,
  input: I,
  options: SignedWriteOptions = {},
): Promise<O> {
  const appId = req.merchant.appId;
  const actor: Actor = { kind: 'merchant', appId, origin: req.ip, ...(options.sandbox ? { sandbox: true } : {}) };
  return runVerb(svc, verb, {
    input,
    actor,
    merchantId: appId,
    once: writeKey(req, reply, randomStr),
    ...(options.audit ? { audit: options.audit } : {}),
  });
}

/** A signed write's key (decisions §4): its randomStr, operation and canonical body; a replay is marked. */
export function writeKey(req: FastifyRequest, reply: FastifyReply, randomStr: string) {
  return {
    randomStr,
    operation: req.routeOptions.config.operation ?? req.url,
    canonical: req.canonical,
    onReplay: () => reply.header('x-idempotent-replay', 'true'),
  };
}

/**
 * Spends a read's randomStr; a reused one is 1008. Where a timestamp is required, in the read-nonce
 * store (1007 when stamped before its watermark); otherwise as a durable key (docs/idempotency.md).
 */
export async function signedRead(svc: Services, req: FastifyRequest, randomStr: string): Promise<void> {
  await spendReadNonce(svc.database, svc.readNonces, readKey(req, randomStr), svc.clock());
}

/** A signed read's key: its randomStr, spent once (decisions §4), by signedRead or with the read itself. */
export function readKey(req: FastifyRequest, randomStr: string): RequestKey {
  // The timestamp was checked by the signature plugin (src/http/auth.ts): signed, an integer, fresh.
  const ts = (req.body as { timestamp?: unknown } | undefined)?.timestamp;
  return {
    merchantId: req.merchant.appId,
    randomStr,
    operation: req.routeOptions.config.operation ?? req.url,
    canonical: req.canonical,
    timestamp: typeof ts === 'number' ? ts : undefined,
  };
}

// Where a signed body splits into envelope and input: wire format, so that verbs can name their input.
export { type EnvelopeField, type OperationInput, operationInput, type SignedBody } from '../operation-input.js';

const STRICT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Decodes one of the interface's Base64 fields to text; bad Base64 or bad UTF-8 names the field. */
export function decodeBase64Field(field: string, value: string): string {
  if (!STRICT_BASE64.test(value)) throw invalid(field, 'must be Base64 (standard alphabet, with padding)');
  let text: string;
  try {
    text = utf8.decode(Buffer.from(value, 'base64'));
  } catch {
    throw invalid(field, 'must be Base64 of UTF-8 text');
  }
  // Control characters have no place in a name or an address and would corrupt logs and exports.
  if (/\p{Cc}/u.test(text)) throw invalid(field, 'must not contain control characters');
  return text;
}
