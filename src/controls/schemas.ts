import { type Static, Type } from 'typebox';
import { WALLET_PROVIDERS } from '../db/schema-tokens.js';
import { CardId, CountryCode, HolderId } from '../http/fields.js';
import { Envelope, orList, RandomStr, SignedFields, StringEnum } from '../http/schemas.js';
import { Channel } from '../trades/types.js';

/**
 * Spending controls (issue 16, decisions §11): what the program lets a card spend, set per card and
 * per cardholder. The card's setting of a field wins over the cardholder's.
 */

/** The windows a spending limit counts in: UTC calendar intervals (the week starts on Monday). */
export const SPEND_INTERVALS = ['per_authorization', 'daily', 'weekly', 'monthly', 'yearly', 'all_time'] as const;
export type SpendInterval = (typeof SPEND_INTERVALS)[number];

export const CHANNELS = Object.values(Channel);

const Mcc = Type.String({ pattern: '^[0-9]{4}$', description: 'must be a merchant category code: 4 digits, e.g. 5411' });
const MccList = (what: string) =>
  Type.Array(Mcc, { minItems: 1, maxItems: 200, uniqueItems: true, description: `${what}: 1 to 200 different 4-digit codes` });
const CountryList = (what: string) =>
  Type.Array(CountryCode('must be an ISO 3166-1 alpha-2 country code, e.g. DE'), {
    minItems: 1,
    maxItems: 250,
    uniqueItems: true,
    description: `${what}: 1 to 250 different ISO 3166-1 alpha-2 codes`,
  });

export const SpendingLimitSchema = Type.Object(
  {
    amount: Type.Number({
      exclusiveMinimum: 0,
      description: 'must be greater than 0: the most the interval may spend, in major units of the card’s currency',
    }),
    interval: StringEnum(SPEND_INTERVALS, `must be ${orList(SPEND_INTERVALS)}`),
    mccs: Type.Optional(
      Type.Array(Mcc, {
        minItems: 1,
        maxItems: 50,
        uniqueItems: true,
        description: 'the limit counts only these merchant categories: 1 to 50 different 4-digit codes; absent: every category',
      }),
    ),
  },
  { additionalProperties: false },
);
export type SpendingLimit = Static<typeof SpendingLimitSchema>;

export const ControlsSchema = Type.Object(
  {
    spendingLimits: Type.Optional(
      Type.Array(SpendingLimitSchema, {
        minItems: 1,
        maxItems: 10,
        description:
          '1 to 10 limits, each on its own interval and categories (two on the same interval and categories are 1002); an authorization must fit every limit that counts it',
      }),
    ),
    allowedMccs: Type.Optional(MccList('only these merchant categories are approved (an authorization without an mcc is declined)')),
    blockedMccs: Type.Optional(MccList('these merchant categories are declined')),
    allowedCountries: Type.Optional(
      CountryList('only acceptors in these countries are approved (an authorization without merchantCountry is declined)'),
    ),
    blockedCountries: Type.Optional(CountryList('acceptors in these countries are declined')),
    channels: Type.Optional(
      Type.Array(StringEnum(CHANNELS, `must be ${orList(CHANNELS)}`), {
        minItems: 1,
        maxItems: CHANNELS.length,
        uniqueItems: true,
        description: `only these channels are approved (${orList(CHANNELS)}; an authorization without a channel is declined)`,
      }),
    ),
    allowedWallets: Type.Optional(
      Type.Array(StringEnum(WALLET_PROVIDERS, `must be ${orList(WALLET_PROVIDERS)}`), {
        minItems: 1,
        maxItems: WALLET_PROVIDERS.length,
        uniqueItems: true,
        description: `an authorization made with a wallet token is approved only when the token’s wallet is one of these (${orList(WALLET_PROVIDERS)}; decisions §15.5); an authorization with the card’s own number, without a token, is not concerned`,
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'Spending controls: each rule set here replaces the cardholder’s for this card; a rule left out follows the cardholder’s. allowedMccs and blockedMccs are one rule (set one of them, not both), so are allowedCountries and blockedCountries. `{}` sets none.',
  },
);
export type Controls = Static<typeof ControlsSchema>;

/** A limit as cardQuery reports it: where it comes from and what is left of it now. */
export const SpendingStateSchema = Type.Object({
  source: StringEnum(['card', 'cardholder'] as const, 'card or cardholder: whose limit this is'),
  amount: Type.Number({ description: 'the limit, in major units of the card’s currency' }),
  interval: StringEnum(SPEND_INTERVALS, orList(SPEND_INTERVALS)),
  mccs: Type.Union([Type.Array(Type.String()), Type.Null()], { description: 'the categories it counts; null: every category' }),
  spent: Type.Number({
    description:
      'what counts against it now: approved authorizations of the current interval not reversed or voided (a cardholder’s limit: of all its cards in this currency); 0 for per_authorization',
  }),
  remaining: Type.Number({ description: 'amount − spent, at least 0' }),
  resetsAt: Type.Union([Type.String(), Type.Null()], {
    description: 'when the interval ends (ISO 8601, UTC); null for per_authorization and all_time',
  }),
});

export const ControlsModelSchema = Type.Object({
  cardId: Type.Union([Type.String(), Type.Null()], { description: 'the card whose controls these are; null for a cardholder’s' }),
  holderId: Type.String(),
  controls: ControlsSchema,
});

export const ControlsUpdateBody = Type.Object(
  {
    ...SignedFields,
    cardId: Type.Optional(CardId),
    holderId: Type.Optional(HolderId),
    controls: ControlsSchema,
    randomStr: RandomStr,
  },
  { additionalProperties: false },
);

export const ControlsEnvelope = Envelope(ControlsModelSchema);
