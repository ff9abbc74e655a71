import { Type } from 'typebox';
import { CardCurrencyFilter, DateText, Id } from '../http/fields.js';
import { CodeEnum, Envelope, RandomStr, SignedFields } from '../http/schemas.js';
import { TRADE_STATUSES, TradeStatus, TradeType } from './types.js';

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
  tradeType: CodeEnum(TradeType),
  tradeStatus: CodeEnum(TradeStatus),
  remark: Type.String(),
});

export const TradeEnvelope = Envelope(TradeRecordSchema);

const Day = (what: string) => DateText(`must be the ${what} written yyyy-MM-dd`);
const statuses = TRADE_STATUSES.join(', ');

export const TradeListBody = Type.Object(
  {
    ...SignedFields,
    // "" counts as not sent: empty values are not signed either.
    cardId: Type.Optional(Id('cardId', 0)),
    cardNo: Type.Optional(Type.String({ pattern: '^([0-9]{12,19})?$', description: 'must be the full card number, 12 to 19 digits' })),
    currency: Type.Optional(CardCurrencyFilter()),
    beginDate: Day('first day'),
    endDate: Day('last day'),
    start: Type.Integer({ minimum: 0, description: 'must be a whole number ≥ 0: the index of the first record' }),
    maxSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 30, description: 'must be a whole number from 1 to 30' })),
    tradeStatusList: Type.Optional(
      Type.Array(Type.Integer({ description: `must contain only ${statuses}` }), {
        minItems: 1,
        maxItems: 20,
        description: `must be a list of 1 to 20 trade statuses (${statuses})`,
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
