import { Type } from 'typebox';
import { CardCurrencyFilter, CardId, CountryCode, CurrencyCode, DateText, ShortText, TradeId } from '../http/fields.js';
import { Money, RandomStr, SignedFields, StringEnum } from '../http/schemas.js';
import { Channel } from '../trades/types.js';

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

// The money verbs' inputs (authorize, clear, reverse, void, refund, withdraw, transfer, adjust, balance
// inquiry, fee), one source each: the sandbox's simulator (src/sandbox/schemas.ts) serves them as its
// request bodies.
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
  // Wallet tokens (decisions §15.5): what the link's field 48 subelements 33 and 34 name.
  tokenId: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 64,
      description:
        'must be a tokenId (tok_…): the wallet token the payment is made with (Apple Pay, Google Pay, a card on file; /sandbox/tokens/provision makes one). Optional; a token that is not this card’s declines the authorization (2734, declineReason token_unknown), one that is not active (pending, suspended, deleted) too (token_inactive); a token whose wallet the controls’ allowedWallets do not list is 2728 (wallet_not_allowed). tradeQuery shows it',
    }),
  ),
});
export const ClearBody = body({ tradeId: TradeId, amount: Type.Optional(Money), businessDate: BusinessDate });
export const ReverseBody = ClearBody;
export const VoidBody = body({ tradeId: TradeId, businessDate: BusinessDate });
export const RefundBody = body({ tradeId: TradeId, amount: Money, businessDate: BusinessDate });
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
