import { Type } from 'typebox';
import { CardId, CountryCode, CurrencyCode, DateText, ShortText, TradeId } from '../http/fields.js';
import { Money, RandomStr, SignedFields, StringEnum } from '../http/schemas.js';
import { Channel } from '../trades/types.js';

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
  // The acceptor, as a network sends it (decisions §11): read back with tradeQuery.
  mcc: Type.Optional(Type.String({ pattern: '^[0-9]{4}$', description: 'must be a merchant category code: 4 digits, e.g. 5411' })),
  merchantName: Type.Optional(
    Type.String({ minLength: 1, maxLength: 100, description: 'must be 1 to 100 characters: the acceptor’s name' }),
  ),
  merchantCity: Type.Optional(Type.String({ minLength: 1, maxLength: 40, description: 'must be 1 to 40 characters: the acceptor’s city' })),
  merchantCountry: Type.Optional(CountryCode('must be an ISO 3166-1 alpha-2 country code, e.g. DE')),
  channel: Type.Optional(StringEnum(Object.values(Channel), 'must be ecommerce, pos or atm')),
  // Card verification (decisions §12.13): checked like the link's, each mismatch declined (2731) and counted.
  cvv2: Type.Optional(
    Type.String({
      pattern: '^[0-9]{3,4}$',
      description:
        'must be 3 or 4 digits: the CVV2 as the cardholder typed it (cardDetails gives the card’s). Optional; when sent and not the card’s, the authorization is declined (2731, declineReason cvv2_mismatch) and counted: 5 mismatches within 24 hours freeze the card (statusSource security). Never stored or logged',
    }),
  ),
  expiry: Type.Optional(
    Type.String({
      pattern: '^[0-9]{4}$',
      description:
        'must be 4 digits, YYMM: the expiry as the cardholder typed it (cardDetails gives MM/YY). Optional; when sent and not the card’s, declined (2731, declineReason expiry_mismatch) and counted as a CVV2 mismatch is',
    }),
  ),
  // 3-D Secure (decisions §14.5): what the link's field 48 subelements 42 and 43 carry.
  eci: Type.Optional(
    Type.String({
      pattern: '^[0-9]{2}$',
      description:
        'must be 2 digits: the ECI the 3-D Secure authentication gave (its ARes or RReq: 05 for a Visa card, 02 for a Mastercard). Optional; when sent with authenticationValue it must be the authentication’s',
    }),
  ),
  authenticationValue: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9+/]{27}=$',
      description:
        'must be 28 Base64 characters: the authenticationValue of a successful 3-D Secure authentication of this card (/sandbox/3ds/authenticate, or the ACS). Checked once: a value not issued for this card, already used by an approved authorization, more than 30 days old or for less than this amount declines the authorization (2732, declineReason authentication_failed). With CARDPROGRAM_3DS_REQUIRED on, an ecommerce authorization without one, outside the low-value exemption, is declined 2733 (authentication_required)',
    }),
  ),
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
  merchantCountry: Type.Optional(CountryCode('must be an ISO 3166-1 alpha-2 country code, e.g. DE: the ATM’s country')),
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
