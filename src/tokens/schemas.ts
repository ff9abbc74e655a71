import { type Static, Type } from 'typebox';
import {
  AUTH_METHOD_TYPES,
  DEVICE_TYPES,
  PROVISION_DECISIONS,
  TOKEN_SOURCES,
  TOKEN_STATUSES,
  TSP_EVENTS,
  WALLET_PROVIDERS,
} from '../db/schema-tokens.js';
import { CardId, Id } from '../http/fields.js';
import { Envelope, orList, RandomStr, SignedFields, StringEnum } from '../http/schemas.js';
import type { OperationInput } from '../operation-input.js';

/*
 * Wallet tokens (decisions §15): the merchant-facing token, and the TSP's wire bodies (bare JSON, not
 * the merchant envelope). Each `description` is the rule a bad value broke: the TSP's 400 quotes it
 * after the element's name ("device.name: must be at most 64 characters").
 */

const text = (max: number, description: string) =>
  // No control characters: a name is shown in the console and sent in callbacks.
  Type.String({ minLength: 1, maxLength: max, pattern: '^[^\\u0000-\\u001f\\u007f]+$', description });

export const TokenStatusEnum = StringEnum(TOKEN_STATUSES, `${orList(TOKEN_STATUSES)}`);
export const TokenSourceEnum = StringEnum(TOKEN_SOURCES, `who made the change: ${orList(TOKEN_SOURCES)}`);
export const WalletProviderEnum = StringEnum(WALLET_PROVIDERS, `must be ${orList(WALLET_PROVIDERS)}`);
export const DeviceTypeEnum = StringEnum(DEVICE_TYPES, `must be ${orList(DEVICE_TYPES)}`);
export const AuthMethodTypeEnum = StringEnum(AUTH_METHOD_TYPES, `must be ${orList(AUTH_METHOD_TYPES)}`);

// ---- The merchant-facing token (tokenQuery, tokenList, the token.updated callback; decisions §15.6)

export const TokenHistoryEntrySchema = Type.Object({
  status: TokenStatusEnum,
  source: TokenSourceEnum,
  at: Type.String({ description: 'when (ISO 8601)' }),
  reason: Type.Union([Type.String(), Type.Null()], { description: 'why, when known' }),
});
export type TokenHistoryEntry = Static<typeof TokenHistoryEntrySchema>;

export const TokenDeviceSchema = Type.Object({
  type: Type.Union([DeviceTypeEnum, Type.Null()], { description: 'the device’s kind; null: not given (a card on file)' }),
  name: Type.Union([Type.String(), Type.Null()], { description: 'the device’s name as the wallet gave it; null: not given' }),
});

export const TokenSchema = Type.Object({
  tokenId: Type.String({ description: 'the service’s id of the token (tok_…)' }),
  cardId: Type.String(),
  status: StringEnum(TOKEN_STATUSES, 'pending (the cardholder has not confirmed yet), active, suspended, or deleted (final)'),
  walletProvider: StringEnum(WALLET_PROVIDERS, orList(WALLET_PROVIDERS)),
  tokenRequestorName: Type.String({ description: 'the wallet or merchant the token is for' }),
  tokenLast4: Type.Union([Type.String(), Type.Null()], { description: 'the token’s last 4 digits (not the card’s); null: not given' }),
  device: TokenDeviceSchema,
  createdAt: Type.String({ description: 'ISO 8601' }),
  updatedAt: Type.String({ description: 'ISO 8601' }),
  history: Type.Array(TokenHistoryEntrySchema, { description: 'each change of status, oldest first' }),
});
export type Token = Static<typeof TokenSchema>;

// ---- From the TSP (decisions §15.2)

export const TokenReferenceId = Type.String({
  pattern: '^[A-Za-z0-9._:-]{1,64}$',
  description: 'must be 1 to 64 letters, digits or . _ : -',
});
const Yymm = (what: string) => Type.String({ pattern: '^[0-9]{2}(0[1-9]|1[0-2])$', description: `must be ${what} written YYMM` });

export const TspDeviceSchema = Type.Object(
  {
    type: DeviceTypeEnum,
    name: Type.Optional(text(64, 'must be 1 to 64 characters without control characters')),
    ip: Type.Optional(Type.String({ maxLength: 45, pattern: '^[0-9A-Fa-f:.]{2,45}$', description: 'must be an IPv4 or IPv6 address' })),
    locale: Type.Optional(
      Type.String({ pattern: '^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8}){0,3}$', description: 'must be a language tag such as de-DE' }),
    ),
  },
  { additionalProperties: false },
);

export const TspProvisionRequestSchema = Type.Object(
  {
    requestId: Type.String({ pattern: '^[A-Za-z0-9._:-]{1,64}$', description: 'must be 1 to 64 letters, digits or . _ : -' }),
    tokenReferenceId: TokenReferenceId,
    tokenRequestorId: Type.String({ pattern: '^[0-9]{11}$', description: 'must be 11 digits' }),
    tokenRequestorName: text(64, 'must be 1 to 64 characters without control characters'),
    walletProvider: WalletProviderEnum,
    accountNumber: Type.String({ pattern: '^[0-9]{12,19}$', description: 'must be 12 to 19 digits' }),
    expiry: Yymm('the card’s expiry'),
    cvv2: Type.Optional(Type.String({ pattern: '^[0-9]{3,4}$', description: 'must be 3 or 4 digits' })),
    tokenLast4: Type.Optional(Type.String({ pattern: '^[0-9]{4}$', description: 'must be 4 digits' })),
    tokenExpiry: Type.Optional(Yymm('the token’s expiry')),
    device: Type.Optional(TspDeviceSchema),
    walletRiskScore: Type.Optional(Type.Integer({ minimum: 0, maximum: 9, description: 'must be a whole number from 0 to 9' })),
    walletReasonCodes: Type.Optional(
      Type.Array(Type.String({ pattern: '^[A-Za-z0-9._-]{1,32}$', description: 'must be 1 to 32 letters, digits or . _ -' }), {
        maxItems: 10,
        description: 'must be at most 10 codes',
      }),
    ),
  },
  { additionalProperties: false },
);
export type TspProvisionRequest = Static<typeof TspProvisionRequestSchema>;

export const TspAuthMethodSchema = Type.Object({
  id: Type.String({ description: 'the method’s id, for /tsp/activation-code' }),
  type: AuthMethodTypeEnum,
  value: Type.String({ description: 'where the code goes, masked (••• ••• 1234, j•••@example.com); the merchant’s app for app' }),
});
export type TspAuthMethod = Static<typeof TspAuthMethodSchema>;

export const TspProvisionAnswerSchema = Type.Object({
  decision: StringEnum(PROVISION_DECISIONS, orList(PROVISION_DECISIONS)),
  reason: Type.Optional(Type.String({ description: 'why, when not approved' })),
  tokenId: Type.Optional(Type.String({ description: 'the service’s id of the token (tok_…); none on a decline' })),
  authenticationMethods: Type.Optional(Type.Array(TspAuthMethodSchema)),
});
export type TspProvisionAnswer = Static<typeof TspProvisionAnswerSchema>;

export const TspActivationCodeRequestSchema = Type.Object(
  {
    tokenReferenceId: TokenReferenceId,
    methodId: Type.String({ pattern: '^[A-Za-z0-9_-]{1,16}$', description: 'must be the id of one of the token’s code methods' }),
  },
  { additionalProperties: false },
);
export type TspActivationCodeRequest = Static<typeof TspActivationCodeRequestSchema>;

export const TspActivationCodeAnswerSchema = Type.Object({
  methodId: Type.String(),
  expiresAt: Type.String({ description: 'ISO 8601: the code is valid 10 minutes' }),
});
export type TspActivationCodeAnswer = Static<typeof TspActivationCodeAnswerSchema>;

export const TspVerifyRequestSchema = Type.Object(
  {
    tokenReferenceId: TokenReferenceId,
    code: Type.String({ pattern: '^[0-9]{6}$', description: 'must be 6 digits' }),
  },
  { additionalProperties: false },
);
export type TspVerifyRequest = Static<typeof TspVerifyRequestSchema>;

export const TspVerifyAnswerSchema = Type.Object({
  valid: Type.Boolean(),
  attemptsLeft: Type.Integer({ description: 'wrong codes still allowed; 0: the step-up is over (the token deleted)' }),
  reason: Type.Optional(
    Type.String({
      description:
        'when not valid: wrong, expired, no_code, too_many_failures (9 wrong codes on the card’s tokens within 24 hours: not compared, the token deleted)',
    }),
  ),
});
export type TspVerifyAnswer = Static<typeof TspVerifyAnswerSchema>;

export const TspNotifyRequestSchema = Type.Object(
  {
    tokenReferenceId: TokenReferenceId,
    event: StringEnum(TSP_EVENTS, `must be ${orList(TSP_EVENTS)}`),
    at: Type.String({
      pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})$',
      description: 'must be an ISO 8601 date and time with its offset, e.g. 2026-11-27T10:00:00Z',
    }),
    reason: Type.Optional(text(200, 'must be 1 to 200 characters without control characters')),
    device: Type.Optional(TspDeviceSchema),
  },
  { additionalProperties: false },
);
export type TspNotifyRequest = Static<typeof TspNotifyRequestSchema>;

export const TspNotifyAnswerSchema = Type.Object({
  tokenId: Type.String(),
  status: StringEnum(TOKEN_STATUSES, orList(TOKEN_STATUSES)),
});
export type TspNotifyAnswer = Static<typeof TspNotifyAnswerSchema>;

// ---- The sandbox's TSP (decisions §15.6)

/**
 * The sandbox's TSP (decisions §15.6): a merchant plays the wallet's token service provider for one
 * of its cards, through the same provisioning and code verification as `POST /tsp/…`. Signed
 * writes, once per randomStr.
 */

const sandboxBody = <P extends Parameters<typeof Type.Object>[0]>(props: P) =>
  Type.Object({ ...SignedFields, ...props, randomStr: RandomStr }, { additionalProperties: false });

export const SandboxTokenProvisionBody = sandboxBody({
  cardId: CardId,
  walletProvider: StringEnum(WALLET_PROVIDERS, `must be ${orList(WALLET_PROVIDERS)}`),
  walletRiskScore: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: 9,
      description:
        'must be a whole number from 0 to 9: the wallet’s risk score, higher is riskier (default 0). Without a token decision endpoint: 7 or more declines, 4 or more asks for a step-up',
    }),
  ),
  device: Type.Optional(
    Type.Object(
      {
        type: DeviceTypeEnum,
        name: Type.Optional(
          Type.String({
            minLength: 1,
            maxLength: 64,
            pattern: '^[^\\u0000-\\u001f\\u007f]+$',
            description: 'must be 1 to 64 characters without control characters',
          }),
        ),
      },
      { additionalProperties: false },
    ),
  ),
});
export type SandboxTokenProvisionInput = OperationInput<Static<typeof SandboxTokenProvisionBody>>;

export const SandboxTokenProvisioningSchema = Type.Object({
  decision: StringEnum(['approve', 'require_authentication', 'decline'] as const, 'approve, require_authentication or decline'),
  reason: Type.Union([Type.String(), Type.Null()], { description: 'why, when not approved' }),
  tokenId: Type.Union([Type.String(), Type.Null()], { description: 'the token (tok_…); null on a decline (no token is made)' }),
  tokenReferenceId: Type.String({
    description: 'the TSP’s id of the token, as the sandbox made it up: the card network link’s field 48 subelement 33',
  }),
  tokenRequestorId: Type.String({ description: 'the wallet’s token requestor id (11 digits): field 48 subelement 34' }),
  authenticationMethods: Type.Array(TspAuthMethodSchema, { description: 'with require_authentication: how the cardholder may confirm' }),
  codeSent: Type.Union(
    [
      Type.Object({
        methodId: Type.String(),
        type: StringEnum(['otp_sms', 'otp_email'] as const, 'otp_sms or otp_email'),
        expiresAt: Type.String({ description: 'ISO 8601: the code is valid 10 minutes' }),
      }),
      Type.Null(),
    ],
    {
      description:
        'the one-time code asked for at once for the first code method (its code is in your token.otp callback; finish with /sandbox/tokens/verify); null when none was (approved, declined, or only app offered: tokenActivate)',
    },
  ),
  token: Type.Union([TokenSchema, Type.Null()], { description: 'the token as tokenQuery gives it; null on a decline' }),
});
export type SandboxTokenProvisioning = Static<typeof SandboxTokenProvisioningSchema>;

export const SandboxTokenVerifyBody = sandboxBody({
  tokenId: Id('tokenId'),
  code: Type.String({ pattern: '^[0-9]{6}$', description: 'must be 6 digits: the code from your token.otp callback' }),
});
export type SandboxTokenVerifyInput = OperationInput<Static<typeof SandboxTokenVerifyBody>>;

export const SandboxTokenVerificationSchema = Type.Object({
  valid: Type.Boolean(),
  attemptsLeft: Type.Integer({ description: 'wrong codes still allowed; 0: the step-up is over (the token deleted)' }),
  reason: Type.Union([Type.String(), Type.Null()], { description: 'when not valid: wrong, expired, no_code' }),
  token: TokenSchema,
});
export type SandboxTokenVerification = Static<typeof SandboxTokenVerificationSchema>;

/** Every refusal of the TSP endpoint: `error` a word, `detail` names the element and the rule. */
export const TspErrorSchema = Type.Object({
  error: Type.String({ description: 'invalid_request, not_found, conflict, too_many_codes, unavailable, …' }),
  detail: Type.String(),
});
export type TspError = Static<typeof TspErrorSchema>;

// ---- Merchant operations (decisions §15.6): signed, section 6 style

const body = <P extends Parameters<typeof Type.Object>[0]>(props: P) =>
  Type.Object({ ...SignedFields, ...props, randomStr: RandomStr }, { additionalProperties: false });

export const TokenId = Id('tokenId (tok_…)');

/** Why a merchant or the operator changes a token: told to the TSP and kept in the token's history. */
const ActionReason = Type.String({
  maxLength: 200,
  pattern: '^[^\\u0000-\\u001F\\u007F-\\u009F]*$',
  description: 'must be at most 200 characters, without control characters ("" or absent: none)',
});

export const TokenListBody = body({
  cardId: Type.Optional(CardId),
  status: Type.Optional(StringEnum(TOKEN_STATUSES, `must be ${orList(TOKEN_STATUSES)}`)),
  start: Type.Integer({ minimum: 0, maximum: 1_000_000, description: 'must be a whole number ≥ 0: the index of the first token' }),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'must be a whole number from 1 to 100 (default 30)' })),
});

/** tokenQuery and tokenActivate name only the token. */
export const TokenRefBody = body({ tokenId: TokenId });

/** tokenSuspend, tokenResume and tokenDelete: the token and why. */
export const TokenActionBody = body({ tokenId: TokenId, reason: Type.Optional(ActionReason) });

export const TokenEnvelope = Envelope(TokenSchema);

export const TokenPageSchema = Type.Object({
  total: Type.Integer({ description: 'tokens matching the filters' }),
  tokens: Type.Array(TokenSchema),
});

/** The step-up methods a merchant may offer (decisions §15.3). */
const Methods = Type.Array(AuthMethodTypeEnum, {
  minItems: 1,
  maxItems: AUTH_METHOD_TYPES.length,
  uniqueItems: true,
  description: `must be a list of distinct methods, each ${orList(AUTH_METHOD_TYPES)}`,
});

export const TokenSettingsUpdateBody = body({
  decisionUrl: Type.Optional(
    Type.Union(
      [
        Type.String({ minLength: 1, maxLength: 2048, description: 'must be an absolute http(s) URL, at most 2048 characters' }),
        Type.Null(),
      ],
      {
        description:
          'the token decision endpoint: https to a public host in production (the sandbox also allows http and loopback); null removes it; left out: unchanged',
      },
    ),
  ),
  methods: Type.Optional(
    Type.Union([Methods, Type.Null()], {
      description:
        'the step-up methods offered to a cardholder, in order: otp_sms (needs the cardholder’s mobile number), otp_email, app (tokenActivate); null: the default; left out: unchanged',
    }),
  ),
});

export const TokenSettingsQueryBody = body({});

export const TokenSettingsSchema = Type.Object({
  decisionUrl: Type.Union([Type.String(), Type.Null()], {
    description: 'where each provisioning the program would not decline is sent as a token.decision event; null: the built-in rules decide',
  }),
  methods: Type.Union([Type.Array(AuthMethodTypeEnum), Type.Null()], {
    description:
      'the step-up methods offered, in order; null: the default (otp_sms when the cardholder has a mobile number, and otp_email)',
  }),
});
export type TokenSettings = Static<typeof TokenSettingsSchema>;
