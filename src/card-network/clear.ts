import type { Kysely } from 'kysely';
import type { Services } from '../context.js';
import { forUpdate } from '../db/locks.js';
import type { DB } from '../db/schema.js';
import { DomainError } from '../errors.js';
import { ResponseCode } from '../iso8583/response-codes.js';
import type { LedgerCtx } from '../ledger/context.js';
import { forcedClear, forcedRefund } from '../ledger/forced.js';
import { lockCard, lockedTrade } from '../ledger/locks.js';
import { clear, refund } from '../ledger/settle.js';
import { isSuspended, type Suspended, suspend } from '../ledger/suspense.js';
import { MAX_MINOR, toMajor, toMinor } from '../money/currency.js';
import { runVerb } from '../runner.js';
import { partsOf } from '../trades/network-reads.js';
import { TradeStatus, TradeType } from '../trades/types.js';
import { acceptorRemark, cardPart, cardTotal, linkAmounts, type Whole } from './amounts.js';
import { cardByPan } from './card-data.js';
import {
  adviceMessage,
  claim,
  type LinkAnswer,
  type LinkClass,
  type LinkRecord,
  linkIdentity,
  originalMessage,
  originalOf,
} from './identity.js';
import type { ImportAudit } from './import-audit.js';
import { onceByIdentity, type Step } from './once.js';

/**
 * Financial advices of the card network link (0220, decisions §12.4): the clearing of an approved
 * 0100 (or 0120), and a refund of a cleared payment, each named by field 90, by the sandbox's `clear`
 * and `refund` verbs, and claimed once with the answer. A clearing above what is held, of an
 * authorization that holds nothing any more, or with no original, and a refund with no original,
 * are forced posts (§12.7, src/ledger/forced.ts): posted, `00`, marked `forced`.
 */

interface LinkFinancialInput {
  record: LinkRecord;
  /** The authorization (clearing) or payment (refund) field 90 names; null: none found (a forced post). */
  tradeId: string | null;
  cardId: string;
  /** Field 4, in minor units of the original's transaction currency (with an original). */
  amount: number;
  /** Without an original: the amount in the card's currency and the transaction's (minor units), from fields 4/49 (6/51). */
  priced?: { amount: number; currencyTxn: string; txnAmount: number; remark?: string | undefined } | undefined;
  /** A refund of a clearing held in suspense (issue 39's attack pass, F6): the clearing's exception; the refund waits with it. */
  heldClearing?: string | undefined;
  /** A clearing of an authorization advice (0120) held in suspense: the advice's identity (its exception's). */
  heldAdvice?: { acquirer: string; stan: string; transmitted: string } | undefined;
}

/**
 * The authorization advice a clearing names was posted by an operator between the look at its
 * message and this clearing's transaction: the clearing is decided again, and then takes its hold.
 */
export class AdviceDecided extends Error {
  override name = 'AdviceDecided';
}

/**
 * A clearing of an authorization advice held in suspense (issue 39's attack pass, F5): the advice's
 * exception, locked before the card (the operator's post takes it first too, so the two are in one
 * order), so that the clearing and the operator's post of the advice cannot both happen. Open: the
 * clearing is posted without it (a forced post), and the exception is marked with what it posted and
 * why its hold must not be posted now. Posted meanwhile: AdviceDecided. Returned: nothing to mark.
 */
async function lockHeldAdvice(ctx: LedgerCtx, advice: NonNullable<LinkFinancialInput['heldAdvice']>) {
  const row = await forUpdate(
    ctx.tx,
    ctx.tx
      .selectFrom('network_exceptions')
      .select(['id', 'status', 'reason'])
      .where('msg_class', '=', 'authorization')
      .where('acquirer', '=', advice.acquirer)
      .where('stan', '=', advice.stan)
      .where('transmitted', '=', advice.transmitted)
      .where('kind', '=', 'authorization'),
  ).executeTakeFirst();
  if (row?.status === 'posted') throw new AdviceDecided();
  return row?.status === 'open' ? row : null;
}

async function markConsumed(ctx: LedgerCtx, advice: { id: string; reason: string }, answer: LinkAnswer): Promise<void> {
  const by = answer.tradeId ?? answer.exceptionId;
  if (answer.code !== ResponseCode.approved || !by) return;
  const why = `its clearing was posted without it (${by}): posting its hold too would charge the card twice; return it`;
  await ctx.tx
    .updateTable('network_exceptions')
    .set({ consumed_by: by, reason: `${why}. Held: ${advice.reason}`.slice(0, 300) })
    .where('id', '=', advice.id)
    .execute();
}

/**
 * A clearing's field 4 (the original's transaction currency) in the card's, at the authorization's
 * own ratio: the first clearing is a total of the authorization, rounded once (as the clearing
 * file's check in src/card-network/clearing-file.ts converts it); a further one (an authorization
 * cleared before: a forced post) a part after its payments (src/card-network/amounts.ts).
 */
async function clearingInCardCurrency(ctx: LedgerCtx, auth: Whole & { id: string; held: number }, f4: number): Promise<number> {
  const before = auth.held > 0 ? { card: 0, txn: 0 } : await partsOf(ctx.tx, auth.id, TradeStatus.success);
  return cardPart(auth, before, f4);
}

/** Refusals of the verbs before any write, as field 39. */
function refusal(err: unknown): LinkAnswer {
  if (err instanceof DomainError && err.kind === 'tradeState') return { code: ResponseCode.invalidTransaction };
  if (err instanceof DomainError && err.kind === 'incorrectAmount') return { code: ResponseCode.invalidAmount };
  throw err;
}

const answered = (r: { authCode: string; tradeId: string }, forced = false): LinkAnswer => ({
  code: ResponseCode.approved,
  authCode: r.authCode,
  tradeId: r.tradeId,
  ...(forced ? { forced: true } : {}),
});

/** A forced post's answer: `00` also when it was held in suspense above its ceilings (§12.13). */
const forcedAnswer = (r: { authCode: string; tradeId: string } | Suspended): LinkAnswer =>
  isSuspended(r) ? { code: ResponseCode.approved, forced: true, exceptionId: r.exceptionId } : answered(r, true);

/**
 * An 0220 clearing: of an approved 0100 that still holds at least field 4, the sandbox's `clear`
 * (the rest of the hold released); otherwise (above the hold, nothing held any more, no original)
 * a forced post of field 4.
 */
export async function linkClear({ ctx, input }: { ctx: LedgerCtx; input: LinkFinancialInput }): Promise<LinkAnswer> {
  let answer: LinkAnswer;
  try {
    if (input.tradeId === null) {
      const p = input.priced;
      if (!p) throw new Error('a clearing without an original needs its amounts');
      const advice = input.heldAdvice ? await lockHeldAdvice(ctx, input.heldAdvice) : null;
      answer = forcedAnswer(
        await forcedClear({ ctx, input: { cardId: input.cardId, tradeId: null, ...p, message: adviceMessage(input.record) } }),
      );
      if (advice) await markConsumed(ctx, advice, answer);
    } else {
      const { trade: auth, card } = await lockedTrade(ctx, input.tradeId);
      const amount = await clearingInCardCurrency(ctx, auth, input.amount);
      const holds = auth.trade_type === TradeType.authorization && auth.trade_status === TradeStatus.success && auth.held > 0;
      // At the authorization's ratio, beyond the largest amount one operation may move: 13, as a typed one.
      if (amount <= 0 || amount > MAX_MINOR) answer = { code: ResponseCode.invalidAmount };
      else if (holds && amount <= auth.held) {
        const cleared = await clear({
          ctx,
          input: { tradeId: input.tradeId, amount: toMajor(amount, card.currency) },
          txnAmount: input.amount,
        });
        answer = answered(cleared);
      } else {
        const payment = await forcedClear({
          ctx,
          input: {
            cardId: card.id,
            tradeId: auth.id,
            amount,
            currencyTxn: auth.currency_txn,
            txnAmount: input.amount,
            message: adviceMessage(input.record),
          },
        });
        answer = forcedAnswer(payment);
      }
    }
  } catch (err) {
    answer = refusal(err);
  }
  await claim(ctx, input.record, input.cardId, answer);
  return answer;
}

/**
 * A refund of a clearing held in suspense (issue 39's attack pass, F6): the card was not charged, so
 * it is not credited either. The clearing's exception is locked first (as an operator's decision
 * claims it first); still undecided or returned, the refund is held too, as a `refund` exception
 * naming it, moving no money (`suspended` 0): it is posted when its clearing is posted, returned when
 * it is returned (src/ledger/exceptions.ts). Posted meanwhile: AdviceDecided (decided again: a refund
 * of the payment the post made).
 */
async function heldRefund(ctx: LedgerCtx, input: LinkFinancialInput, clearingId: string): Promise<LinkAnswer> {
  const clearing = await forUpdate(
    ctx.tx,
    ctx.tx.selectFrom('network_exceptions').selectAll().where('id', '=', clearingId).where('kind', '=', 'clearing'),
  ).executeTakeFirst();
  if (!clearing) throw new Error(`no held clearing ${clearingId}`);
  if (clearing.status === 'posted') throw new AdviceDecided();
  const card = await lockCard(ctx, input.cardId);
  // Field 4 in the clearing's transaction currency, at its own ratio; at most what it would have charged.
  const amount = cardTotal({ amount: Number(clearing.amount), txn_amount: Number(clearing.txn_amount) }, input.amount);
  if (amount <= 0 || amount > Number(clearing.amount)) return { code: ResponseCode.invalidAmount };
  const why =
    clearing.status === 'open'
      ? `a refund of the clearing held in suspense as ${clearing.id}: it waits with it (posted or returned with it)`
      : `a refund of the clearing ${clearing.id}, returned to the network: the card was never charged; return it`;
  const held = await suspend(ctx, {
    kind: 'refund',
    message: adviceMessage(input.record),
    card,
    amount,
    currencyTxn: clearing.currency_txn,
    txnAmount: input.amount,
    originalId: null,
    details: {},
    reason: why,
    heldWith: clearing.id,
  });
  return { code: ResponseCode.approved, forced: true, exceptionId: held.exceptionId };
}

/** An 0220 with processing code 20: a refund of field 4 of the payment field 90's clearing produced; without one, a forced credit. */
export async function linkRefund({ ctx, input }: { ctx: LedgerCtx; input: LinkFinancialInput }): Promise<LinkAnswer> {
  let answer: LinkAnswer;
  try {
    if (input.heldClearing) answer = await heldRefund(ctx, input, input.heldClearing);
    else if (input.tradeId === null) {
      const p = input.priced;
      if (!p) throw new Error('a refund without an original needs its amounts');
      const [record] = await forcedRefund({ ctx, input: { cardId: input.cardId, payments: [], ...p } });
      answer = record ? answered(record, true) : { code: ResponseCode.invalidTransaction };
    } else {
      const { trade: payment, card } = await lockedTrade(ctx, input.tradeId);
      // A part of the payment: allocated after its refunds so far, so refunds of the whole sum to it.
      const before = await partsOf(ctx.tx, payment.id, TradeStatus.refund);
      const amount = cardPart(payment, { txn: before.txn, card: payment.refunded }, input.amount);
      if (amount <= 0 || amount > MAX_MINOR) answer = { code: ResponseCode.invalidAmount };
      else {
        const record = await refund({
          ctx,
          input: { tradeId: input.tradeId, amount: toMajor(amount, card.currency) },
          txnAmount: input.amount,
        });
        answer = answered(record);
      }
    }
  } catch (err) {
    answer = refusal(err);
  }
  await claim(ctx, input.record, input.cardId, answer);
  return answer;
}

/**
 * A reversal (0400/0420, decisions §12.4) of an 0200 or an 0220 clearing: its payment is returned
 * to the card, all that was not refunded yet (no field 95) or all beyond field 95's actual amount
 * (what the transaction came to, in the original's transaction currency), by the sandbox's `refund`
 * (a status 10 record, its `trade` callback), and the message claimed with its answer, in one
 * transaction. A payment with nothing left to return is `12`; an actual amount above what is left,
 * `13`; an original that is not a payment (a refund's 0220), `12`.
 */
export async function linkReversePayment({
  ctx,
  input,
}: {
  ctx: LedgerCtx;
  input: { record: LinkRecord; tradeId: string; cardId: string; actual: number | null };
}): Promise<LinkAnswer> {
  let answer: LinkAnswer;
  const { trade: payment, card } = await lockedTrade(ctx, input.tradeId);
  const left = payment.amount - payment.refunded;
  // What the payment keeps is field 95's actual amount (a total): the refunds so far and this one
  // take the rest of the transaction amount, allocated as the refunds' parts are.
  const before = await partsOf(ctx.tx, payment.id, TradeStatus.refund);
  const txnPart = payment.txn_amount - before.txn - (input.actual ?? 0);
  const amount = input.actual === null ? left : cardPart(payment, { txn: before.txn, card: payment.refunded }, txnPart);
  if (payment.trade_type !== TradeType.payment || payment.trade_status !== TradeStatus.success || left === 0)
    answer = { code: ResponseCode.invalidTransaction };
  else if (amount < 0 || amount > left) answer = { code: ResponseCode.invalidAmount };
  else if (amount === 0) answer = answered({ authCode: payment.auth_code, tradeId: payment.id });
  else {
    try {
      const asked = { tradeId: payment.id, amount: toMajor(amount, card.currency) };
      answer = answered(await refund({ ctx, input: asked, txnAmount: Math.max(0, txnPart) }));
    } catch (err) {
      answer = refusal(err);
    }
  }
  await claim(ctx, input.record, input.cardId, answer);
  return answer;
}

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
  const f4 = fields.get(4);
  if (!acquirer || !transmitted || !processing || !f4) return { code: ResponseCode.formatError };
  const kind = processing.slice(0, 2);
  if (!['00', '01', '20'].includes(kind) || processing.slice(2) !== '0000') return { code: ResponseCode.invalidTransaction };
  return onceByIdentity(
    svc,
    {
      msgClass: 'financial',
      mti,
      fields,
      what: 'financial advice',
      marksCopies: true,
      // The held advice was posted meanwhile: decided again, this clearing now takes its hold.
      again: (err) => (err instanceof AdviceDecided && !again ? financialAdvice(svc, mti, fields, audit, true) : undefined),
    },
    async (record): Promise<Step> => {
      const f90 = fields.get(90);
      const refund = kind === '20';
      const accepted = refund ? ['0200', '0201', '0220', '0221'] : ['0100', '0101', '0120', '0121'];
      const originalClass: LinkClass = refund ? 'financial' : 'authorization';
      // Field 90 naming what cannot be this one's original (a clearing of an 0200, already cleared) is
      // refused as before; naming an original not found, or absent, makes a forced post.
      if (f90 && !accepted.includes(f90.slice(0, 4))) return { code: ResponseCode.invalidTransaction };
      // Another acquirer's clearing does not name this original (decisions §12.13): a forced post.
      const original = f90 ? await svc.database.read((db) => originalMessage(db, originalClass, f90, acquirer)) : null;
      const pan = fields.get(2);
      const byPan = pan === undefined ? null : await svc.database.read((db) => cardByPan(svc, db, pan));
      if (pan !== undefined && !byPan) return { code: ResponseCode.noSuchCard };
      const amount = Number(f4);
      if (amount === 0) return { code: ResponseCode.invalidAmount };
      let found = original?.code === ResponseCode.approved && original.tradeId && original.cardId && original.merchantId ? original : null;
      if (found && byPan && byPan.id !== found.cardId) return { code: ResponseCode.invalidTransaction };
      // A refund of a clearing held in suspense (§12.13) is held with it, or refunds the payment its post made.
      const heldClearing =
        !found && refund && original?.code === ResponseCode.approved && !original.tradeId && f90
          ? await svc.database.read((db) => heldClearingOf(db, f90))
          : null;
      if (heldClearing?.status === 'posted' && heldClearing.trade_id) {
        found = { ...(original as NonNullable<typeof original>), tradeId: heldClearing.trade_id };
      }
      // An authorization advice held in suspense (§12.13) acted on no trade: its clearing is forced on its card.
      const heldAdvice =
        !found && !refund && original?.code === ResponseCode.approved && original.cardId && !original.tradeId ? original.cardId : null;
      if (heldAdvice && byPan && byPan.id !== heldAdvice) return { code: ResponseCode.invalidTransaction };
      const card =
        byPan ??
        (heldAdvice
          ? await svc.database.read((db) => db.selectFrom('cards').selectAll().where('id', '=', heldAdvice).executeTakeFirst())
          : null);
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

      return {
        verb: () =>
          runVerb(svc, refund ? linkRefund : linkClear, {
            input: {
              record,
              tradeId: target.tradeId,
              cardId: target.cardId,
              amount,
              priced: target.priced,
              heldClearing: heldClearing && heldClearing.status !== 'posted' ? heldClearing.id : undefined,
              // The advice's exception is locked and marked with the clearing (linkClear, above).
              heldAdvice: heldAdvice && f90 ? heldIdentity(f90) : undefined,
            },
            actor: { kind: 'network', peer: acquirer },
            merchantId: target.merchantId,
            ...(audit ? { audit: audit(target.cardId) } : {}),
          }),
      };
    },
  );
}

/** The identity of the authorization advice field 90 names, as its exception keeps it. */
function heldIdentity(f90: string): { acquirer: string; stan: string; transmitted: string } {
  const o = originalOf(f90);
  const id = linkIdentity('authorization', o.acquirer, o.stan, o.transmitted);
  return { acquirer: id.acquirer, stan: id.stan, transmitted: id.transmitted };
}

/** The clearing exception the message field 90 names was held as (class financial), or null. */
async function heldClearingOf(db: Kysely<DB>, f90: string) {
  const o = originalOf(f90);
  const id = linkIdentity('financial', o.acquirer, o.stan, o.transmitted);
  return (
    (await db
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
