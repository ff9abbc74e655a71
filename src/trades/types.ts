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
