import { type Static, Type } from 'typebox';
import { WALLET_PROVIDERS } from '../db/schema-tokens.js';
import { CardId, Id } from '../http/fields.js';
import { orList, RandomStr, SignedFields, StringEnum } from '../http/schemas.js';
import type { OperationInput } from '../operation-input.js';
import { DeviceTypeEnum, TokenSchema, TspAuthMethodSchema } from './schemas.js';

/**
 * The sandbox's TSP (decisions §15.6): a merchant plays the wallet's token service provider for one
 * of its cards, through the same provisioning and code verification as `POST /tsp/…`. Signed
 * writes, once per randomStr.
 */

const body = <P extends Parameters<typeof Type.Object>[0]>(props: P) =>
  Type.Object({ ...SignedFields, ...props, randomStr: RandomStr }, { additionalProperties: false });

export const SandboxTokenProvisionBody = body({
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

export const SandboxTokenVerifyBody = body({
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
