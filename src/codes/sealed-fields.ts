/**
 * The personal data sealed at rest (src/holders/identity.ts, src/kyc/email.ts), and so never written
 * to the audit trail either (src/audit/trail.ts redacts these names). Each list is checked against its
 * module's type where that module seals it (holders/identity.ts, kyc/submit.ts): a new sealed field
 * that is not listed here does not compile there.
 */

/** Every field of a cardholder's identity (HolderIdentity). */
export const IDENTITY_FIELDS = ['idno', 'dateOfBirth', 'address', 'town', 'postCode', 'mobile', 'email'] as const;

/**
 * A KYC request's sealed personal data besides what a cardholder keeps plain (names, country, sex,
 * document type): never in the audit trail, with the e-mail and IDENTITY_FIELDS.
 */
export const KYC_SEALED_FIELDS = ['dob', 'number', 'validUntil', 'ipAddress', 'address', 'state', 'city', 'zipCode', 'ssn'] as const;
