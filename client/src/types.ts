/** Transaction types of interface §2.1. */
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

/** Transaction statuses of interface §2.1. */
export const TradeStatus = { success: 1, reversal: 2, reversed: 3, voided: 6, void: 7, refund: 10 } as const;
export type TradeStatusValue = (typeof TradeStatus)[keyof typeof TradeStatus];

/** Cardholder audit statuses of interface §3.1. */
export const AuditStatus = { pending: 0, underReview: 1, approved: 2, rejected: 3, dataToComplete: 4 } as const;
export type AuditStatusValue = (typeof AuditStatus)[keyof typeof AuditStatus];

/** A transaction record (interface §2.1). Amounts are in major units of `currency`. */
export interface TradeRecord {
  cardNo: string;
  currency: string;
  amount: number;
  fee: number;
  currencyTxn: string;
  txnAmount: number;
  businessDate: string;
  tradeId: string;
  authCode: string;
  tradeType: TradeTypeValue;
  tradeStatus: TradeStatusValue;
  remark: string;
}

/** A cardholder (interface §2.2). */
export interface Cardholder {
  holderId: string;
  auditStatus: AuditStatusValue;
  errMsg: string;
  firstName: string;
  lastName: string;
  idno: string;
  idnoType: number;
  mobile: string;
}

/** A card: never its full number. */
export interface Card {
  cardId: string;
  cardNo: string;
  currency: string;
  holderId: string;
  status: 'active' | 'frozen' | 'closed';
  availableBalance: number;
  ledgerBalance: number;
}

export interface TradePage {
  total: number;
  tradeList: TradeRecord[];
}

export interface KycStatus {
  requestNo: string;
  email: string;
  kycStatus: 'init' | 'reviewing' | 'approved' | 'rejected';
  reason: string;
  holderId: string | null;
}

/** Full card details (sandbox only). */
export interface CardDetails {
  cardId: string;
  cardNo: string;
  expiry: string;
  cvv: string;
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
  | (EventBase & TradeRecord & { type: 'trade'; cardId: string })
  | (EventBase & {
      type: 'card.status';
      cardId: string;
      cardNo: string;
      currency: string;
      status: 'active' | 'frozen';
      actor: 'cardholder' | 'operator' | 'review';
    });
