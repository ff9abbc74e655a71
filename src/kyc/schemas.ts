import { Type } from 'typebox';
import { KYC_STATUSES } from '../db/schema.js';
import { CountryCode, DateText, DocumentNumber, Email, Id, PostCode, ShortText } from '../http/fields.js';
import { Envelope, IntEnum, orList, RandomStr, SignedFields, StringEnum } from '../http/schemas.js';

const Text = (what: string, max: number) =>
  Type.String({ minLength: 1, maxLength: max, description: `must be the ${what}, 1 to ${max} characters` });
const Day = (what: string) => DateText(`must be the ${what} written YYYY-MM-DD`);
const Country = (what: string) => CountryCode(`must be the ${what} as a two-letter ISO 3166-1 code in capitals`);
const RequestNo = Id('requestNo');

export const KycAddress = Type.Object(
  {
    country: Country('country of the address'),
    state: Text('state or region', 64),
    city: Text('city', 64),
    address: Text('street address', 200),
    zipCode: PostCode,
    ssn: Type.Optional(
      Type.String({ pattern: '^[0-9]{3}-?[0-9]{2}-?[0-9]{4}$', description: 'must be a US social security number, 9 digits' }),
    ),
  },
  { additionalProperties: false },
);

const Gender = Type.Union([IntEnum([1, 2], 'must be 1 (man) or 2 (woman)'), StringEnum(['1', '2'], 'must be 1 (man) or 2 (woman)')], {
  description: 'must be 1 (man) or 2 (woman)',
});
const IdDocType = Type.Union(
  [
    StringEnum(['1', '2', '3', '4'], 'must be 1 (ID card), 2 (passport), 3 (residence permit) or 4 (driving licence)'),
    IntEnum([1, 2, 3, 4], 'must be 1, 2, 3 or 4'),
  ],
  {
    description: 'must be 1 (ID card), 2 (passport), 3 (residence permit) or 4 (driving licence)',
  },
);

export const IndividualInfo = Type.Object(
  {
    firstName: Text('first name', 50),
    lastName: Text('last name', 50),
    dob: Day('date of birth'),
    country: Country('country (nationality)'),
    gender: Gender,
    idDocType: IdDocType,
    number: DocumentNumber('must be the document number, 3 to 40 letters, digits, spaces or hyphens'),
    validUntil: Day('document expiry date (2099-01-01 for no expiry)'),
    ipAddress: Type.String({ minLength: 2, maxLength: 45, description: 'must be an IPv4 or IPv6 address' }),
    address: Type.Optional(KycAddress),
  },
  { additionalProperties: false },
);

export const KycShareBody = Type.Object(
  {
    ...SignedFields,
    requestNo: Type.String({
      pattern: '^[A-Za-z0-9._-]{1,64}$',
      description: 'must be 1 to 64 letters, digits, dots, underscores or hyphens',
    }),
    email: Email({ maxLength: 254, description: 'must be an e-mail address' }),
    kycPlatform: Type.String({ minLength: 1, maxLength: 32, description: 'must be an accepted KYC platform' }),
    holderType: Type.Union([StringEnum(['1'], 'must be "1" (personal)'), IntEnum([1], 'must be "1" (personal)')], {
      description: 'must be "1" (personal)',
    }),
    callbackUrl: Type.String({ minLength: 1, maxLength: 2048, description: 'must be the URL that receives the result' }),
    individualInfo: IndividualInfo,
    address: Type.Optional(KycAddress),
  },
  { additionalProperties: false },
);

export const KycStatusSchema = Type.Object({
  requestNo: Type.String(),
  email: Type.String(),
  kycStatus: StringEnum(KYC_STATUSES, orList(KYC_STATUSES)),
  reason: Type.String(),
  holderId: Type.Union([Type.String(), Type.Null()]),
});

export const KycQueryBody = Type.Object({ ...SignedFields, requestNo: RequestNo, randomStr: RandomStr }, { additionalProperties: false });

export const KycReviewBody = Type.Object(
  {
    ...SignedFields,
    requestNo: RequestNo,
    kycStatus: StringEnum(['approved', 'rejected'], 'must be approved or rejected'),
    reason: Type.Optional(ShortText(500)),
    randomStr: RandomStr,
  },
  { additionalProperties: false },
);

export const NullEnvelope = Envelope(Type.Null());
export const KycStatusEnvelope = Envelope(KycStatusSchema);
