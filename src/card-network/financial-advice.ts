import type { Services } from '../context.js';
import { ResponseCode } from '../iso8583/response-codes.js';
import { toMinor } from '../money/currency.js';
import { runVerb } from '../runner.js';
import { acceptorRemark, linkAmounts } from './amounts.js';
import { failureCode } from './authorize.js';
import { cardByPan, contentHash, storedCopy } from './card-data.js';
import type { LinkFinancialInput } from './clear.js';
import { AdviceDecided, linkClear, linkRefund } from './clear.js';
import { type LinkAnswer, type LinkClass, LinkReplay, linkIdentity, originalMessage, originalOf, storedAnswer } from './identity.js';
import type { ImportAudit } from './import-audit.js';

/**
 * A financial advice (0220, or its repeat 0221, decisions §12.4): processing `00`/`01` clears the
 * approved 0100 field 90 names (field 4: the cleared amount); processing `20` refunds field 4 of
 * the payment an earlier 0220 (or 0200) named in field 90 produced (field 90 naming another MTI is
 * `12`). Without such an original (no field 90, or none found) it is a forced post (§12.7) on the card of field 2 (`14` when none;
 * `12` without field 2), its amount from fields 4/49 (or 6/51) as an 0100's. Exactly once under its
 * own identity (class financial, 32, 11, 7). Only the acquirer that sent the original names it (field 32
 * equal by value, decisions §12.13); another's is a forced post as one without an original.
 */
export async function financialAdvice(
  svc: Services,
  mti: string,
  fields: Map<number, string>,
  audit?: ImportAudit,
  again = false,
): Promise<LinkAnswer> {
  const acquirer = fields.get(32);
  const transmitted = fields.get(7);
  const processing = fields.get(3);
  const stan = fields.get(11) as string;
  const f4 = fields.get(4);
  if (!acquirer || !transmitted || !processing || !f4) return { code: ResponseCode.formatError };
  const kind = processing.slice(0, 2);
  if (!['00', '01', '20'].includes(kind) || processing.slice(2) !== '0000') return { code: ResponseCode.invalidTransaction };
  const db = svc.database.db;
  const identity = linkIdentity('financial', acquirer, stan, transmitted);
  const hash = await contentHash(svc, fields);
  const stored = await storedAnswer(db, identity, hash);
  if (stored) return { ...stored, replayed: true };

  const f90 = fields.get(90);
  const refund = kind === '20';
  const accepted = refund ? ['0200', '0201', '0220', '0221'] : ['0100', '0101', '0120', '0121'];
  const originalClass: LinkClass = refund ? 'financial' : 'authorization';
  // Field 90 naming what cannot be this one's original (a clearing of an 0200, already cleared) is
  // refused as before; naming an original not found, or absent, makes a forced post.
  if (f90 && !accepted.includes(f90.slice(0, 4))) return { code: ResponseCode.invalidTransaction };
  // Another acquirer's clearing does not name this original (decisions §12.13): a forced post.
  const original = f90 ? await originalMessage(db, originalClass, f90, acquirer) : null;
  const pan = fields.get(2);
  const byPan = pan === undefined ? null : await cardByPan(svc, pan);
  if (pan !== undefined && !byPan) return { code: ResponseCode.noSuchCard };
  const amount = Number(f4);
  if (amount === 0) return { code: ResponseCode.invalidAmount };
  let found = original?.code === ResponseCode.approved && original.tradeId && original.cardId && original.merchantId ? original : null;
  if (found && byPan && byPan.id !== found.cardId) return { code: ResponseCode.invalidTransaction };
  // A refund of a clearing held in suspense (§12.13) is held with it, or refunds the payment its post made.
  const heldClearing =
    !found && refund && original?.code === ResponseCode.approved && !original.tradeId && f90 ? await heldClearingOf(svc, f90) : null;
  if (heldClearing?.status === 'posted' && heldClearing.trade_id) {
    found = { ...(original as NonNullable<typeof original>), tradeId: heldClearing.trade_id };
  }
  // An authorization advice held in suspense (§12.13) acted on no trade: its clearing is forced on its card.
  const heldAdvice =
    !found && !refund && original?.code === ResponseCode.approved && original.cardId && !original.tradeId ? original.cardId : null;
  if (heldAdvice && byPan && byPan.id !== heldAdvice) return { code: ResponseCode.invalidTransaction };
  const card = byPan ?? (heldAdvice ? await db.selectFrom('cards').selectAll().where('id', '=', heldAdvice).executeTakeFirst() : null);
  let target: { tradeId: string | null; cardId: string; merchantId: string; priced?: LinkFinancialInput['priced'] };
  if (found?.tradeId && found.cardId && found.merchantId)
    target = { tradeId: found.tradeId, cardId: found.cardId, merchantId: found.merchantId };
  else if (heldClearing && heldClearing.status !== 'posted') {
    if (byPan && byPan.id !== heldClearing.card_id) return { code: ResponseCode.invalidTransaction };
    target = { tradeId: null, cardId: heldClearing.card_id, merchantId: heldClearing.merchant_id };
  } else {
    // No original: a forced post (§12.7) on the card field 2 names, its amounts as an 0100's.
    if (!card) return { code: ResponseCode.invalidTransaction };
    const amounts = linkAmounts(fields, card, svc.config.network, svc.config.program.fxRates);
    if ('code' in amounts) return amounts;
    const remark = acceptorRemark(fields);
    target = {
      tradeId: null,
      cardId: card.id,
      merchantId: card.merchant_id,
      priced: {
        amount: toMinor(amounts.amount, card.currency),
        currencyTxn: amounts.currencyTxn,
        txnAmount: toMinor(amounts.txnAmount, amounts.currencyTxn),
        ...(remark ? { remark } : {}),
      },
    };
  }

  try {
    const answer = await runVerb(svc, refund ? linkRefund : linkClear, {
      input: {
        record: { identity, contentHash: hash, mti, request: storedCopy(fields) },
        tradeId: target.tradeId,
        cardId: target.cardId,
        amount,
        priced: target.priced,
        heldClearing: heldClearing && heldClearing.status !== 'posted' ? heldClearing.id : undefined,
        // The advice's exception is locked and marked with the clearing (src/network/link-financial.ts).
        heldAdvice: heldAdvice && f90 ? heldIdentity(f90) : undefined,
      },
      actor: `network:${acquirer}`,
      merchantId: target.merchantId,
      ...(audit ? { audit: audit(target.cardId) } : {}),
    });
    return answer;
  } catch (err) {
    // The held advice was posted meanwhile: decided again, this clearing now takes its hold.
    if (err instanceof AdviceDecided && !again) return financialAdvice(svc, mti, fields, audit, true);
    if (err instanceof LinkReplay) {
      const first = await storedAnswer(db, identity, hash);
      return first ? { ...first, replayed: true } : { code: ResponseCode.systemError };
    }
    const code = failureCode(err);
    if (code === ResponseCode.systemError)
      svc.log.error({ err: { name: (err as Error).name, message: (err as Error).message }, stan }, 'network link: financial advice failed');
    return { code };
  }
}

/** The identity of the authorization advice field 90 names, as its exception keeps it. */
function heldIdentity(f90: string): { acquirer: string; stan: string; transmitted: string } {
  const o = originalOf(f90);
  const id = linkIdentity('authorization', o.acquirer, o.stan, o.transmitted);
  return { acquirer: id.acquirer, stan: id.stan, transmitted: id.transmitted };
}

/** The clearing exception the message field 90 names was held as (class financial), or null. */
async function heldClearingOf(svc: Services, f90: string) {
  const o = originalOf(f90);
  const id = linkIdentity('financial', o.acquirer, o.stan, o.transmitted);
  return (
    (await svc.database.db
      .selectFrom('network_exceptions')
      .select(['id', 'status', 'trade_id', 'card_id', 'merchant_id'])
      .where('msg_class', '=', 'financial')
      .where('acquirer', '=', id.acquirer)
      .where('stan', '=', id.stan)
      .where('transmitted', '=', id.transmitted)
      .where('kind', '=', 'clearing')
      .executeTakeFirst()) ?? null
  );
}
