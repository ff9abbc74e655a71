import { notifyMerchant } from '../callbacks/merchant-event.js';
import type { VerbCtx } from '../context.js';
import { issueAuthenticationValue } from './av.js';
import { brandOf, eciFor } from './brand.js';
import { countExemption } from './card-state.js';
import { decide, type Facts, type Outcome, purchaseOf } from './decide.js';
import type { DecisionVerdict } from './decision-endpoint.js';
import { type ARes, AUTHENTICATION_TYPES } from './emv-messages.js';
import { hashOtp, newOtp, OTP_TTL_MS } from './otp.js';
import { insertAuthentication, type NewAuthentication } from './statements.js';
import { browserData, maskedAcct, storedAReq } from './store.js';
import type { CheckedAReq } from './validate.js';

/** A challenge left unfinished this long after the ARes ends N/14 (decisions §14.4). */
export const CHALLENGE_TTL_MS = 5 * 60_000;

export interface AuthenticateInput {
  /** Drawn before the run (crypto.randomUUID): the same across a transaction's retries, and the endpoint's webhook-id. */
  acsTransId: string;
  areq: CheckedAReq;
  /** The card the AReq's acctNumber is (found by the number's keyed hash); null: none. */
  cardId: string | null;
  /** What the merchant's decision endpoint said, when it was asked. */
  verdict: DecisionVerdict | null;
  /** Where the challenge runs: {public}/3ds/challenge of the card's merchant. */
  acsUrl: string | null;
}

export interface AuthenticateResult {
  ares: ARes;
  /** For the metrics and the log: the outcome and the reason. */
  transStatus: string;
  reason: string | null;
}

/**
 * Decides an AReq and records it (decisions §14.2–14.3): the card's state row locked first, the
 * decision in the order of §14.3 (./decide.ts), the authentication stored (PAN masked), and for a
 * challenge the way to the cardholder set up: a one-time code (stored as a keyed hash) sent to the
 * merchant in a sealed `threeDs.otp` callback, or a `threeDs.challenge` for its app. The callback is
 * in the same transaction: it exists if and only if the ARes's C does.
 */
export async function authenticate({ ctx, input }: { ctx: VerbCtx; input: AuthenticateInput }): Promise<AuthenticateResult> {
  const decided = input.cardId === null ? null : await decide(ctx, { ...input, cardId: input.cardId }, 'final');
  const outcome: Outcome = decided?.outcome ?? { kind: 'refused', status: 'N', reason: '08', decidedBy: 'refused' };
  return record(ctx, input, decided?.facts ?? null, outcome);
}

async function record(ctx: VerbCtx, input: AuthenticateInput, facts: Facts | null, outcome: Outcome): Promise<AuthenticateResult> {
  const { areq, acsTransId } = input;
  const cfg = ctx.svc.config.threeDs;
  const purchase = facts?.purchase ?? purchaseOf(areq, ctx.svc.config.program.fxRates);
  const brand = brandOf(areq.acctNumber);
  const row: NewAuthentication = {
    acs_trans_id: acsTransId,
    merchant_id: facts?.card.merchant_id ?? null,
    card_id: facts?.card.id ?? null,
    holder_id: facts?.card.holder_id ?? null,
    message_version: areq.messageVersion,
    message_category: areq.messageCategory,
    device_channel: areq.deviceChannel,
    three_ds_server_trans_id: areq.threeDSServerTransID,
    ds_trans_id: areq.dsTransID,
    ds_reference_number: areq.dsReferenceNumber,
    pan_masked: maskedAcct(areq.acctNumber),
    amount: purchase.amount,
    currency: purchase.currency,
    exponent: purchase.amount === null ? null : purchase.exponent,
    merchant_name: areq.merchantName ?? null,
    mcc: areq.mcc ?? null,
    merchant_country: areq.merchantCountryCode ?? null,
    challenge_ind: areq.threeDSRequestorChallengeInd ?? null,
    notification_url: areq.notificationURL ?? null,
    areq: storedAReq(areq),
    browser: browserData(areq),
    trans_status: 'N',
    trans_status_reason: null,
    eci: null,
    decided_by: outcome.kind === 'ask' ? 'refused' : outcome.decidedBy,
    endpoint_outcome: input.verdict?.outcome ?? null,
    endpoint_ms: input.verdict?.ms ?? null,
    exempt_eur: null,
    authentication_type: null,
    challenge_method: null,
    challenge_state: null,
    challenge_expires_at: null,
    challenge_window_size: null,
    session_data: null,
    otp_hash: null,
    otp_key_version: null,
    otp_expires_at: null,
    otp_sent: 0,
    otp_failures: 0,
    oob_result: null,
    interaction_counter: 0,
    challenge_cancel: null,
    av_hash: null,
    av_key_version: null,
    av_issued_at: null,
    used_trade_id: null,
    created_at: ctx.now,
    completed_at: ctx.now,
    updated_at: ctx.now,
  };
  const ares: ARes = {
    messageType: 'ARes',
    messageVersion: areq.messageVersion,
    threeDSServerTransID: areq.threeDSServerTransID,
    dsTransID: areq.dsTransID,
    dsReferenceNumber: areq.dsReferenceNumber,
    acsTransID: acsTransId,
    acsReferenceNumber: cfg.referenceNumber,
    ...(cfg.operatorId ? { acsOperatorID: cfg.operatorId } : {}),
    ...(areq.sdkTransID ? { sdkTransID: areq.sdkTransID } : {}),
    transStatus: 'N',
  };
  if (outcome.kind === 'refused' || outcome.kind === 'ask' || facts === null) {
    const status = outcome.kind === 'refused' ? outcome.status : 'U';
    const reason = outcome.kind === 'refused' ? outcome.reason : '08';
    const eci = status === 'N' ? eciFor(brand, false) : null;
    Object.assign(row, { trans_status: status, trans_status_reason: reason, eci });
    Object.assign(ares, { transStatus: status, transStatusReason: reason, ...(eci ? { eci } : {}) });
  } else if (outcome.kind === 'frictionless') {
    const eci = eciFor(brand, true);
    const av = await issueAuthenticationValue(ctx.svc, ctx.tx, {
      acsTransId,
      cardId: facts.card.id,
      amount: purchase.amount,
      currency: purchase.currency,
      eci,
      issuedAt: ctx.now,
    });
    if (outcome.exemptEur !== null) await countExemption(ctx, facts.card.id, facts.state, outcome.exemptEur);
    Object.assign(row, { trans_status: 'Y', eci, exempt_eur: outcome.exemptEur, ...av.columns });
    Object.assign(ares, { transStatus: 'Y', ...(eci ? { eci } : {}), authenticationValue: av.value });
  } else {
    await openChallenge(ctx, input, facts, outcome.method, row, purchase);
    Object.assign(ares, {
      transStatus: 'C',
      acsURL: input.acsUrl ?? `${ctx.svc.config.publicUrl}/3ds/challenge`,
      acsChallengeMandated: 'Y',
      authenticationType: AUTHENTICATION_TYPES[outcome.method],
    });
  }
  await insertAuthentication.execute(ctx.tx, row);
  return { ares, transStatus: ares.transStatus, reason: ares.transStatusReason ?? null };
}

/** A challenge's state, and its callback to the merchant: the code to deliver, or the approval to ask for. */
async function openChallenge(
  ctx: VerbCtx,
  input: AuthenticateInput,
  facts: Facts,
  method: 'otp' | 'oob',
  row: NewAuthentication,
  purchase: Facts['purchase'],
): Promise<void> {
  const expiresAt = ctx.now + CHALLENGE_TTL_MS;
  Object.assign(row, {
    trans_status: 'C',
    completed_at: null,
    authentication_type: AUTHENTICATION_TYPES[method],
    challenge_method: method,
    challenge_state: 'pending',
    challenge_expires_at: expiresAt,
  });
  const about = {
    acsTransID: input.acsTransId,
    cardId: facts.card.id,
    holderId: facts.card.holder_id,
    merchantName: input.areq.merchantName ?? null,
    amount: purchase.amount === null ? null : purchase.amount / 10 ** (purchase.exponent ?? 2),
    currency: purchase.currency,
  };
  // The notify URL as this transaction read it (with the card, decide.ts).
  const event = { merchantId: facts.card.merchant_id, subject: `threeDs:${input.acsTransId}`, url: facts.merchant.notifyUrl };
  if (method === 'otp') {
    const code = newOtp();
    const otpExpiresAt = ctx.now + OTP_TTL_MS;
    const hashed = await hashOtp(ctx.svc.vault, ctx.tx, input.acsTransId, code);
    Object.assign(row, { otp_hash: hashed.hash, otp_key_version: hashed.version, otp_expires_at: otpExpiresAt, otp_sent: 1 });
    // Sealed at rest (SEALED_EVENTS): the code exists in clear only in this payload, on its way to the merchant.
    await notifyMerchant(ctx, {
      ...event,
      type: 'threeDs.otp',
      body: { ...about, code, expiresAt: new Date(otpExpiresAt).toISOString() },
      sealWith: ctx.svc.box,
    });
  } else {
    await notifyMerchant(ctx, { ...event, type: 'threeDs.challenge', body: { ...about, expiresAt: new Date(expiresAt).toISOString() } });
  }
}
