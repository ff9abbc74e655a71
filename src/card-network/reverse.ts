import type { Services } from '../context.js';
import { DomainError } from '../errors.js';
import { ResponseCode } from '../iso8583/response-codes.js';
import { reverse } from '../ledger/cancel.js';
import type { LedgerCtx } from '../ledger/context.js';
import { forcedRefund } from '../ledger/forced.js';
import { heldAuthorization } from '../ledger/held-part.js';
import { toMajor } from '../money/currency.js';
import { runVerb } from '../runner.js';
import { paymentsOf, tradeAmounts } from '../trades/books.js';
import { cardTotal } from './amounts.js';
import { cardByPan } from './card-data.js';
import { linkReversePayment } from './clear.js';
import { claim, type LinkAnswer, type LinkRecord, originalMessage } from './identity.js';
import type { ImportAudit } from './import-audit.js';
import { onceByIdentity } from './once.js';

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
  const f90 = fields.get(90);
  const f95 = fields.get(95);
  if (!acquirer || !transmitted || !f90) return { code: ResponseCode.formatError };
  if (f95 !== undefined && !/^\d{12}/.test(f95)) return { code: ResponseCode.formatError };
  return onceByIdentity(svc, { msgClass: 'reversal', mti, fields, what: 'reversal', marksCopies: true }, async (record) => {
    const originalMti = f90.slice(0, 4);
    const ofAuthorization = ['0100', '0101', '0120', '0121'].includes(originalMti);
    if (!ofAuthorization && !['0200', '0201', '0220', '0221'].includes(originalMti)) return { code: ResponseCode.originalNotFound };
    // Only the acquirer that sent the original reverses it (decisions §12.13): another's is 25.
    const original = await svc.database.read((db) => originalMessage(db, ofAuthorization ? 'authorization' : 'financial', f90, acquirer));
    if (original?.code !== ResponseCode.approved || !original.tradeId || !original.cardId || !original.merchantId)
      return { code: ResponseCode.originalNotFound };
    const pan = fields.get(2);
    if (pan !== undefined && (await svc.database.read((db) => cardByPan(svc, db, pan)))?.id !== original.cardId)
      return { code: ResponseCode.originalNotFound };

    const input = {
      record,
      tradeId: original.tradeId,
      cardId: original.cardId,
      actual: f95 === undefined ? null : Number(f95.slice(0, 12)),
    };
    const run = {
      actor: { kind: 'network', peer: acquirer } as const,
      merchantId: original.merchantId,
      ...(audit ? { audit: audit(original.cardId) } : {}),
    };
    // An 0200 or 0220 posted a payment: reversing it returns the payment (a refund).
    if (!ofAuthorization) return { verb: () => runVerb(svc, linkReversePayment, { input, ...run }) };
    return { verb: () => runVerb(svc, linkReverse, { input: { ...input, advice: mti === '0420' || mti === '0421' }, ...run }) };
  });
}

export interface LinkReverseInput {
  record: LinkRecord;
  /** The approved authorization's trade. */
  tradeId: string;
  cardId: string;
  /**
   * Field 95's actual amount (minor units of the original's field 4 currency): what the
   * authorization is to hold after the reversal; null: a full reversal.
   */
  actual: number | null;
  /** An advice (0420): after the clearing, it returns what was cleared beyond the actual amount (a forced post). */
  advice?: boolean | undefined;
}

/**
 * A reversal (0400/0420, decisions §12.4) of an approved 0100: the sandbox's `reverse` verb, of all
 * that is held (no field 95) or of what is held beyond field 95's actual amount, and the message's
 * claim, in one transaction. An authorization that holds nothing any more (already reversed or
 * cleared) is `12`; an actual amount above what is held, `13`.
 */
async function linkReverse({ ctx, input }: { ctx: LedgerCtx; input: LinkReverseInput }): Promise<LinkAnswer> {
  let answer: LinkAnswer;
  try {
    const { auth, card } = await heldAuthorization(ctx, { tradeId: input.tradeId }, 'reversed');
    // Field 95 is in the original's transaction currency: a total of the authorization, in the card's
    // at its own ratio, rounded once (so partial reversals down to nothing release the whole hold).
    const actual = input.actual === null ? 0 : cardTotal(auth, input.actual);
    const amount = auth.held - actual;
    if (amount < 0) answer = { code: ResponseCode.invalidAmount };
    else if (amount === 0) answer = { code: ResponseCode.approved, authCode: auth.auth_code, tradeId: auth.id };
    else {
      const record = await reverse({ ctx, input: { tradeId: input.tradeId, amount: toMajor(amount, card.currency) } });
      answer = { code: ResponseCode.approved, authCode: record.authCode, tradeId: record.tradeId };
    }
  } catch (err) {
    if (!(err instanceof DomainError) || err.kind !== 'tradeState') throw err;
    answer = (input.advice ? await reversedAfterClearing(ctx, input) : null) ?? { code: ResponseCode.invalidTransaction };
  }
  await claim(ctx, input.record, input.cardId, answer);
  return answer;
}

/**
 * A reversal advice (0420) of an authorization already cleared (decisions §12.7): the network says
 * the transaction came to the actual amount (field 95; nothing without it), so what its clearings
 * took beyond that, less what was refunded, is returned to the card: a forced refund of its
 * payments. Null when it was not cleared (nothing held, nothing paid: `12` as before).
 */
async function reversedAfterClearing(ctx: LedgerCtx, input: LinkReverseInput): Promise<LinkAnswer | null> {
  const payments = await paymentsOf(ctx.tx, ctx.merchantId, input.tradeId);
  if (payments.length === 0) return null;
  const auth = await tradeAmounts(ctx.tx, input.tradeId);
  const actual = input.actual === null ? 0 : cardTotal(auth, input.actual);
  const cleared = payments.reduce((s, p) => s + p.amount, 0);
  const refunded = payments.reduce((s, p) => s + p.refunded, 0);
  let left = cleared - refunded - actual;
  if (left <= 0) return { code: ResponseCode.approved, authCode: auth.auth_code, tradeId: auth.id };
  const take: Array<{ tradeId: string; amount: number }> = [];
  for (const p of payments) {
    const amount = Math.min(left, p.amount - p.refunded);
    if (amount <= 0) continue;
    take.push({ tradeId: p.id, amount });
    left -= amount;
  }
  const records = await forcedRefund({ ctx, input: { cardId: input.cardId, payments: take, amount: 0, currencyTxn: '', txnAmount: 0 } });
  const last = records[records.length - 1];
  return last
    ? { code: ResponseCode.approved, authCode: last.authCode, tradeId: last.tradeId, forced: true }
    : { code: ResponseCode.invalidTransaction };
}
