import { EndpointNotAsked, type EndpointVerdict } from '../authorization-endpoint/verdict.js';
import { notifyMerchant } from '../callbacks/merchant-event.js';
import { eventParts } from '../callbacks/outbox.js';
import { type CardRow, maskedCardNo } from '../cards/model.js';
import {
  type CardVerification,
  presentedCardData,
  recordVerificationFailure,
  resetVerificationFailures,
  type VerificationKind,
  verificationFailure,
  verifiedBoth,
} from '../cards/verification.js';
import { controlsDecision } from '../controls/decide.js';
import type { SpendCheck } from '../controls/spending.js';
import { newId } from '../db/ids.js';
import { type Part, runParts } from '../db/one-statement.js';
import { CommittedFailure, DomainError } from '../errors.js';
import { claimsItsKey } from '../idempotency/keys.js';
import { toMajor } from '../money/currency.js';
import {
  type AuthenticationOutcome,
  authenticationOutcome,
  lockExemption,
  needsAuthentication,
  readExemption,
  recordAuthentication,
  refusalWords,
} from '../three-ds/authorization.js';
import type { CardState } from '../three-ds/card-state.js';
import { checkAuthorizationToken, type TokenCheck, type TokenReference } from '../tokens/authorization.js';
import { type TradeRecord, toAuthorization, toTradeRecord } from '../trades/record.js';
import { DeclineReason, type DeclineReasonValue, TradeStatus, TradeType } from '../trades/types.js';
import { type AuthorizeInput, authorizationRow, type Decision, type Priced, price, remarkOf } from './authorization-input.js';
import { tradeRow } from './book.js';
import { bookAtOnce, lockCardAtOnce } from './book-at-once.js';
import { resolveBusinessDate } from './business-date.js';
import type { LedgerCtx } from './context.js';
import { Account } from './journal.js';
import { lockCard } from './locks.js';

/** The token an authorization names, if any: the sandbox's `tokenId` or the link's reference. */
const tokenOf = (input: AuthorizeInput): TokenReference | undefined =>
  input.tokenId !== undefined ? { tokenId: input.tokenId } : input.tokenReference;

/**
 * The authorization as 3-D Secure reads it: one made with a wallet token needs no authentication
 * value (decisions §15.5; a token that is not the card's active one is declined before 3-D Secure decides).
 */
const threeDsOf = (input: AuthorizeInput): AuthorizeInput & { tokenized?: true } =>
  tokenOf(input) === undefined ? input : { ...input, tokenized: true };

/** A decline the program's own rules decide: the reason and the error the request is answered with. */
interface ProgramDecline {
  reason: DeclineReasonValue;
  error: DomainError;
}

/** The declines of card verification (decisions §12.13): a mismatch (counted), a required CVV2 left out (not). */
const VERIFICATION_DECLINES: Record<VerificationKind | 'missing', () => ProgramDecline> = {
  expiry: () => ({ reason: DeclineReason.expiryMismatch, error: new DomainError('cardVerification', 'expiry: not the card’s expiry') }),
  cvv2: () => ({ reason: DeclineReason.cvv2Mismatch, error: new DomainError('cardVerification', 'cvv2: not the card’s CVV2') }),
  missing: () => ({
    reason: DeclineReason.cardVerificationMissing,
    error: new DomainError('cardVerification', 'cvv2: required for a key-entered or e-commerce authorization'),
  }),
};

/** The decline reasons a card verification failure is counted under. */
const COUNTED: Partial<Record<DeclineReasonValue, VerificationKind>> = {
  [DeclineReason.expiryMismatch]: 'expiry',
  [DeclineReason.cvv2Mismatch]: 'cvv2',
};

/** The decline 3-D Secure decides (decisions §14.5), or null. */
function authenticationDecline(a: AuthenticationOutcome): ProgramDecline | null {
  if (a.kind === 'refused')
    return {
      reason: DeclineReason.authenticationFailed,
      error: new DomainError('authenticationFailed', `authenticationValue: refused, ${refusalWords(a.reason)}`),
    };
  if (a.kind === 'required')
    return {
      reason: DeclineReason.authenticationRequired,
      error: new DomainError(
        'authenticationRequired',
        'authenticationValue: an e-commerce authorization needs 3-D Secure (CARDPROGRAM_3DS_REQUIRED), outside the low-value exemption',
      ),
    };
  return null;
}

/** What 3-D Secure says of this authorization, its amounts priced (`state`: the card's exemption counters, when they may decide). */
function authenticationOf(ctx: LedgerCtx, card: CardRow, input: AuthorizeInput, priced: Priced, state: CardState | null) {
  return authenticationOutcome(ctx, {
    cardId: card.id,
    txnAmount: priced.txnAmount,
    currencyTxn: priced.currencyTxn,
    amount: priced.amount,
    state,
    eci: input.eci,
    authenticationValue: input.authenticationValue,
    channel: input.channel,
    credentialOnFile: input.credentialOnFile,
    tokenized: tokenOf(input) !== undefined,
  });
}

/** What the card data presented came to: the link's, or the body's `cvv2`/`expiry` (the sandbox's) checked against the card; undefined when none was. */
async function verificationOf(ctx: LedgerCtx, card: CardRow, input: AuthorizeInput): Promise<CardVerification | undefined> {
  if (input.verification) return input.verification;
  if (input.cvv2 === undefined && input.expiry === undefined) return undefined;
  const presented = await presentedCardData(ctx.svc, ctx.tx, card, { cvv2: input.cvv2, expiry: input.expiry });
  return { ...presented, cvv2Required: false, via: 'sandbox' };
}

/**
 * The program's rules, in order (docs/transactions.md, "Authorization decisions"): the card's status,
 * the card data presented (expiry, CVV2), its spending controls (channel, categories, countries, then limits), its available balance. On the
 * verb's transaction with the card locked the answer holds until the commit; `check` is prepared to
 * count the authorization against the limits once the money has moved.
 */
async function programDecision(
  ctx: LedgerCtx,
  card: CardRow,
  input: AuthorizeInput,
  priced: Priced,
  /** The cardholder's controls as of the card's lock, when read with it (else read by controlsDecision). */
  holderControls: string | null | undefined,
  verification: CardVerification | undefined,
  authentication: AuthenticationOutcome,
  /** The wallet token named, checked against the card (src/tokens/authorization.ts). */
  token: TokenCheck,
): Promise<{ decline: ProgramDecline } | { decline: null; check: SpendCheck }> {
  if (card.status !== 'active') {
    return { decline: { reason: DeclineReason.cardInactive, error: new DomainError('cardStatus', `cardId: the card is ${card.status}`) } };
  }
  // A token that is not this card's active one (decisions §15.5): whatever else was presented.
  if (token.decline) return { decline: token.decline };
  // After the status: a frozen card answers the same whatever was presented, so once a brute force
  // has frozen it, the right CVV2 cannot be told from a wrong one.
  const failed = verificationFailure(verification);
  if (failed === 'expiry' || failed === 'cvv2') return { decline: VERIFICATION_DECLINES[failed]() };
  // 3-D Secure (decisions §14.5): a value carried and refused; none where one is required (the
  // link's 1A, whether or not a CVV2 came); a value that passed stands in for a CVV2 left out (§12.13).
  const refused = authenticationDecline(authentication);
  if (refused) return { decline: refused };
  // A wallet token stands in for it too: the card's number never left the wallet (decisions §15.5).
  if (failed === 'missing' && authentication.kind !== 'authenticated' && token.token === null)
    return { decline: VERIFICATION_DECLINES.missing() };
  const controls = await controlsDecision(
    ctx,
    card,
    { ...input, wallet: token.token?.walletProvider ?? null },
    priced.amount,
    holderControls,
  );
  if (controls.decline) return controls;
  const { check } = controls;
  if (card.available_balance < priced.amount + priced.fee) {
    return { decline: { reason: DeclineReason.insufficientFunds, error: new DomainError('insufficientBalance') } };
  }
  return { decline: null, check };
}

/**
 * What the merchant's endpoint is asked about, if the program's rules would approve this
 * authorization now (else null). Asked without the card's lock, outside any transaction, before the
 * endpoint is called: the verb decides again under lock. The request is the authorization as
 * tradeQuery will show it, under the id it will have, without its decision, plus the card's holder
 * and what it has available.
 */
export async function endpointRequest(ctx: LedgerCtx, input: AuthorizeInput, tradeId: string): Promise<Record<string, unknown> | null> {
  const card = await ctx.tx
    .selectFrom('cards')
    .selectAll()
    .where('id', '=', input.cardId)
    .where('merchant_id', '=', ctx.merchantId)
    .executeTakeFirst();
  if (!card) return null;
  let priced: Priced;
  try {
    priced = price(ctx, card, input);
    // The exemption's counters only where the verb would lock them (lockExemption): not on every pre-check.
    const state =
      input.authenticationValue === undefined && needsAuthentication(ctx.svc.config, threeDsOf(input), input.amount)
        ? await readExemption(ctx.tx, card.id)
        : null;
    const authentication = await authenticationOf(ctx, card, input, priced, state);
    const token = await checkAuthorizationToken(ctx.tx, card.id, tokenOf(input));
    const verification = await verificationOf(ctx, card, input);
    if ((await programDecision(ctx, card, input, priced, undefined, verification, authentication, token)).decline !== null) return null;
  } catch {
    // A request the verb will refuse (a bad amount): the verb says so; the endpoint is not asked.
    return null;
  }
  const row = authorizationRow(card, priced, { ...input, endpoint: undefined }, tradeId, ctx.now, {
    approved: 0,
    decline_reason: null,
    decline_code: null,
    message: '',
  });
  const { decision: _decision, ...authorization } = toAuthorization(row, maskedCardNo(card));
  return {
    authorization: {
      ...authorization,
      holderId: card.holder_id,
      fee: toMajor(priced.fee, card.currency),
      availableBalance: toMajor(card.available_balance, card.currency),
    },
  };
}

/** Why the merchant's default declined, by what the endpoint did instead of answering. */
const SILENCE: Record<'timeout' | 'error', { reason: DeclineReasonValue; what: string }> = {
  timeout: { reason: DeclineReason.merchantTimeout, what: 'did not answer in time' },
  error: { reason: DeclineReason.merchantError, what: 'did not answer readably' },
};

/** The endpoint's verdict as a decision: approve, or decline with its reason and message. */
function endpointDecision(v: EndpointVerdict): { approve: true; message: string } | { approve: false; decline: ProgramDecline } {
  if (v.outcome === 'approved') return { approve: true, message: 'Approved' };
  if (v.outcome === 'declined') {
    const why = v.reason ? `: ${v.reason}` : '';
    return {
      approve: false,
      decline: {
        reason: DeclineReason.merchantDeclined,
        error: new DomainError('merchantDeclined', `declined by your authorization endpoint${why}`),
      },
    };
  }
  const { reason, what } = SILENCE[v.outcome];
  if (v.fallback === 'approve') return { approve: true, message: `Approved by default: the authorization endpoint ${what}` };
  return {
    approve: false,
    decline: { reason, error: new DomainError('merchantDeclined', `declined by default: your authorization endpoint ${what}`) },
  };
}

/**
 * Authorization (150, status 1): holds `amount` on the card (available → held) and charges the
 * authorization fee (plus the FX fee when the transaction's currency is not the card's). The
 * program's rules decide first (programDecision), then the merchant's endpoint's verdict when it
 * has one. A decline is recorded with its reason (an `authorizations` row, read by tradeQuery; an
 * `authorization.declined` callback), committed with the request's key, and is not a listed trade.
 * An approval records the acceptor and decision beside its trade, under the trade's id, and counts
 * against the spending limits.
 *
 * Issue 31: on PostgreSQL, without limits to count, three round trips and the commit: the key, the
 * card, its codes and its cardholder's controls in one statement (lockCardAtOnce); the decision; every
 * effect, the record and the stored answer in another (bookAtOnce). A decline writes its record and
 * callback in one statement.
 */
export const authorize = claimsItsKey(async function authorize({
  ctx,
  input,
}: {
  ctx: LedgerCtx;
  input: AuthorizeInput;
}): Promise<TradeRecord> {
  // The card's 3-D Secure row before its card (lock order), when the low-value exemption may decide.
  const exemption = await lockExemption(ctx, input.cardId, threeDsOf(input), input.amount);
  const locked = await lockCardAtOnce(ctx, input.cardId, { holderControls: true });
  const { card } = locked;
  const priced = price(ctx, card, input);
  const { amount, currencyTxn, txnAmount, fee } = priced;
  const remark = remarkOf(input);
  const endpoint = input.endpoint;
  let when = ctx.now;
  const verification = await verificationOf(ctx, card, input);
  const authentication = await authenticationOf(ctx, card, input, priced, exemption);
  const token = await checkAuthorizationToken(ctx.tx, card.id, tokenOf(input));
  const record = (id: string, decision: Decision) => authorizationRow(card, priced, input, id, when, decision, token.token?.id ?? null);

  const decline = async ({ reason, error }: ProgramDecline): Promise<never> => {
    // The id the endpoint was told, when it was asked; else a decline's own.
    const row = record(endpoint?.asked ? endpoint.tradeId : newId('dcl'), {
      approved: 0,
      decline_reason: reason,
      decline_code: error.code,
      message: error.message,
    });
    await recordDecline(ctx, card, locked.notifyUrl, row, verification);
    // A decline that carried this card's authentication value is listed with it (it takes nothing).
    await recordAuthentication(ctx, authentication, { cardId: card.id, tradeId: row.id, approved: false });
    if (reason === DeclineReason.authenticationFailed || reason === DeclineReason.authenticationRequired) {
      const via = ctx.by?.kind === 'network' ? 'link' : 'sandbox';
      ctx.afterCommit(() => ctx.svc.metrics.threeDsAuthorizationRefusal(reason, via));
    }
    error.detail = { tradeId: row.id, declineReason: reason };
    throw new CommittedFailure(error);
  };

  const program = await programDecision(ctx, card, input, priced, locked.holderControls, verification, authentication, token);
  if (program.decline) return decline(program.decline);
  // Decided (and counted against the limits) at the moment the locks were had, not when the
  // transaction began (checkSpend): the record says the same moment, and its day unless one was sent.
  when = program.check.at;
  if (input.businessDate === undefined) priced.businessDate = resolveBusinessDate(undefined, when);
  let message = 'Approved';
  if (endpoint) {
    // The rules approve now though they declined when checked: the endpoint must have its say first.
    if (!endpoint.asked) throw new EndpointNotAsked();
    const verdict = endpointDecision(endpoint);
    if (!verdict.approve) return decline(verdict.decline);
    message = verdict.message;
  }
  const trade = tradeRow(
    {
      ...(endpoint ? { id: endpoint.tradeId } : {}),
      card,
      type: TradeType.authorization,
      status: TradeStatus.success,
      amount,
      fee,
      currencyTxn,
      txnAmount,
      businessDate: priced.businessDate,
      remark,
      held: amount,
    },
    when,
  );
  // The value is taken by one approval (a conditional update): one that another took first since it
  // was checked is declined; an exempted one counts against the card's exemption.
  if (!(await recordAuthentication(ctx, authentication, { cardId: card.id, tradeId: trade.id, approved: true })))
    return decline(authenticationDecline({ kind: 'refused', reason: 'used', acsTransId: null }) as ProgramDecline);
  const c = card.id;
  const approved = record(trade.id, { approved: 1, decline_reason: null, decline_code: null, message });
  const legs = [
    { account: Account.available(c), amount: -amount - fee },
    { account: Account.held(c), amount },
    { account: Account.fees, amount: fee },
  ];
  // The balance was checked above under the card's lock, so the hold cannot be refused here; were it
  // refused, the whole transaction rolls back (the statement wrote the rest of the effects).
  await bookAtOnce(ctx, locked, legs, trade, (t) => toTradeRecord(t, maskedCardNo(card)), {
    // The `trade` callback of an authorization carries the acceptor and the decision.
    eventExtra: { authorization: toAuthorization(approved, maskedCardNo(card)) },
    parts: [{ name: 'authorization', query: ctx.tx.insertInto('authorizations').values(approved) }],
    also: input.withApproval,
  });
  await program.check.record();
  // An approval that carried both the card's expiry and CVV2 resets its verification count
  // (decisions §12.13); read with the card's lock, so a statement only when there is one to reset.
  if (verifiedBoth(verification) && card.verification_failures !== null) await resetVerificationFailures(ctx.tx, card.id);
  return toTradeRecord(trade, maskedCardNo(card));
});

/**
 * A declined authorization recorded (an `authorizations` row, read by tradeQuery; an
 * `authorization.declined` callback) and, for a card data mismatch, counted against the card under
 * its lock, taken before (decisions §12.13): concurrent mismatches count one after the other.
 * `notifyUrl` undefined: not read with the lock (SQLite), looked up now.
 */
async function recordDecline(
  ctx: LedgerCtx,
  card: CardRow,
  notifyUrl: string | null | undefined,
  row: ReturnType<typeof authorizationRow>,
  verification: CardVerification | undefined,
): Promise<void> {
  const authorization = toAuthorization(row, maskedCardNo(card));
  const recorded = { name: 'authorization', query: ctx.tx.insertInto('authorizations').values(row) };
  if (notifyUrl === undefined) {
    await runParts(ctx.tx, [recorded]);
    await notifyMerchant(ctx, {
      merchantId: card.merchant_id,
      type: 'authorization.declined',
      subject: `card:${card.id}`,
      body: { authorization },
    });
  } else {
    await runParts(ctx.tx, [recorded, ...declinedEvent(ctx, card, notifyUrl, authorization)]);
  }
  const counted = COUNTED[row.decline_reason as DeclineReasonValue];
  if (counted && verification) {
    const by = ctx.by ?? { kind: 'merchant' as const, appId: ctx.merchantId, origin: ctx.actor };
    await recordVerificationFailure(ctx, card.id, { kind: counted, via: verification.via }, by);
  }
}

/**
 * A balance inquiry on the link (no amount, so not `authorize`) whose card data failed: recorded as
 * a declined authorization of 0 and counted as any other. Null when it is not declined for its card
 * data: an inactive card (its status decides, as for `authorize`), or data that passed.
 */
export async function declineInquiry(
  ctx: LedgerCtx,
  input: AuthorizeInput,
): Promise<{ reason: DeclineReasonValue; tradeId: string } | null> {
  const failed = verificationFailure(input.verification);
  if (!failed) return null;
  const card = await lockCard(ctx, input.cardId);
  if (card.status !== 'active') return null;
  const { reason, error } = VERIFICATION_DECLINES[failed]();
  const businessDate = resolveBusinessDate(input.businessDate, ctx.now);
  const priced = { amount: 0, currencyTxn: card.currency, txnAmount: 0, fee: 0, businessDate };
  const row = authorizationRow(card, priced, input, newId('dcl'), ctx.now, {
    approved: 0,
    decline_reason: reason,
    decline_code: error.code,
    message: error.message,
  });
  await recordDecline(ctx, card, undefined, row, input.verification);
  return { reason, tradeId: row.id };
}

/**
 * An `authorization.declined` callback, when the merchant has a notify URL (read with the card's
 * lock, as for `trade` events): the declined authorization, which is not a listed trade. As parts of
 * the decline's statement.
 */
function declinedEvent(ctx: LedgerCtx, card: CardRow, url: string | null, authorization: ReturnType<typeof toAuthorization>): Part[] {
  if (!url) return [];
  const event = { merchantId: card.merchant_id, type: 'authorization.declined' as const, subject: `card:${card.id}`, url };
  return eventParts(ctx.tx, { ...event, body: { authorization }, now: ctx.now }, ctx.wake);
}
