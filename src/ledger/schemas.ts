import { Type } from 'typebox';
import { CardCurrencyFilter } from '../http/fields.js';
import { RandomStr, SignedFields, StringEnum } from '../http/schemas.js';

export const MerchantBalanceBody = Type.Object(
  {
    ...SignedFields,
    currency: Type.Optional(CardCurrencyFilter('every currency')),
    randomStr: RandomStr,
  },
  { additionalProperties: false },
);

/** One funding account of the merchant (docs/funding.md). */
export const FundingBalanceSchema = Type.Object({
  currency: Type.String(),
  available: Type.Number({ description: 'what top-ups can still draw, in major units' }),
  cardDebt: Type.Number({
    description:
      'what the merchant’s cards in this currency owe, in major units: the sum of their debtBalance (forced posts of the card network beyond a card’s balance; docs/funding.md, "Card debt"). The merchant’s exposure: a top-up of a card pays its debt first, and the operator settles a closed card’s debt from this funding account. 0 normally',
  }),
});

export const MerchantBalanceModel = Type.Object({ balances: Type.Array(FundingBalanceSchema) });

/** What moved a merchant's funding account (docs/funding.md, "The statement"). */
export const FUNDING_MOVEMENT_KINDS = [
  'credit',
  'debit',
  'topUp',
  'cardClose',
  'release',
  'withdrawalReturn',
  'fee',
  'disputeCredit',
  'disputeReturn',
  'debtSettlement',
] as const;

export const MerchantFundingListBody = Type.Object(
  {
    ...SignedFields,
    currency: CardCurrencyFilter(),
    after: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          'must be a whole number ≥ 0: the seq of the last movement already read (0: from the first); one past every movement is an empty page',
      }),
    ),
    maxSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'must be a whole number from 1 to 100' })),
    randomStr: RandomStr,
  },
  { additionalProperties: false },
);

/** One movement of a funding account, oldest first; `balance` is the account's balance after it. */
export const FundingMovementSchema = Type.Object({
  seq: Type.Integer({ description: 'the movement’s number in this account: 1, 2, 3… without gaps, in the order they were committed' }),
  kind: StringEnum(
    FUNDING_MOVEMENT_KINDS,
    'credit and debit: the operator’s; topUp: a top-up drew from it; cardClose: a closed card’s balance came back; release, withdrawalReturn, fee: money a closed card released later (a reversal, void or refund after the close) came back; disputeCredit: a dispute’s provisional credit to the card; disputeReturn: that credit came back (the dispute won, or the card gave it back); debtSettlement: the operator settled a closed card’s debt from it (`cardprogram card settle-debt`)',
  ),
  amount: Type.Number({ description: 'signed, in major units: what the account gained (negative: what it lost)' }),
  balance: Type.Number({ description: 'the account’s balance after this movement, in major units' }),
  reference: Type.String({ description: 'the operator’s reference for a credit or debit; the trade’s remark otherwise' }),
  cardId: Type.Union([Type.String(), Type.Null()], { description: 'the card concerned; null for the operator’s' }),
  tradeId: Type.Union([Type.String(), Type.Null()], { description: 'the trade concerned; null for the operator’s' }),
  createdAt: Type.String({ description: 'when it was committed, ISO 8601 UTC' }),
});

export const MerchantFundingListModel = Type.Object({
  currency: Type.String(),
  movements: Type.Array(FundingMovementSchema),
  next: Type.Union([Type.Integer(), Type.Null()], {
    description: 'the `after` of the next page; null when this page reached the last movement so far',
  }),
});
