import { Type } from 'typebox';
import { Email } from '../http/fields.js';
import { RandomStr, SignedFields } from '../http/schemas.js';

/** The login-free link's request (interface 4.4). */
export const LinkBody = Type.Object(
  {
    ...SignedFields,
    email: Type.Optional(
      Email({ maxLength: 64, optionalEmpty: true, description: 'must be the user’s e-mail address (at most 64 characters)' }),
    ),
    // Freshness (decisions §11): single-use like a read's; required with the timestamp in production.
    randomStr: Type.Optional(RandomStr),
  },
  { additionalProperties: false },
);
