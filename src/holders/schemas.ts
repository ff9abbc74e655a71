import { Type } from 'typebox';
import { AuditStatus } from '../codes/audit-status.js';
import { CountryCode, DateText, DocumentNumber, Email, HolderId, PostCode, ShortText } from '../http/fields.js';
import { CodeEnum, Envelope, IntEnum, orList, RandomStr, SignedFields } from '../http/schemas.js';

const Base64 = (what: string, maxLength: number, minLength = 1) =>
  Type.String({ minLength, maxLength, description: `must be the ${what} as Base64 of UTF-8 text` });

export const HolderCreateBody = Type.Object(
  {
    ...SignedFields,
    mobile: Type.String({ pattern: '^\\+[1-9][0-9]{5,14}$', description: 'must be + followed by 6 to 15 digits (country code first)' }),
    firstName: Base64('first name', 400),
    lastName: Type.Optional(Base64('last name (empty or absent when there is none)', 400, 0)),
    email: Email({ maxLength: 254, description: 'must be an e-mail address' }),
    dateOfBirth: DateText('must be a date written yyyy-MM-dd'),
    nationality: CountryCode('must be a two-letter ISO 3166-1 country code in capitals'),
    sex: IntEnum([1, 2], 'must be 1 (male) or 2 (female)'),
    countryCode: CountryCode('must be a two-letter European country code in capitals'),
    town: Base64('region or city in English', 400),
    address: Base64('address in English', 1000),
    postCode: PostCode,
    idnoType: IntEnum([1, 2], 'must be 1 (European ID card) or 2 (passport)'),
    idno: DocumentNumber('must be 3 to 40 letters, digits, spaces or hyphens'),
    randomStr: RandomStr,
  },
  { additionalProperties: false },
);

export const HolderRecordSchema = Type.Object({
  holderId: Type.String(),
  auditStatus: CodeEnum(AuditStatus),
  errMsg: Type.String(),
  firstName: Type.String(),
  lastName: Type.String(),
  idno: Type.String(),
  idnoType: Type.Integer(),
  mobile: Type.String(),
});

export const HolderQueryBody = Type.Object({ ...SignedFields, holderId: HolderId, randomStr: RandomStr }, { additionalProperties: false });

/** What a reviewer may set: any status but pending (which only a new application has). */
const REVIEW_DECISIONS = Object.values(AuditStatus).filter((s) => s !== AuditStatus.pending);

export const HolderReviewBody = Type.Object(
  {
    ...SignedFields,
    holderId: HolderId,
    auditStatus: IntEnum(REVIEW_DECISIONS, `must be ${orList(REVIEW_DECISIONS)}`),
    errMsg: Type.Optional(ShortText(500)),
    randomStr: RandomStr,
  },
  { additionalProperties: false },
);

export const HolderEnvelope = Envelope(HolderRecordSchema);
