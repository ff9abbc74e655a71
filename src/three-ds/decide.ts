import type { Selectable } from 'kysely';
import type { CardRow } from '../cards/model.js';
import { AuditStatus } from '../codes/audit-status.js';
import type { VerbCtx } from '../context.js';
import { controlsDecision } from '../controls/decide.js';
import type { CardholdersTable, ChallengeMethod, ThreeDsDecider } from '../db/schema.js';
import { MAX_MINOR } from '../money/currency.js';
import { convert, type RateTable } from '../money/fx.js';
import { currencyAlpha } from '../money/iso4217.js';
import { AREQS_PER_HOUR, type CardState, exemptionFits, HOUR_MS, lockCardState } from './card-state.js';
import { countryAlpha2 } from './country-codes.js';
import type { DecisionVerdict } from './decision-endpoint.js';
import type { TransStatusReason } from './emv-messages.js';
import { cardCodesExhausted } from './otp.js';
import { cardFacts } from './statements.js';
import type { CheckedAReq } from './validate.js';
import { countVerificationFailure } from './verification-failure.js';

/** An AReq's purchase, as the decision reads it. */
export interface Purchase {
  /** Minor units; null: none sent (non-payment), or more than any card may spend (`tooLarge`). */
  amount: number | null;
  tooLarge: boolean;
  /** ISO 4217 alphabetic when known, else the numeric code as sent; null: none. */
  currency: string | null;
  /** The alphabetic code when the service knows the currency (it can convert it). */
  alpha: string | null;
  exponent: number | null;
  /** The amount in EUR minor units at the program's rates; null when it cannot be converted. */
  eur: number | null;
}

export function purchaseOf(areq: CheckedAReq, rates: RateTable): Purchase {
  if (areq.purchaseAmount === undefined || areq.purchaseCurrency === undefined) {
    return { amount: null, tooLarge: false, currency: null, alpha: null, exponent: null, eur: null };
  }
  const alpha = currencyAlpha(areq.purchaseCurrency);
  // Up to 48 digits: read as a big integer, kept only when a card could spend it (10^12 minor units, MAX_MINOR).
  const big = BigInt(areq.purchaseAmount);
  const tooLarge = big > BigInt(MAX_MINOR);
  const amount = tooLarge ? null : Number(big);
  let eur: number | null = null;
  if (alpha !== null && amount !== null) {
    try {
      eur = convert(amount, alpha, 'EUR', rates);
    } catch {
      eur = null;
    }
  }
  return { amount, tooLarge, currency: alpha ?? areq.purchaseCurrency, alpha, exponent: Number(areq.purchaseExponent ?? 2), eur };
}

export type Outcome =
  | { kind: 'refused'; status: 'N' | 'U'; reason: TransStatusReason; decidedBy: ThreeDsDecider }
  | { kind: 'frictionless'; decidedBy: 'exemption' | 'endpoint'; exemptEur: number | null }
  | { kind: 'challenge'; method: ChallengeMethod; decidedBy: 'mandate' | 'risk' | 'endpoint' | 'endpoint_timeout' | 'endpoint_error' }
  /** The pre-check reached the merchant's decision endpoint: it is to be asked before the decision is made. */
  | { kind: 'ask' };

export interface Facts {
  card: CardRow;
  holder: Pick<Selectable<CardholdersTable>, 'id' | 'audit_status' | 'controls'>;
  merchant: { notifyUrl: string | null; decisionUrl: string | null; challengeMethod: ChallengeMethod };
  state: CardState;
  /** The card's AReqs of the last hour, read after its state row was locked. */
  recentAReqs: number;
  purchase: Purchase;
}

const refused = (reason: TransStatusReason, status: 'N' | 'U' = 'N'): Outcome => ({
  kind: 'refused',
  status,
  reason,
  decidedBy: 'refused',
});

const yymm = (card: CardRow) => `${String(card.expiry_year % 100).padStart(2, '0')}${String(card.expiry_month).padStart(2, '0')}`;

/**
 * The decision of decisions §14.3, in its order, for an AReq of a known card (no card is N/08
 * before this). `final`: in the authentication's transaction, the card's state row locked first
 * (the hourly limit and the exemption are then exact), with the endpoint's verdict when it was
 * asked; otherwise a pre-check without locks, whose only use is to know whether to ask the endpoint.
 */
export async function decide(
  ctx: VerbCtx,
  input: { areq: CheckedAReq; cardId: string; verdict: DecisionVerdict | null },
  mode: 'final' | 'precheck',
): Promise<{ outcome: Outcome; facts: Facts | null }> {
  const { areq } = input;
  const state: CardState =
    mode === 'final' ? await lockCardState(ctx, input.cardId) : { exemptCount: 0, exemptEur: 0, lastChallengeAt: null };
  // The card with its cardholder's status and controls, its merchant's settings and its AReqs of the
  // hour, in one statement after the lock (on PostgreSQL its snapshot then sees the AReqs before).
  const found = (await cardFacts.execute(ctx.tx, { cardId: input.cardId, since: ctx.now - HOUR_MS })).rows[0];
  if (!found) return { outcome: refused('08'), facts: null };
  const {
    holder_audit_status,
    holder_controls,
    merchant_notify_url,
    merchant_decision_url,
    merchant_challenge_method,
    recent_areqs,
    ...card
  } = found;
  const facts: Facts = {
    card,
    holder: { id: card.holder_id, audit_status: holder_audit_status, controls: holder_controls },
    merchant: { notifyUrl: merchant_notify_url, decisionUrl: merchant_decision_url, challengeMethod: merchant_challenge_method },
    state,
    recentAReqs: Number(recent_areqs ?? 0),
    purchase: purchaseOf(areq, ctx.svc.config.program.fxRates),
  };
  const outcome = await order(ctx, input, facts, mode);
  return { outcome, facts };
}

async function order(
  ctx: VerbCtx,
  input: { areq: CheckedAReq; verdict: DecisionVerdict | null },
  f: Facts,
  mode: 'final' | 'precheck',
): Promise<Outcome> {
  const { areq, verdict } = input;
  const { card, purchase } = f;
  // §14.7: 30 AReqs of a card an hour, refused ones included (they are what a guesser sends).
  if (f.recentAReqs >= AREQS_PER_HOUR) return refused('04');
  // 1. The card. An expiry other than the card's is a verification failure (§12.13); a missing one is not.
  if (areq.cardExpiryDate !== undefined && areq.cardExpiryDate !== yymm(card)) {
    if (mode === 'final') await countVerificationFailure(ctx, card, 'expiry');
    return refused('01');
  }
  if (card.status === 'closed') return refused('08');
  if (ctx.now >= Date.UTC(card.expiry_year, card.expiry_month, 1)) return refused('05');
  if (card.status === 'frozen' || f.holder.audit_status !== AuditStatus.approved) return refused('12');
  // 2. The card's controls, as an e-commerce authorization of this amount would meet them; nothing is held.
  if (purchase.tooLarge) return refused('12');
  let inCardCurrency = 0;
  if (purchase.amount !== null && purchase.alpha !== null) {
    try {
      inCardCurrency = convert(purchase.amount, purchase.alpha, card.currency, ctx.svc.config.program.fxRates);
    } catch {
      // A currency without a rate: the rules are checked, the limits are the authorization's to check.
    }
  }
  const acceptor = {
    mcc: areq.mcc ?? null,
    merchantCountry: areq.merchantCountryCode ? countryAlpha2(areq.merchantCountryCode) : null,
    channel: 'ecommerce',
  };
  const controls = await controlsDecision(ctx, card, acceptor, inCardCurrency, f.holder.controls, false);
  if (controls.decline) return refused('12');
  // 3. Requestor-initiated authentication is not supported yet.
  if (areq.deviceChannel === '03') return refused('21');
  // 4. The merchant's decision endpoint.
  if (f.merchant.decisionUrl !== null && verdict === null && mode === 'precheck') return { kind: 'ask' };
  const method = f.merchant.challengeMethod;
  let chosen: Outcome;
  if (verdict !== null) {
    if (verdict.outcome === 'decline') return { kind: 'refused', status: 'N', reason: '11', decidedBy: 'endpoint' };
    if (verdict.outcome === 'frictionless') chosen = { kind: 'frictionless', decidedBy: 'endpoint', exemptEur: null };
    else {
      const decidedBy = verdict.outcome === 'timeout' ? 'endpoint_timeout' : verdict.outcome === 'error' ? 'endpoint_error' : 'endpoint';
      chosen = { kind: 'challenge', method, decidedBy };
    }
  } else if (areq.threeDSRequestorChallengeInd === '04') {
    // 5. Without an endpoint: a challenge the requestor's mandate asks for, else the low-value exemption, else a challenge.
    chosen = { kind: 'challenge', method, decidedBy: 'mandate' };
  } else if (
    areq.messageCategory === '01' &&
    // Without the expiry the card data were not checked: no purchase goes through without either.
    areq.cardExpiryDate !== undefined &&
    purchase.eur !== null &&
    exemptionFits(f.state, purchase.eur)
  ) {
    chosen = { kind: 'frictionless', decidedBy: 'exemption', exemptEur: purchase.eur };
  } else {
    chosen = { kind: 'challenge', method, decidedBy: 'risk' };
  }
  if (chosen.kind === 'challenge') {
    // 6. A challenge needs a way to the cardholder: a browser (an app's SDK challenge is not supported
    // yet: U/03), and the merchant's notify URL for the code or the approval (N/13 without).
    if (areq.deviceChannel === '01') return refused('03', 'U');
    if (f.merchant.notifyUrl === null) return refused('13');
    // The card's wrong codes of 24 hours used up (./otp.ts): no new code to guess (EMVCo 19, exceeds ACS maximum challenges).
    if (chosen.method === 'otp' && (await cardCodesExhausted(ctx, card.id))) return refused('19');
  }
  return chosen;
}
