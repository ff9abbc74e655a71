import type { Kysely } from 'kysely';
import { resetVerificationFailures, verifiedBoth } from '../cards/verification.js';
import type { DB, NetworkMessagesTable } from '../db/schema.js';
import { CommittedFailure, DomainError } from '../errors.js';
import { ResponseCode } from '../iso8583/response-codes.js';
import { type AuthorizeInput, authorize, declineInquiry } from '../ledger/authorize.js';
import { balanceInquiry } from '../ledger/balance-inquiry.js';
import { reverse } from '../ledger/cancel.js';
import type { LedgerCtx } from '../ledger/context.js';
import { forcedAuthorize, forcedRefund } from '../ledger/forced.js';
import { heldAuthorization } from '../ledger/held-part.js';
import { lockCard } from '../ledger/locks.js';
import { clear } from '../ledger/settle.js';
import { type AdviceMessage, isSuspended } from '../ledger/suspense.js';
import { toMajor } from '../money/currency.js';
import { paymentsOf, tradeAmounts } from '../trades/books.js';
import { DeclineReason, type DeclineReasonValue } from '../trades/types.js';
import { cardTotal } from './link-amounts.js';

/**
 * The card network link's verbs (decisions §12, docs/network.md): what an ISO 8583 message does,
 * once. The transport (src/network-link/) reads the message, finds the card, and calls these; the
 * sandbox's HTTP simulations call the same ledger verbs (authorize, balanceInquiry) inside them.
 */

export type LinkClass = NetworkMessagesTable['msg_class'];

/** A message's identity (decisions §12.6): its class, field 32, field 11 and field 7, by value (linkIdentity). */
export interface LinkIdentity {
  msgClass: LinkClass;
  acquirer: string;
  stan: string;
  transmitted: string;
}

/** Digits as the number they write (decisions §12.13, identity by value): without leading zeros (`0412345` is `412345`). */
export const byValue = (digits: string) => digits.replace(/^0+(?=\d)/, '');

/**
 * A message's identity by value, built once here for every class (decisions §12.13): field 32 (n..11,
 * variable) without leading zeros, fields 11 and 7 (n6, n10) at their fixed widths. Stored so
 * (migration 0025), so the unique key and the field 90 look-ups compare numbers.
 */
export function linkIdentity(msgClass: LinkClass, acquirer: string, stan: string, transmitted: string): LinkIdentity {
  return {
    msgClass,
    acquirer: byValue(acquirer),
    stan: byValue(stan).padStart(6, '0'),
    transmitted: byValue(transmitted).padStart(10, '0'),
  };
}

/** The original field 90 names: its MTI, STAN, field 7 and acquirer (n11), the acquirer by value. */
export function originalOf(f90: string): { mti: string; stan: string; transmitted: string; acquirer: string } {
  return { mti: f90.slice(0, 4), stan: f90.slice(4, 10), transmitted: f90.slice(10, 20), acquirer: byValue(f90.slice(20, 31)) };
}

/** What an answer carries beside the fields it echoes: field 39, and 38 and 54 when they apply. */
export interface LinkAnswer {
  /** Field 39 (decisions §12.5). */
  code: string;
  /** Field 38: the trade's authCode, on an approval. */
  authCode?: string | undefined;
  /** Field 54, a balance inquiry's available balance. */
  balance?: string | undefined;
  /** The trade or declined authorization the message produced. */
  tradeId?: string | undefined;
  /** A forced post (decisions §12.7): posted though the rules would have refused it. */
  forced?: boolean | undefined;
  /** A forced post above its ceilings (§12.13): acknowledged, held in suspense as this exception, not on the card. */
  exceptionId?: string | undefined;
  /**
   * Never stored: this answer is the one another copy of the message stored when it acted (a
   * repeat, or a copy that won the claim first: the link, another import); this copy did nothing.
   */
  replayed?: true | undefined;
}

/** The message as the exception of an advice held in suspense keeps it (§12.13). */
export const adviceMessage = (record: LinkRecord): AdviceMessage => ({ ...record.identity, mti: record.mti });

/** What is stored of a message: its identity, a keyed hash of its content, its fields of §12.3 with the PAN masked and no CVV2. */
export interface LinkRecord {
  identity: LinkIdentity;
  contentHash: string;
  mti: string;
  request: Record<string, string>;
}

/** The same identity was claimed by a message that committed first: its answer is the answer. */
export class LinkReplay extends Error {
  override name = 'LinkReplay';
}

/** The answer's deadline passed before the decision could commit: nothing is written, the answer is 91. */
export class DeadlinePassed extends Error {
  override name = 'DeadlinePassed';
}

/**
 * Where an 0100/0200's decision and its deadline meet, once (decisions §12.8). The verb enters it
 * right before its claim and commit; the deadline's timer closes it before answering 91. Whichever
 * comes first wins: a decision that entered is waited for (its answer is the truth, even a little
 * late), and one that finds the gate closed rolls back, so that a 91 always means nothing was written.
 * Without it a commit still running at the deadline was answered 91 and stored as decided, and a
 * retransmission got another answer than the first. Both sides run on the process's one thread,
 * so checking and setting the state cannot interleave.
 */
export class DecisionGate {
  private state: 'open' | 'committing' | 'closed' = 'open';
  private joined: DecisionGate | null = null;

  /** A copy of a message still being decided: its deadline meets that decision's gate. */
  join(running: DecisionGate): void {
    this.joined = running;
  }

  /** The verb, before its claim: true when it may commit (after which the answer waits for it), false past `deadline` or once 91 was answered. */
  enter(now: number, deadline: number): boolean {
    if (this.joined) return this.joined.enter(now, deadline);
    if (this.state === 'committing') return true; // a transaction run again (a deadlock's victim)
    if (this.state === 'closed' || now > deadline) {
      this.state = 'closed';
      return false;
    }
    this.state = 'committing';
    return true;
  }

  /** The deadline: true when the decision can no longer commit (91 may be answered), false when it is committing. */
  close(): boolean {
    if (this.joined) return this.joined.close();
    if (this.state === 'committing') return false;
    this.state = 'closed';
    return true;
  }
}

/** Response code `94`: a new message reusing another's identity with other content. */
export const DUPLICATE = ResponseCode.duplicate;

/**
 * The stored answer of a message with this identity: its answer when the content is the same, `94`
 * when it is not, null when no message with this identity acted.
 */
export async function storedAnswer(db: Kysely<DB>, identity: LinkIdentity, contentHash: string): Promise<LinkAnswer | null> {
  const row = await db
    .selectFrom('network_messages')
    .select(['content_hash', 'answer'])
    .where('msg_class', '=', identity.msgClass)
    .where('acquirer', '=', identity.acquirer)
    .where('stan', '=', identity.stan)
    .where('transmitted', '=', identity.transmitted)
    .executeTakeFirst();
  if (!row) return null;
  if (row.content_hash !== contentHash) return { code: DUPLICATE };
  return JSON.parse(row.answer) as LinkAnswer;
}

/** Claims the identity with the answer, in the verb's transaction; a message that claimed it first makes this one a replay. */
export async function claim(ctx: LedgerCtx, record: LinkRecord, cardId: string, answer: LinkAnswer): Promise<void> {
  const { identity } = record;
  const inserted = await ctx.tx
    .insertInto('network_messages')
    .values({
      msg_class: identity.msgClass,
      acquirer: identity.acquirer,
      stan: identity.stan,
      transmitted: identity.transmitted,
      content_hash: record.contentHash,
      mti: record.mti,
      merchant_id: ctx.merchantId,
      card_id: cardId,
      trade_id: answer.tradeId ?? null,
      response_code: answer.code,
      answer: JSON.stringify(answer),
      request: JSON.stringify(record.request),
      created_at: ctx.now,
    })
    .onConflict((oc) => oc.columns(['msg_class', 'acquirer', 'stan', 'transmitted']).doNothing())
    .executeTakeFirst();
  // On PostgreSQL a concurrent duplicate waits here for the first one's commit, then inserts
  // nothing; its own effect is rolled back with it (LinkReplay) and the first answer read.
  if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 0) throw new LinkReplay();
}

/** Field 39 for a decline reason of the sandbox's (decisions §12.5); a card status decline by the card's status. */
export function declineCode(reason: DeclineReasonValue | undefined, cardStatus: string): string {
  switch (reason) {
    case DeclineReason.cardInactive:
      return cardStatus === 'closed' ? ResponseCode.cardClosed : ResponseCode.restrictedCard;
    case DeclineReason.insufficientFunds:
      return ResponseCode.insufficientFunds;
    case DeclineReason.spendingLimit:
      return ResponseCode.exceedsAmountLimit;
    case DeclineReason.mccNotAllowed:
    case DeclineReason.mccBlocked:
    case DeclineReason.countryNotAllowed:
    case DeclineReason.countryBlocked:
    case DeclineReason.channelNotAllowed:
    case DeclineReason.walletNotAllowed:
      return ResponseCode.notPermitted;
    case DeclineReason.expiryMismatch:
      return ResponseCode.expiredCard;
    case DeclineReason.cvv2Mismatch:
      return ResponseCode.cvv2Mismatch;
    case DeclineReason.authenticationRequired:
      // Additional customer authentication required (decisions §14.5); authentication_failed is a 05.
      return ResponseCode.authenticationRequired;
    default:
      return ResponseCode.doNotHonor;
  }
}

export interface LinkAuthorizeInput {
  record: LinkRecord;
  /** `authorize`: processing codes 00 and 01; `balance`: 31; `financial`: an 0200's 00 and 01, authorized and cleared at once. */
  kind: 'authorize' | 'balance' | 'financial';
  authorize: AuthorizeInput;
  /** When the answer is due (epoch ms): a decision not made by then is rolled back. */
  deadline: number;
  /** Where the decision and the deadline's 91 meet: one of them, never both. */
  gate: DecisionGate;
}

/** Field 54's balance: account type 00, amount type 02 (available), currency n3, sign, amount n12. */
export function balanceField(minor: number, currencyCode: string): string {
  return `0002${currencyCode}${minor < 0 ? 'D' : 'C'}${String(Math.abs(minor)).padStart(12, '0')}`;
}

/**
 * An 0100 (decisions §12.4): the sandbox's `authorize` (or `balanceInquiry` for processing 31), and
 * the message's claim with its answer, in one transaction. A decline is committed and answered
 * with its code; a retransmission finds the claim (LinkReplay) and is answered as the first was.
 */
export async function linkAuthorize({
  ctx,
  input,
}: {
  ctx: LedgerCtx;
  input: LinkAuthorizeInput & { currencyCode: string };
}): Promise<LinkAnswer> {
  const cardId = input.authorize.cardId;
  let answer: LinkAnswer;
  // A balance inquiry's card data is checked as an authorization's (it would tell a CVV2 too).
  const declined = input.kind === 'balance' ? await declineInquiry(ctx, input.authorize) : null;
  if (declined) answer = { code: declineCode(declined.reason, 'active'), tradeId: declined.tradeId };
  else if (input.kind === 'balance') {
    try {
      const trade = await balanceInquiry({ ctx, input: { cardId } });
      const card = await lockCard(ctx, cardId);
      if (verifiedBoth(input.authorize.verification) && card.verification_failures !== null)
        await resetVerificationFailures(ctx.tx, cardId);
      answer = {
        code: ResponseCode.approved,
        authCode: trade.authCode,
        tradeId: trade.tradeId,
        balance: balanceField(card.available_balance, input.currencyCode),
      };
    } catch (err) {
      if (!(err instanceof DomainError) || err.kind !== 'cardStatus') throw err;
      // Refused before anything was written: the status decides the code.
      answer = { code: declineCode(DeclineReason.cardInactive, (await lockCard(ctx, cardId)).status) };
    }
  } else {
    try {
      const trade = await authorize({ ctx, input: input.authorize });
      // A single message (0200): the payment at once, in the same transaction.
      const done = input.kind === 'financial' ? await clear({ ctx, input: { tradeId: trade.tradeId } }) : trade;
      answer = { code: ResponseCode.approved, authCode: done.authCode, tradeId: done.tradeId };
    } catch (err) {
      if (!(err instanceof CommittedFailure)) throw err;
      const detail = err.error.detail as { tradeId?: string; declineReason?: DeclineReasonValue } | undefined;
      answer = { code: declineCode(detail?.declineReason, (await lockCard(ctx, cardId)).status), tradeId: detail?.tradeId };
    }
  }
  if (!input.gate.enter(ctx.svc.clock(), input.deadline)) throw new DeadlinePassed();
  await claim(ctx, input.record, cardId, answer);
  return answer;
}

/**
 * An authorization advice (0120, decisions §12.4, §12.7): the network stood in and approved, so it is
 * posted, a forced authorization (src/ledger/forced.ts) whatever the card's status, controls or
 * balance, and claimed with its answer in one transaction. Its hold is cleared, reversed or
 * expired as an 0100's.
 */
export async function linkAdvice({
  ctx,
  input,
}: {
  ctx: LedgerCtx;
  input: { record: LinkRecord; authorize: AuthorizeInput };
}): Promise<LinkAnswer> {
  const trade = await forcedAuthorize({ ctx, input: { ...input.authorize, message: adviceMessage(input.record) } });
  const answer: LinkAnswer = isSuspended(trade)
    ? { code: ResponseCode.approved, forced: true, exceptionId: trade.exceptionId }
    : { code: ResponseCode.approved, authCode: trade.authCode, tradeId: trade.tradeId, forced: true };
  await claim(ctx, input.record, input.authorize.cardId, answer);
  return answer;
}

/**
 * The original a message's field 90 names (its class, STAN, field 7, acquirer), compared by value:
 * the message that acted, or null. Only the acquirer that sent the original names it (decisions
 * §12.13): a message whose own field 32 is another acquirer's finds nothing, whatever its field 90
 * says (then `25` for a reversal, a forced post for a clearing).
 */
export async function originalMessage(
  db: Kysely<DB>,
  msgClass: LinkClass,
  f90: string,
  ownAcquirer: string,
): Promise<{ tradeId: string | null; cardId: string | null; merchantId: string | null; code: string } | null> {
  const original = originalOf(f90);
  if (byValue(ownAcquirer) !== original.acquirer) return null;
  const identity = linkIdentity(msgClass, original.acquirer, original.stan, original.transmitted);
  const row = await db
    .selectFrom('network_messages')
    .select(['trade_id', 'card_id', 'merchant_id', 'response_code'])
    .where('msg_class', '=', identity.msgClass)
    .where('acquirer', '=', identity.acquirer)
    .where('stan', '=', identity.stan)
    .where('transmitted', '=', identity.transmitted)
    .executeTakeFirst();
  return row ? { tradeId: row.trade_id, cardId: row.card_id, merchantId: row.merchant_id, code: row.response_code } : null;
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
export async function linkReverse({ ctx, input }: { ctx: LedgerCtx; input: LinkReverseInput }): Promise<LinkAnswer> {
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
