import { Type } from 'typebox';
import { ENDPOINT_OUTCOMES } from '../db/schema.js';
import { WALLET_PROVIDERS } from '../db/schema-tokens.js';
import { CardCurrencyFilter, DateText, Id, TradeId } from '../http/fields.js';
import { CodeEnum, Envelope, orList, RandomStr, SignedFields, StringEnum } from '../http/schemas.js';
import { TokenDeviceSchema } from '../tokens/schemas.js';
import { Channel, DeclineReason, TRADE_STATUSES, TradeStatus, TradeType } from './types.js';

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

const nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

/** The acceptor, as the network sent it with the authorization (null: not sent). */
export const AcceptorSchema = Type.Object({
  mcc: nullable(Type.String({ description: 'merchant category code, 4 digits' })),
  name: nullable(Type.String()),
  city: nullable(Type.String()),
  country: nullable(Type.String({ description: 'ISO 3166-1 alpha-2' })),
});

/** How the program decided an authorization (docs/transactions.md, "Authorization decisions"). */
export const DecisionSchema = Type.Object({
  approved: Type.Boolean(),
  declineReason: Type.Union([StringEnum(Object.values(DeclineReason), 'why it was declined'), Type.Null()], {
    description: 'null when approved',
  }),
  code: Type.Union([Type.String(), Type.Null()], {
    description: 'the result code the decline answered (2724, 2725, 2728, 2729, 2731); null when approved',
  }),
  message: Type.String({ description: 'the decision in words' }),
  endpoint: Type.Union(
    [
      Type.Object({
        outcome: StringEnum(
          ENDPOINT_OUTCOMES,
          `${orList(ENDPOINT_OUTCOMES)}: what the endpoint said, or that it did not answer in time or readably`,
        ),
        latencyMs: Type.Integer({ description: 'how long it took to answer (or to fail), ms' }),
      }),
      Type.Null(),
    ],
    { description: 'the merchant’s real-time authorization endpoint, when it was asked; null otherwise' },
  ),
});

/** One authorization the network asked for, approved or declined (decisions §11). */
export const AuthorizationSchema = Type.Object({
  id: Type.String({
    description:
      'the 150 trade’s tradeId when approved; when declined, the id the merchant’s authorization endpoint was told if it was asked, else dcl_…',
  }),
  cardId: Type.String(),
  cardNo: Type.String({ description: 'first 6 and last 4 digits, the rest *' }),
  currency: Type.String(),
  amount: Type.Number({ description: 'in the card currency, major units' }),
  currencyTxn: Type.String(),
  txnAmount: Type.Number({ description: 'in currencyTxn, major units' }),
  merchant: AcceptorSchema,
  channel: Type.Union([StringEnum(Object.values(Channel), 'how the card was presented'), Type.Null()]),
  decision: DecisionSchema,
  remark: Type.String(),
  createdAt: Type.String({ description: 'when the network asked, ISO 8601 UTC' }),
});

export const TradeQueryBody = Type.Object({ ...SignedFields, tradeId: TradeId, randomStr: RandomStr }, { additionalProperties: false });

/** The 3-D Secure authentication whose value an authorization carried (decisions §14.5). */
export const TradeAuthenticationSchema = Type.Object({
  acsTransID: Type.String({ description: 'the authentication (threeDsQuery)' }),
  transStatus: Type.String({ description: 'the authentication’s outcome: Y (a value is only good from a Y)' }),
  eci: Type.Union([Type.String(), Type.Null()], { description: 'the ECI it gave (05 Visa, 02 Mastercard)' }),
  method: StringEnum(['frictionless', 'otp', 'oob'], 'how the cardholder was authenticated: frictionless, or a challenge by otp or oob'),
});

/**
 * The card network message behind a transaction (decisions §12.3): the retrieval reference number a
 * cardholder's bank or the acquirer quotes, which is not the record's remark (its merchant).
 */
export const NetworkOriginSchema = Type.Object({
  rrn: Type.Union([Type.String(), Type.Null()], { description: 'the retrieval reference number (field 37); null when not sent' }),
  acquirer: Type.String({ description: 'the acquiring institution id (field 32)' }),
  stan: Type.String({ description: 'the system trace audit number (field 11)' }),
  mti: Type.String({ description: 'the message type, e.g. 0100, 0200, 0220' }),
});

/** The wallet token an authorization was made with (decisions §15.5), as tradeQuery shows it. */
export const TradeTokenSchema = Type.Object({
  tokenId: Type.String({ description: 'the token (tokenQuery): tok_…' }),
  walletProvider: StringEnum(WALLET_PROVIDERS, `the wallet: ${orList(WALLET_PROVIDERS)}`),
  device: TokenDeviceSchema,
});

/** tradeQuery's answer: the record (null for a declined authorization) and the authorization, if it is one. */
export const TradeDetailSchema = Type.Object({
  trade: Type.Union([TradeRecordSchema, Type.Null()], { description: 'the 4.1 record; null for a declined authorization' }),
  authorization: Type.Union([AuthorizationSchema, Type.Null()], {
    description: 'for an authorization (tradeType 150, or a declined one): the acceptor and the decision; null otherwise',
  }),
  authentication: Type.Union([TradeAuthenticationSchema, Type.Null()], {
    description:
      'the 3-D Secure authentication whose value the authorization carried (an approved one took it; a declined one shows it when the value was this card’s); null otherwise',
  }),
  token: Type.Union([TradeTokenSchema, Type.Null()], {
    description:
      'the wallet token the authorization was made with (the link’s field 48 subelements 33/34, the sandbox’s tokenId): its wallet and device as they are now; null without one, or when the token was not this card’s (declineReason token_unknown)',
  }),
  network: Type.Union([NetworkOriginSchema, Type.Null()], {
    description:
      'the card network message that produced it (or its authorization’s): its RRN, acquirer, STAN and type; null for the sandbox’s transactions',
  }),
});
export const TradeDetailEnvelope = Envelope(TradeDetailSchema);

/**
 * What a merchant's authorization endpoint receives (decisions §11): the authorization as tradeQuery
 * will show it, under the id it will have, without its decision, with its cardholder, its fee and
 * what the card has available. Documented as the OpenAPI document's `authorization.request` webhook.
 */
export const AuthorizationRequestSchema = Type.Object({
  type: Type.Literal('authorization.request'),
  authorization: Type.Object({
    ...Object.fromEntries(Object.entries(AuthorizationSchema.properties).filter(([k]) => k !== 'decision')),
    holderId: Type.String(),
    fee: Type.Number({ description: 'the fees it would charge, in the card currency, major units' }),
    availableBalance: Type.Number({ description: 'what the card has available now, before this authorization' }),
  }),
});

/** What the endpoint answers, with a 2xx status. */
export const AuthorizationAnswerSchema = Type.Object({
  approved: Type.Boolean(),
  reason: Type.Optional(
    Type.String({ maxLength: 200, description: 'why it declines, kept in the decline’s message (plain text; control characters drop it)' }),
  ),
});
