import { Type } from 'typebox';
import { Envelope, Money, RandomStr, SignedFields } from '../http/schemas.js';

export const CardId = Type.String({ minLength: 1, maxLength: 64, description: 'must be a cardId' });
export const CurrencyCode = Type.String({ minLength: 1, maxLength: 8, description: 'must be a currency code, e.g. EUR' });
const HolderId = Type.String({ minLength: 1, maxLength: 64, description: 'must be a holderId' });

export const CardModelSchema = Type.Object({
  cardId: Type.String(),
  cardNo: Type.String({ description: 'first 6 and last 4 digits, the rest *' }),
  currency: Type.String(),
  holderId: Type.String(),
  status: Type.String({ description: 'active, frozen or closed' }),
  availableBalance: Type.Number({ description: 'what can be spent, in major units' }),
  ledgerBalance: Type.Number({ description: 'available plus what authorizations hold, in major units' }),
});

export const TradeRecordSchema = Type.Object({
  cardNo: Type.String({ description: 'first 6 and last 4 digits, the rest *' }),
  currency: Type.String(),
  amount: Type.Number({ description: 'in the card currency, major units' }),
  fee: Type.Number(),
  currencyTxn: Type.String(),
  txnAmount: Type.Number({ description: 'in currencyTxn, major units' }),
  businessDate: Type.String({ description: 'yyyy-MM-dd' }),
  tradeId: Type.String(),
  authCode: Type.String(),
  tradeType: Type.Integer({
    description:
      '150 authorization, 151 payment, 100 top-up, 110 withdrawal, 120/121 transfer in/out, 200 settlement adjustment, 300 balance inquiry, 500 fee',
  }),
  tradeStatus: Type.Integer({ description: '1 success, 2 reversal, 3 reversed, 6 voided, 7 void, 10 refund' }),
  remark: Type.String(),
});

export const CardApplyBody = Type.Object(
  { ...SignedFields, holderId: HolderId, currency: CurrencyCode, randomStr: RandomStr },
  { additionalProperties: false },
);
export const CardQueryBody = Type.Object({ ...SignedFields, cardId: CardId, randomStr: RandomStr }, { additionalProperties: false });
export const CardTopUpBody = Type.Object(
  { ...SignedFields, cardId: CardId, amount: Money, randomStr: RandomStr },
  { additionalProperties: false },
);

export const CardEnvelope = Envelope(CardModelSchema);
export const TradeEnvelope = Envelope(TradeRecordSchema);

const DateText = (what: string) =>
  Type.String({ pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$', description: `must be the ${what} written yyyy-MM-dd` });

export const TradeListBody = Type.Object(
  {
    ...SignedFields,
    // "" counts as not sent: empty values are not signed either.
    cardId: Type.Optional(Type.String({ maxLength: 64, description: 'must be a cardId' })),
    cardNo: Type.Optional(Type.String({ pattern: '^([0-9]{12,19})?$', description: 'must be the full card number, 12 to 19 digits' })),
    currency: Type.Optional(Type.String({ maxLength: 8, description: 'must be EUR or USDT' })),
    beginDate: DateText('first day'),
    endDate: DateText('last day'),
    start: Type.Integer({ minimum: 0, description: 'must be a whole number ≥ 0: the index of the first record' }),
    maxSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 30, description: 'must be a whole number from 1 to 30' })),
    tradeStatusList: Type.Optional(
      Type.Array(Type.Integer({ description: 'must contain only 1, 2, 3, 6, 7, 10' }), {
        minItems: 1,
        maxItems: 20,
        description: 'must be a list of 1 to 20 trade statuses (1, 2, 3, 6, 7, 10)',
      }),
    ),
    randomStr: RandomStr,
  },
  { additionalProperties: false },
);

export const TradePageSchema = Type.Object({
  total: Type.Integer({ description: 'records in the whole filtered range' }),
  tradeList: Type.Array(TradeRecordSchema),
});

export const CardDetailsSchema = Type.Object({
  cardId: Type.String(),
  cardNo: Type.String({ description: 'the full card number' }),
  expiry: Type.String({ description: 'MM/YY' }),
  cvv: Type.String(),
});
