import { Type } from 'typebox';
import { CardId, CurrencyCode, DateText, ShortText, TradeId } from '../http/fields.js';
import { Money, RandomStr, SignedFields, StringEnum } from '../http/schemas.js';

const Remark = Type.Optional(ShortText(200));
const BusinessDate = Type.Optional(DateText('must be a date written yyyy-MM-dd (sandbox: places the record on that day)'));

const body = <P extends Parameters<typeof Type.Object>[0]>(props: P) =>
  Type.Object({ ...SignedFields, ...props, randomStr: RandomStr }, { additionalProperties: false });

export const AuthorizeBody = body({
  cardId: CardId,
  amount: Money,
  currencyTxn: Type.Optional(CurrencyCode),
  txnAmount: Type.Optional(Type.Number({ description: 'must be the amount in currencyTxn, major units' })),
  remark: Remark,
  businessDate: BusinessDate,
});
export const ClearBody = body({ tradeId: TradeId, amount: Type.Optional(Money), businessDate: BusinessDate });
export const ReverseBody = ClearBody;
export const VoidBody = body({ tradeId: TradeId, businessDate: BusinessDate });
export const RefundBody = body({ tradeId: TradeId, amount: Money, businessDate: BusinessDate });
export const CardDetailsBody = body({ cardId: CardId });
export const WithdrawBody = body({
  cardId: CardId,
  amount: Money,
  currencyTxn: Type.Optional(CurrencyCode),
  remark: Remark,
  businessDate: BusinessDate,
});
export const TransferBody = body({ cardId: CardId, toCardId: CardId, amount: Money, remark: Remark, businessDate: BusinessDate });
export const AdjustBody = body({
  cardId: CardId,
  amount: Money,
  direction: StringEnum(['credit', 'debit'], 'must be credit or debit'),
  remark: Remark,
  businessDate: BusinessDate,
});
export const InquiryBody = body({ cardId: CardId, businessDate: BusinessDate });
export const FeeBody = body({ cardId: CardId, amount: Money, remark: Remark, businessDate: BusinessDate });
