import type { CardStatus, ProvisionDecision } from '../db/schema.js';

/**
 * The reasons a provisioning is not approved (the answer's `reason`, decisions §15.3; `card_unknown`
 * is answered as `card_verification`, ./provision.ts answeredReason, and kept in the record and the
 * metric). Declined: card_unknown, too_many_requests, card_verification, card_closed, card_frozen, holder_not_approved,
 * too_many_tokens, merchant_declined, wallet_risk, no_authentication_method. Step-up asked:
 * merchant (its endpoint said require_authentication), merchant_no_answer, wallet_risk,
 * wallet_reason_codes, repeated_requests.
 */
export const PROVISION_REASONS = [
  'card_unknown',
  'too_many_requests',
  'card_verification',
  'card_closed',
  'card_frozen',
  'holder_not_approved',
  'too_many_tokens',
  'merchant_declined',
  'merchant',
  'merchant_no_answer',
  'wallet_risk',
  'wallet_reason_codes',
  'repeated_requests',
  'no_authentication_method',
] as const;
export type ProvisionReason = (typeof PROVISION_REASONS)[number];

/** What the merchant's token decision endpoint said; `timeout` and `error` (no readable answer) mean require_authentication. */
export type EndpointVerdict = ProvisionDecision | 'timeout' | 'error';

/** What the decision reads: the card and its counts, what was presented, the endpoint's verdict. */
export interface ProvisionFacts {
  /** null: no card has the number. */
  card: { status: CardStatus; holderApproved: boolean } | null;
  /** The card's provisioning requests of the last 24 hours before this one, whatever they became. */
  recentRequests: number;
  /** The card's live tokens (pending, active, suspended). */
  liveTokens: number;
  /** The expiry and CVV2 as presented: a mismatch declines (and is counted by the caller). */
  mismatch: 'expiry' | 'cvv2' | null;
  /** null: the merchant has no endpoint (the built-in rules decide); `ask`: not asked yet (the pre-check stops there). */
  verdict: EndpointVerdict | 'ask' | null;
  walletRiskScore: number | undefined;
  walletReasonCodes: readonly string[] | undefined;
  limits: { perCard: number; requestsPerDay: number };
}

export type ProvisionOutcome = { kind: 'ask' } | { kind: 'decided'; decision: ProvisionDecision; reason: ProvisionReason | null };

const decline = (reason: ProvisionReason): ProvisionOutcome => ({ kind: 'decided', decision: 'decline', reason });
const stepUp = (reason: ProvisionReason): ProvisionOutcome => ({ kind: 'decided', decision: 'require_authentication', reason });

/** Wallet risk scores from which the built-in rules decline, and ask for a step-up (decisions §15.3). */
export const RISK_DECLINE = 7;
export const RISK_STEP_UP = 4;
/** The card's provisioning request that asks for a step-up whatever the earlier ones became: its third within 24 hours. */
export const STEP_UP_FROM_REQUEST = 3;

/**
 * The decision of decisions §15.3, in order (pure; the caller has read the facts under the card's
 * lock). The per-card daily limit of §15.7 comes right after the card is known, before its data is
 * compared: beyond it the requester learns nothing of the CVV2 or expiry it sent. So does a closed
 * or frozen card's state (before §15.3's order, which compares the data first): a card frozen by five
 * mismatches (§12.13) would otherwise go on telling a guesser the right CVV2 (`card_frozen`) from a
 * wrong one (`card_verification`); its data is not compared, so not counted either.
 */
export function decideProvisioning(f: ProvisionFacts): ProvisionOutcome {
  if (f.card === null) return decline('card_unknown');
  if (f.recentRequests >= f.limits.requestsPerDay) return decline('too_many_requests');
  if (f.card.status === 'closed') return decline('card_closed');
  if (f.card.status === 'frozen') return decline('card_frozen');
  if (f.mismatch !== null) return decline('card_verification');
  if (!f.card.holderApproved) return decline('holder_not_approved');
  if (f.liveTokens >= f.limits.perCard) return decline('too_many_tokens');
  if (f.verdict === 'ask') return { kind: 'ask' };
  if (f.verdict !== null) {
    if (f.verdict === 'approve') return { kind: 'decided', decision: 'approve', reason: null };
    if (f.verdict === 'decline') return decline('merchant_declined');
    if (f.verdict === 'require_authentication') return stepUp('merchant');
    return stepUp('merchant_no_answer');
  }
  const score = f.walletRiskScore ?? 0;
  if (score >= RISK_DECLINE) return decline('wallet_risk');
  if (score >= RISK_STEP_UP) return stepUp('wallet_risk');
  if ((f.walletReasonCodes?.length ?? 0) > 0) return stepUp('wallet_reason_codes');
  if (f.recentRequests + 1 >= STEP_UP_FROM_REQUEST) return stepUp('repeated_requests');
  return { kind: 'decided', decision: 'approve', reason: null };
}
