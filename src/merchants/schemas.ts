import { type Static, Type } from 'typebox';
import { AUTHORIZATION_DEFAULTS } from '../db/schema.js';
import { orList, RandomStr, SignedFields, StringEnum } from '../http/schemas.js';

/** The merchant's real-time authorization endpoint (decisions §11), as it sets and reads it. */
export const AuthorizationEndpointSchema = Type.Object({
  authorizationUrl: Type.Union([Type.String(), Type.Null()], {
    description: 'where each authorization the program approves is sent for the merchant’s decision; null: none',
  }),
  timeoutMs: Type.Integer({ description: 'how long the endpoint may take to answer, ms' }),
  defaultDecision: StringEnum(AUTHORIZATION_DEFAULTS, `${orList(AUTHORIZATION_DEFAULTS)}: what applies without a readable answer in time`),
});
export type AuthorizationEndpointModel = Static<typeof AuthorizationEndpointSchema>;

export const AuthorizationEndpointBody = Type.Object(
  {
    ...SignedFields,
    authorizationUrl: Type.Union(
      [
        Type.String({ minLength: 1, maxLength: 2048, description: 'must be an absolute http(s) URL, at most 2048 characters' }),
        Type.Null(),
      ],
      {
        description: 'the endpoint: https to a public host in production (the sandbox also allows http and loopback); null removes it',
      },
    ),
    timeoutMs: Type.Optional(
      Type.Integer({
        minimum: 100,
        maximum: 5000,
        description: 'must be 100 to 5000 milliseconds; left out: unchanged (2000 until first set)',
      }),
    ),
    defaultDecision: Type.Optional(
      StringEnum(AUTHORIZATION_DEFAULTS, `must be ${orList(AUTHORIZATION_DEFAULTS)}; left out: unchanged (decline until first set)`),
    ),
    randomStr: RandomStr,
  },
  { additionalProperties: false },
);

export const AuthorizationEndpointQueryBody = Type.Object({ ...SignedFields, randomStr: RandomStr }, { additionalProperties: false });
