import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Services, TxCtx } from '../context.js';
import { invalid } from '../errors.js';
import { consumeNonce, runWrite } from '../idempotency/keys.js';
import type { LedgerCtx } from '../ledger/common.js';

/**
 * Runs a signed write once per randomStr (decisions §4) and marks a replayed answer with the
 * `x-idempotent-replay` header.
 */
export async function signedWrite<T>(
  svc: Services,
  req: FastifyRequest,
  reply: FastifyReply,
  randomStr: string,
  effect: (ctx: TxCtx) => Promise<T>,
): Promise<T> {
  const now = svc.clock();
  const result = await runWrite(
    svc.database,
    { merchantId: req.merchant.appId, randomStr, operation: req.routeOptions.config.operation ?? req.url, canonical: req.canonical },
    now,
    (tx) => effect({ tx, now }),
  );
  if (result.replayed) reply.header('x-idempotent-replay', 'true');
  else svc.notifier.poke();
  return result.body;
}

/** Spends a read's randomStr; a reused one is 1008. */
export async function signedRead(svc: Services, req: FastifyRequest, randomStr: string): Promise<void> {
  await consumeNonce(
    svc.database,
    { merchantId: req.merchant.appId, randomStr, operation: req.routeOptions.config.operation ?? req.url, canonical: req.canonical },
    svc.clock(),
  );
}

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

/** The context of a ledger verb called for a signed request: its merchant and the program. */
export function ledgerCtx(svc: Services, req: FastifyRequest, ctx: TxCtx): LedgerCtx {
  return { ...ctx, merchantId: req.merchant.appId, program: svc.config.program };
}
