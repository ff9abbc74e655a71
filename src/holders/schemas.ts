import { Type } from 'typebox';
import { Envelope, IntEnum, RandomStr, SignedFields } from '../http/schemas.js';

const Base64 = (what: string, maxLength: number, minLength = 1) =>
  Type.String({ minLength, maxLength, description: `must be the ${what} as Base64 of UTF-8 text` });

export const HolderCreateBody = Type.Object(
  {
    ...SignedFields,
    mobile: Type.String({ pattern: '^\\+[1-9][0-9]{5,14}$', description: 'must be + followed by 6 to 15 digits (country code first)' }),
    firstName: Base64('first name', 400),
    lastName: Type.Optional(Base64('last name (empty or absent when there is none)', 400, 0)),
    email: Type.String({
      maxLength: 254,
      pattern:
        "^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$",
      description: 'must be an e-mail address',
    }),
    dateOfBirth: Type.String({ pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$', description: 'must be a date written yyyy-MM-dd' }),
    nationality: Type.String({ pattern: '^[A-Z]{2}$', description: 'must be a two-letter ISO 3166-1 country code in capitals' }),
    sex: IntEnum([1, 2], 'must be 1 (male) or 2 (female)'),
    countryCode: Type.String({ pattern: '^[A-Z]{2}$', description: 'must be a two-letter European country code in capitals' }),
    town: Base64('region or city in English', 400),
    address: Base64('address in English', 1000),
    postCode: Type.String({
      pattern: '^[A-Za-z0-9][A-Za-z0-9 -]{1,11}$',
      description: 'must be 2 to 12 letters, digits, spaces or hyphens',
    }),
    idnoType: IntEnum([1, 2], 'must be 1 (European ID card) or 2 (passport)'),
    idno: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9 -]{2,39}$', description: 'must be 3 to 40 letters, digits, spaces or hyphens' }),
    randomStr: RandomStr,
  },
  { additionalProperties: false },
);

export const HolderRecordSchema = Type.Object({
  holderId: Type.String(),
  auditStatus: Type.Integer({ description: '0 pending, 1 under review, 2 approved, 3 rejected, 4 data to be completed' }),
  errMsg: Type.String(),
  firstName: Type.String(),
  lastName: Type.String(),
  idno: Type.String(),
  idnoType: Type.Integer(),
  mobile: Type.String(),
});

const HolderId = Type.String({ minLength: 1, maxLength: 64, description: 'must be a holderId' });

export const HolderQueryBody = Type.Object({ ...SignedFields, holderId: HolderId, randomStr: RandomStr }, { additionalProperties: false });

export const HolderReviewBody = Type.Object(
  {
    ...SignedFields,
    holderId: HolderId,
    auditStatus: IntEnum([1, 2, 3, 4], 'must be 1, 2, 3 or 4'),
    errMsg: Type.Optional(Type.String({ maxLength: 500, description: 'must be at most 500 characters' })),
    randomStr: RandomStr,
  },
  { additionalProperties: false },
);

export const HolderEnvelope = Envelope(HolderRecordSchema);
