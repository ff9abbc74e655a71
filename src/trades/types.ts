/** Trade types and statuses of interface §2.1, defined once; schemas and docs derive from these. */
export const TradeType = {
  authorization: 150,
  payment: 151,
  topUp: 100,
  withdrawal: 110,
  transferIn: 120,
  transferOut: 121,
  settlementAdjustment: 200,
  balanceInquiry: 300,
  fee: 500,
} as const;
export type TradeTypeValue = (typeof TradeType)[keyof typeof TradeType];

export const TradeStatus = {
  success: 1,
  reversal: 2,
  reversed: 3,
  voided: 6,
  void: 7,
  refund: 10,
} as const;
export type TradeStatusValue = (typeof TradeStatus)[keyof typeof TradeStatus];

export const TRADE_STATUSES = Object.values(TradeStatus) as TradeStatusValue[];

/** What the transaction list returns when no tradeStatusList is sent (interface 4.1 rule 2). */
export const DEFAULT_LIST_STATUSES: readonly TradeStatusValue[] = [TradeStatus.success, TradeStatus.refund];

/**
 * Why an authorization was declined (decisions §11): stored with the decline, returned by
 * tradeQuery and the `authorization.declined` callback. Each maps to one result code: card
 * status 2724, balance 2725, the spending controls 2728, the merchant's authorization endpoint 2729,
 * the card verification 2731, 3-D Secure 2732 and 2733, the wallet token 2734 (the card network link answers these with its own codes, §12.5).
 */
export const DeclineReason = {
  /** The card is frozen or closed (2724). */
  cardInactive: 'card_inactive',
  /** The available balance does not cover amount and fees (2725). */
  insufficientFunds: 'insufficient_funds',
  /** A `spendingLimits` entry of the card or its cardholder would be exceeded (2728). */
  spendingLimit: 'spending_limit',
  /** The MCC is not in `allowedMccs` (or the authorization has none) (2728). */
  mccNotAllowed: 'mcc_not_allowed',
  /** The MCC is in `blockedMccs` (2728). */
  mccBlocked: 'mcc_blocked',
  /** The acceptor's country is not in `allowedCountries` (or the authorization has none) (2728). */
  countryNotAllowed: 'country_not_allowed',
  /** The acceptor's country is in `blockedCountries` (2728). */
  countryBlocked: 'country_blocked',
  /** The channel is not in `channels` (2728). */
  channelNotAllowed: 'channel_not_allowed',
  /** The merchant's authorization endpoint answered `approved: false` (2729). */
  merchantDeclined: 'merchant_declined',
  /** No answer within the deadline, and the merchant's default is `decline` (2729). */
  merchantTimeout: 'merchant_timeout',
  /** Unreachable, refused URL, non-2xx or unreadable answer, and the default is `decline` (2729). */
  merchantError: 'merchant_error',
  /** The CVV2 presented is not the card's (2731; the link's 82). Counted against the card (decisions §12.13). */
  cvv2Mismatch: 'cvv2_mismatch',
  /** The expiry presented is not the card's (2731; the link's 54). Counted against the card (decisions §12.13). */
  expiryMismatch: 'expiry_mismatch',
  /** A key-entered or e-commerce authorization on the link without a CVV2 (the link's 05; not counted). */
  cardVerificationMissing: 'card_verification_missing',
  /**
   * The 3-D Secure authentication value carried (the link's field 48 subelement 43, the sandbox's
   * `authenticationValue`) is not one this ACS issued for this card, unused, at most 30 days old, for
   * at least this amount, with this ECI (2732; the link's 05; decisions §14.5).
   */
  authenticationFailed: 'authentication_failed',
  /**
   * An e-commerce authorization without authentication, outside the low-value exemption, while
   * `CARDPROGRAM_3DS_REQUIRED` is on (2733; the link's 1A, additional customer authentication required).
   */
  authenticationRequired: 'authentication_required',
  /**
   * The wallet token the authorization carried (the link's field 48 subelements 33/34, the sandbox's
   * `tokenId`) is not one of this card's (2734; the link's 05; decisions §15.5).
   */
  tokenUnknown: 'token_unknown',
  /** The token is this card's but not `active`: pending, suspended or deleted (2734; the link's 05). */
  tokenInactive: 'token_inactive',
  /** `allowedWallets` is set and the token's wallet is not in it (2728; the link's 57). */
  walletNotAllowed: 'wallet_not_allowed',
} as const;
export type DeclineReasonValue = (typeof DeclineReason)[keyof typeof DeclineReason];

/** The channels a network names an authorization's acceptor by (decisions §11). */
export const Channel = { ecommerce: 'ecommerce', pos: 'pos', atm: 'atm' } as const;
export type ChannelValue = (typeof Channel)[keyof typeof Channel];
