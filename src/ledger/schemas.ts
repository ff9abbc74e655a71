import { Type } from 'typebox';
import { CardCurrencyFilter } from '../http/fields.js';
import { RandomStr, SignedFields } from '../http/schemas.js';

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
});

export const MerchantBalanceModel = Type.Object({ balances: Type.Array(FundingBalanceSchema) });
