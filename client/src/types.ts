import type { AuditStatusValue, Authorization, Dispute, TradeRecord, WalletToken } from './wire.js';
import { AuditStatus as WireAuditStatus } from './wire.js';

// The records and code tables are generated from the service's OpenAPI document (wire.ts).
export {
  type AuditStatusValue,
  type Authorization,
  type AuthorizationEndpoint,
  type Card,
  type CardDetails,
  type Cardholder,
  type CardWithSpending,
  Channel,
  type ChannelValue,
  type Controls,
  type ControlsModel,
  DeclineReason,
  type DeclineReasonValue,
  type Dispute,
  type DisputeEvidence,
  type DisputePage,
  type FundingBalance,
  type FundingMovement,
  type FundingStatementPage,
  type KycStatus,
  type SandboxThreeDsAuthentication,
  type SandboxThreeDsCompletion,
  type SandboxTokenProvisioning,
  type SandboxTokenVerification,
  type SpendingLimit,
  type SpendingState,
  type ThreeDsARes,
  type ThreeDsAuthentication,
  type ThreeDsAuthenticationPage,
  type ThreeDsSettings,
  type TokenSettings,
  type TradeDetail,
  type TradePage,
  type TradeRecord,
  TradeStatus,
  type TradeStatusValue,
  TradeType,
  type TradeTypeValue,
  type WalletToken,
  type WalletTokenPage,
} from './wire.js';

/** Cardholder audit statuses of interface §3.1. */
export const AuditStatus = {
  ...WireAuditStatus,
  /**
   * @deprecated Use `dataToBeCompleted`, the service's name for status 4 (this alias of 0.1.0 stays
   * until the next major version).
   */
  dataToComplete: WireAuditStatus.dataToBeCompleted,
} as const;

/**
 * What the merchant's authorization endpoint receives (docs/transactions.md, "Authorization
 * decisions"): the authorization as tradeQuery will show it, under the id it will have, without
 * its decision, with its cardholder, its fee and what the card has available.
 */
export interface AuthorizationRequest {
  type: 'authorization.request';
  authorization: Omit<Authorization, 'decision'> & { holderId: string; fee: number; availableBalance: number };
}

interface EventBase {
  eventId: string;
  /** Increases by one per subject (KYC request, cardholder, card): order by it, drop what you have seen. */
  sequence: number;
  occurredAt: string;
}

/** A callback the service sends (docs/callbacks.md). */
export type CallbackEvent =
  | (EventBase & {
      type: 'kyc.result';
      requestNo: string;
      email: string;
      kycStatus: 'reviewing' | 'approved' | 'rejected';
      reason: string;
      holderId: string | null;
    })
  | (EventBase & { type: 'holder.audit'; holderId: string; auditStatus: AuditStatusValue; errMsg: string })
  | (EventBase &
      TradeRecord & {
        type: 'trade';
        cardId: string;
        /** On an authorization's record (tradeType 150) when it is written: the acceptor and the decision. */
        authorization?: Authorization;
        /**
         * `true` on a forced post of the card network (an advice, a clearing above or without a hold, a
         * refund without an original): posted though the rules would have refused it, possibly beyond the
         * card's balance (see the card's `debtBalance`). Absent otherwise.
         */
        forced?: true;
        /** `true` on the Reversal (status 2) record of a hold released because it was not cleared in its window (remark `Hold expired`). */
        holdExpired?: true;
      })
  /** An authorization the program declined: not a listed trade; read it again with `trades.get(authorization.id)`. */
  | (EventBase & { type: 'authorization.declined'; authorization: Authorization })
  | (EventBase & {
      type: 'card.status';
      cardId: string;
      cardNo: string;
      currency: string;
      status: 'active' | 'frozen' | 'closed';
      /** Who set the status (null when the card became active). */
      source: 'cardholder' | 'merchant' | 'operator' | null;
      reason: string | null;
      /** @deprecated use `source`; `review` is an operator freeze when a cardholder was rejected. */
      actor: 'cardholder' | 'merchant' | 'operator' | 'review';
    })
  /** A dispute changed status, or moved money (docs/disputes.md); its sequence is the dispute's own. */
  | (EventBase &
      Pick<Dispute, 'disputeId' | 'tradeId' | 'cardId' | 'status' | 'amount' | 'currency' | 'provisionalCredit' | 'outcomeAmount'> & {
        type: 'dispute.updated';
        /** What happened: created, submitted, provisional_credit, won, lost, credit_reversed, expired, withdrawn. */
        change: 'created' | 'submitted' | 'provisional_credit' | 'won' | 'lost' | 'credit_reversed' | 'expired' | 'withdrawn';
        /** The money it moved, major units (negative: provisional credit taken back), and its journal entry; null when none. */
        movement: { amount: number; entryId: string | null } | null;
      })
  /**
   * 3-D Secure: deliver this one-time code to the cardholder (SMS, e-mail, your app), now; it is valid
   * until `expiresAt` (5 minutes). Never log or store it.
   */
  | (EventBase & ThreeDsChallengeAbout & { type: 'threeDs.otp'; code: string })
  /** 3-D Secure, challenge method oob: ask the cardholder in your app, then answer threeDsChallengeRespond. */
  | (EventBase & ThreeDsChallengeAbout & { type: 'threeDs.challenge' })
  /** 3-D Secure: a challenge ended (docs/3ds.md). */
  | (EventBase & {
      type: 'threeDs.result';
      acsTransID: string;
      cardId: string;
      holderId: string;
      transStatus: 'Y' | 'N';
      transStatusReason: string | null;
      eci: string | null;
      authenticationType: string | null;
      challengeMethod: 'otp' | 'oob' | null;
    })
  /** A wallet token changed status, whoever changed it (docs/tokens.md); its sequence is the token's own. */
  | (EventBase & { type: 'token.updated'; token: WalletToken })
  /**
   * A wallet asked to confirm a pending token by code: deliver this one-time code to the cardholder
   * by `method` (SMS or e-mail), now; it is valid until `expiresAt` (10 minutes). Never log or store it.
   */
  | (EventBase & {
      type: 'token.otp';
      tokenId: string;
      cardId: string;
      holderId: string;
      code: string;
      method: 'otp_sms' | 'otp_email';
      walletProvider: WalletToken['walletProvider'];
      expiresAt: string;
    });

/** What a 3-D Secure challenge's callbacks say of the purchase. */
export interface ThreeDsChallengeAbout {
  acsTransID: string;
  cardId: string;
  holderId: string;
  merchantName: string | null;
  /** Major units of `currency`; null for a non-payment authentication. */
  amount: number | null;
  currency: string | null;
  expiresAt: string;
}

/**
 * What the merchant's 3-D Secure decision endpoint receives (docs/3ds.md), signed as callbacks are;
 * answer `{"decision": "frictionless" | "challenge" | "decline"}` within 1 s (else: challenge).
 */
export interface ThreeDsDecisionRequest {
  type: 'threeDs.decision';
  acsTransID: string;
  cardId: string;
  holderId: string;
  amount: number | null;
  currency: string | null;
  merchantName: string | null;
  mcc: string | null;
  /** ISO 3166-1 numeric, as the AReq carries it. */
  merchantCountryCode: string | null;
  deviceChannel: string;
  messageCategory: string;
  threeDSRequestorChallengeInd: string | null;
  /** Whether the purchase is small enough (≤ 30.00 EUR) for the low-value exemption. */
  exemptionEligible: boolean;
  occurredAt: string;
}

/**
 * Every event `webhooks.verify` may return (`CallbackEvent['type']`), and when it is sent. One entry
 * per member of the union, no more (the compiler checks both ways): `npm run build` writes this list
 * into client/README.md, and `npm run lint` fails when the README is not what it gives.
 */
export const CALLBACK_EVENTS = {
  'kyc.result': 'a KYC request goes into review, is approved or rejected (sent to the request’s `callbackUrl`)',
  'holder.audit': 'a cardholder’s `auditStatus` changes',
  trade: 'a transaction record is written or changes status',
  'card.status': 'a card is frozen, unfrozen or closed',
  'authorization.declined': 'the program declined an authorization (a declined one is not a listed trade)',
  'dispute.updated':
    'a dispute is created or changes status (submitted, won, lost, expired, withdrawn), and every money movement it causes',
  'threeDs.otp':
    'a 3-D Secure challenge by one-time code began: deliver its `code` to the cardholder at once (valid until `expiresAt`, 5 minutes); never log or keep it',
  'threeDs.challenge': 'a 3-D Secure challenge out of band began (`challengeMethod` `oob`): authenticate the cardholder in your app',
  'threeDs.result': 'a 3-D Secure challenge ended: `transStatus` `Y` (authenticated) or `N`, with `transStatusReason`',
  'token.updated': 'a wallet token was created pending or active, activated, suspended, resumed or deleted, whoever did it',
  'token.otp':
    'a wallet asked to confirm a pending token by code: deliver its `code` by `method` (SMS or e-mail) at once (valid until `expiresAt`, 10 minutes); never log or keep it',
} as const satisfies Record<CallbackEvent['type'], string>;
