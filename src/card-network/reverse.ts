import type { Services } from '../context.js';
import { ResponseCode } from '../iso8583/response-codes.js';
import { runVerb } from '../runner.js';
import { failureCode } from './authorize.js';
import { cardByPan, contentHash, storedCopy } from './card-data.js';
import { linkReversePayment } from './clear.js';
import { type LinkAnswer, LinkReplay, linkIdentity, linkReverse, originalMessage, storedAnswer } from './identity.js';
import type { ImportAudit } from './import-audit.js';

/**
 * A reversal request or advice (0400/0420 and their repeats, decisions §12.4): the approved 0100
 * or 0120 field 90 names (original MTI n4, STAN n6, field 7 n10, acquirer n11, forwarding id n11)
 * is reversed in full, or (field 95's first 12 digits, the actual amount) down to that amount; the
 * payment of an approved 0200 or 0220 named so is returned to the card the same way (a refund).
 * `25` when no approved original matches (or field 2, when sent, is another card's, or field 32 is
 * not the original's: by value, decisions §12.13). Exactly once
 * like an 0100, under the reversal's own identity (class reversal, 32, 11, 7).
 */
export async function reversalAnswer(svc: Services, mti: string, fields: Map<number, string>, audit?: ImportAudit): Promise<LinkAnswer> {
  const acquirer = fields.get(32);
  const transmitted = fields.get(7);
  const stan = fields.get(11) as string;
  const f90 = fields.get(90);
  const f95 = fields.get(95);
  if (!acquirer || !transmitted || !f90) return { code: ResponseCode.formatError };
  if (f95 !== undefined && !/^\d{12}/.test(f95)) return { code: ResponseCode.formatError };
  const db = svc.database.db;
  const identity = linkIdentity('reversal', acquirer, stan, transmitted);
  const hash = await contentHash(svc, fields);
  const stored = await storedAnswer(db, identity, hash);
  if (stored) return { ...stored, replayed: true };

  const originalMti = f90.slice(0, 4);
  const ofAuthorization = ['0100', '0101', '0120', '0121'].includes(originalMti);
  if (!ofAuthorization && !['0200', '0201', '0220', '0221'].includes(originalMti)) return { code: ResponseCode.originalNotFound };
  // Only the acquirer that sent the original reverses it (decisions §12.13): another's is 25.
  const original = await originalMessage(db, ofAuthorization ? 'authorization' : 'financial', f90, acquirer);
  if (original?.code !== ResponseCode.approved || !original.tradeId || !original.cardId || !original.merchantId)
    return { code: ResponseCode.originalNotFound };
  const pan = fields.get(2);
  if (pan !== undefined && (await cardByPan(svc, pan))?.id !== original.cardId) return { code: ResponseCode.originalNotFound };

  const input = {
    record: { identity, contentHash: hash, mti, request: storedCopy(fields) },
    tradeId: original.tradeId,
    cardId: original.cardId,
    actual: f95 === undefined ? null : Number(f95.slice(0, 12)),
  };
  const run = {
    actor: `network:${acquirer}`,
    merchantId: original.merchantId,
    ...(audit ? { audit: audit(original.cardId) } : {}),
  };
  try {
    // An 0200 or 0220 posted a payment: reversing it returns the payment (a refund).
    if (!ofAuthorization) return await runVerb(svc, linkReversePayment, { input, ...run });
    return await runVerb(svc, linkReverse, { input: { ...input, advice: mti === '0420' || mti === '0421' }, ...run });
  } catch (err) {
    if (err instanceof LinkReplay) {
      const first = await storedAnswer(db, identity, hash);
      return first ? { ...first, replayed: true } : { code: ResponseCode.systemError };
    }
    const code = failureCode(err);
    if (code === ResponseCode.systemError)
      svc.log.error({ err: { name: (err as Error).name, message: (err as Error).message }, stan }, 'network link: reversal failed');
    return { code };
  }
}
