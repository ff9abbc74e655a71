import { type Static, Type } from 'typebox';
import { CHALLENGE_METHODS, THREE_DS_DECIDERS } from '../db/schema-three-ds.js';
import { CardId, CurrencyCode, DateText } from '../http/fields.js';
import { orList, RandomStr, SignedFields, StringEnum } from '../http/schemas.js';
import { AResSchema } from './emv-messages.js';

const body = <P extends Parameters<typeof Type.Object>[0]>(props: P) =>
  Type.Object({ ...SignedFields, ...props, randomStr: RandomStr }, { additionalProperties: false });

export const AcsTransId = Type.String({
  pattern: '^[0-9A-Za-z]{8}-[0-9A-Za-z]{4}-[0-9A-Za-z]{4}-[0-9A-Za-z]{4}-[0-9A-Za-z]{12}$',
  description: 'must be the acsTransID of the authentication (a UUID, as the ARes gave it)',
});

export const ThreeDsQueryBody = body({ acsTransID: AcsTransId });

export const ThreeDsListBody = body({
  cardId: Type.Optional(CardId),
  from: Type.Optional(DateText('must be the first day of creation written yyyy-MM-dd')),
  to: Type.Optional(DateText('must be the last day of creation written yyyy-MM-dd')),
  start: Type.Integer({ minimum: 0, maximum: 1_000_000, description: 'must be a whole number ≥ 0: the index of the first authentication' }),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'must be a whole number from 1 to 100 (default 30)' })),
});

const ChallengeMethod = StringEnum(
  CHALLENGE_METHODS,
  `must be ${orList(CHALLENGE_METHODS)}: otp, a one-time code the merchant delivers (threeDs.otp); oob, the merchant’s app approves (threeDs.challenge)`,
);

export const ThreeDsSettingsUpdateBody = body({
  decisionUrl: Type.Optional(
    Type.Union(
      [
        Type.String({ minLength: 1, maxLength: 2048, description: 'must be an absolute http(s) URL, at most 2048 characters' }),
        Type.Null(),
      ],
      {
        description:
          'the 3-D Secure decision endpoint: https to a public host in production (the sandbox also allows http and loopback); null removes it; left out: unchanged',
      },
    ),
  ),
  challengeMethod: Type.Optional(ChallengeMethod),
});

export const ThreeDsSettingsQueryBody = body({});

export const ThreeDsSettingsSchema = Type.Object({
  decisionUrl: Type.Union([Type.String(), Type.Null()], {
    description: 'where each AReq the program would not refuse is sent as a threeDs.decision event; null: none (the program decides)',
  }),
  challengeMethod: StringEnum(CHALLENGE_METHODS, `${orList(CHALLENGE_METHODS)}: how cardholders are challenged`),
});
export type ThreeDsSettings = Static<typeof ThreeDsSettingsSchema>;

const nullable = <T extends Parameters<typeof Type.Union>[0][number]>(s: T, description: string) =>
  Type.Union([s, Type.Null()], { description });

export const AuthenticationSchema = Type.Object({
  acsTransID: Type.String({ description: 'the ACS’s transaction id (a random UUID)' }),
  cardId: Type.String(),
  cardNo: Type.String({ description: 'first 6 and last 4 digits, the rest *' }),
  transStatus: Type.String({ description: 'Y authenticated, N not authenticated, U could not be performed, C challenge under way' }),
  transStatusReason: nullable(Type.String(), 'why N or U, EMVCo’s code (docs/3ds.md); null otherwise'),
  eci: nullable(Type.String(), 'the electronic commerce indicator; null when none'),
  authenticationType: nullable(Type.String(), '02 one-time code, 03 out of band; null without a challenge'),
  challengeMethod: nullable(
    StringEnum(CHALLENGE_METHODS, orList(CHALLENGE_METHODS)),
    'how the cardholder was challenged; null: no challenge',
  ),
  decidedBy: StringEnum(
    THREE_DS_DECIDERS,
    `${orList(THREE_DS_DECIDERS)}: a refusal of the card's checks or limit, the low-value exemption, a challenge mandated by the requestor or by risk, the merchant's decision endpoint (answered, not in time, unreadable)`,
  ),
  merchantName: nullable(Type.String(), 'the acceptor’s name as the AReq gave it'),
  amount: nullable(Type.Number(), 'the purchase amount, major units; null for a non-payment authentication'),
  currency: nullable(Type.String(), 'ISO 4217 (alphabetic when the service knows the currency, else the numeric code)'),
  deviceChannel: Type.String({ description: '01 app, 02 browser, 03 requestor-initiated' }),
  messageCategory: Type.String({ description: '01 payment, 02 non-payment' }),
  createdAt: Type.String({ description: 'ISO 8601: when the AReq arrived' }),
  completedAt: nullable(
    Type.String(),
    'ISO 8601: when the outcome was final (the ARes, or the end of the challenge); null while a challenge runs',
  ),
  tradeIds: Type.Array(Type.String(), { description: 'the authorizations that carried its authentication value' }),
});
export type AuthenticationRecord = Static<typeof AuthenticationSchema>;

export const AuthenticationPageSchema = Type.Object({
  total: Type.Integer({ description: 'authentications matching the filters' }),
  authentications: Type.Array(AuthenticationSchema),
});

export const SandboxAuthenticateBody = body({
  cardId: CardId,
  amount: Type.Number({ description: 'must be the purchase amount in major units, e.g. 12.5' }),
  currency: Type.Optional(CurrencyCode),
  merchantName: Type.Optional(Type.String({ minLength: 1, maxLength: 40, description: 'must be 1 to 40 characters: the shop’s name' })),
  challengeInd: Type.Optional(
    Type.String({
      pattern: '^0[1-9]$',
      description: 'must be threeDSRequestorChallengeInd as EMVCo codes it, 01 to 09 (04: challenge mandated)',
    }),
  ),
});

export const SandboxAuthenticationSchema = Type.Object({
  ares: AResSchema,
  challenge: Type.Union(
    [
      Type.Object({
        acsURL: Type.String({ description: 'where the form posts' }),
        method: Type.Literal('POST'),
        creq: Type.String({ description: 'the form’s field creq: Base64url JSON CReq (challengeWindowSize 05)' }),
      }),
      Type.Null(),
    ],
    { description: 'with transStatus C, the form that opens the challenge in a browser; else null' },
  ),
});
export type SandboxAuthentication = Static<typeof SandboxAuthenticationSchema>;

export const ThreeDsChallengeRespondBody = body({
  acsTransID: AcsTransId,
  result: StringEnum(
    ['approved', 'declined'] as const,
    'must be approved or declined: whether the cardholder confirmed the purchase in your app',
  ),
});

export const SandboxThreeDsCompleteBody = body({
  acsTransID: AcsTransId,
  otp: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 16,
      description: 'must be the code the cardholder would type (challenge method otp): 6 digits',
    }),
  ),
  result: Type.Optional(
    StringEnum(['approved', 'declined'] as const, 'must be approved or declined: the answer of your app (challenge method oob)'),
  ),
});

export const SandboxThreeDsCompletionSchema = Type.Object({
  authentication: AuthenticationSchema,
  attemptsLeft: Type.Union([Type.Integer(), Type.Null()], {
    description: 'wrong codes that may still be entered while the challenge goes on; null once it is over or for oob',
  }),
  cres: Type.Union([Type.String(), Type.Null()], {
    description: 'once the challenge is over, the CRes the page would post to the notificationURL (Base64url JSON); else null',
  }),
  eci: Type.Union([Type.String(), Type.Null()], {
    description: 'once the challenge is over, the ECI of the RReq, as the directory server hands it to the 3DS Server; else null',
  }),
  authenticationValue: Type.Union([Type.String(), Type.Null()], {
    description:
      'once the challenge ended Y, the authentication value of the RReq (28 Base64 characters), as the directory server hands it to the 3DS Server: send it with the eci in the authorization (sandboxAuthorize, or field 48 on the link), once; else null. Sandbox only: in production it reaches you through the DS and your 3DS Server, never through this API',
  }),
});
export type SandboxThreeDsCompletion = Static<typeof SandboxThreeDsCompletionSchema>;
