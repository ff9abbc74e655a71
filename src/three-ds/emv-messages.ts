import { type Static, type TSchema, Type } from 'typebox';

/**
 * The EMV 3-D Secure messages the ACS reads and writes (EMVCo 3-D Secure Protocol and Core
 * Functions Specification 2.1.0 and 2.2.0, Annex A), each element named and formatted as there.
 * One source: the validator (./validate.ts), the answers and the OpenAPI document of the sandbox
 * read these. Which elements are required depends on the device channel, the message category and
 * the version: ./validate.ts says that, in one table (REQUIRED).
 */

/** The protocol versions this ACS speaks; an answer carries its request's. */
export const MESSAGE_VERSIONS = ['2.1.0', '2.2.0'] as const;
export type MessageVersion = (typeof MESSAGE_VERSIONS)[number];

/** Error codes of an Erro (Annex A.5.5) the ACS sends. */
export const ERROR_CODES = {
  messageInvalid: '101',
  versionNotSupported: '102',
  requiredMissing: '201',
  criticalExtension: '202',
  formatInvalid: '203',
  duplicateElement: '204',
  // Decisions §14.1 calls 404 the transient failure (a database that cannot answer now): what is sent.
  transientFailure: '404',
} as const;
export type ErrorCode = (typeof ERROR_CODES)[keyof typeof ERROR_CODES];

/** EMVCo's description of each code, the Erro's errorDescription. */
export const ERROR_DESCRIPTIONS: Readonly<Record<ErrorCode, string>> = {
  '101': 'Message Received Invalid',
  '102': 'Message Version Number Not Supported',
  '201': 'Required Data Element Missing',
  '202': 'Critical Message Extension Not Recognised',
  '203': 'Format of one or more Data Elements is Invalid according to the Specification',
  '204': 'Duplicate Data Element',
  '404': 'Transient System Failure',
};

/** transStatus values the ACS answers. */
export const TRANS_STATUSES = ['Y', 'N', 'U', 'C'] as const;
export type TransStatus = (typeof TRANS_STATUSES)[number] | 'A' | 'R' | 'D' | 'I';

/** transStatusReason values the ACS gives (EMVCo's list: 01–26), with their meaning. */
export const TRANS_STATUS_REASONS = {
  '01': 'Card authentication failed',
  '03': 'Unsupported device',
  '04': 'Exceeds authentication frequency limit',
  '05': 'Expired card',
  '08': 'No card record',
  '11': 'Suspected fraud',
  '12': 'Transaction not permitted to cardholder',
  '13': 'Cardholder not enrolled in service',
  '14': 'Transaction timed out at the ACS',
  '19': 'Exceeds ACS maximum challenges',
  '21': '3RI transaction not supported',
  '26': 'Authentication attempted but not performed by the cardholder',
} as const;
export type TransStatusReason = keyof typeof TRANS_STATUS_REASONS;

/** authenticationType: 02 dynamic (one-time code), 03 out of band. */
export const AUTHENTICATION_TYPES = { otp: '02', oob: '03' } as const;

/** screen.colorDepth values a browser reports (browserColorDepth). */
export const COLOR_DEPTHS = ['1', '4', '8', '15', '16', '24', '32', '48'] as const;

/** CReq's challengeWindowSize: 01 250×400, 02 390×400, 03 500×600, 04 600×400, 05 full page. */
export const WINDOW_SIZES = ['01', '02', '03', '04', '05'] as const;

const UUID = '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$';

const str = (minLength: number, maxLength: number, description: string, pattern?: string) =>
  Type.String({ minLength, maxLength, description, ...(pattern ? { pattern } : {}) });
const pat = (pattern: string, description: string) => Type.String({ pattern, description });
const uuid = (description: string) => Type.String({ pattern: UUID, minLength: 36, maxLength: 36, description });
const url = (maxLength: number, description: string) => Type.String({ minLength: 1, maxLength, description });
const opt = <T extends TSchema>(s: T) => Type.Optional(s);
/** One of a list of codes (one `enum`, so an Erro names the element and nothing else). */
const codes = <const V extends readonly string[]>(values: V, description: string) =>
  Type.Unsafe<V[number]>({ type: 'string', enum: [...values], description });

export const PhoneNumberSchema = Type.Object({
  cc: opt(pat('^[0-9]{1,3}$', '1 to 3 digits: the country calling code')),
  subscriber: opt(pat('^[0-9]{1,15}$', 'at most 15 digits')),
});

export const MessageExtensionSchema = Type.Object({
  name: str(1, 64, 'the extension’s name'),
  id: str(1, 64, 'the extension’s identifier, assigned by its owner'),
  criticalityIndicator: Type.Boolean({ description: 'true: a recipient that does not know it must refuse the message (202)' }),
  data: Type.Unknown({ description: 'the extension’s data' }),
});

export const DeviceRenderOptionsSchema = Type.Object({
  sdkInterface: pat('^0[1-3]$', '01 native, 02 HTML, 03 both'),
  sdkUiType: Type.Array(pat('^0[1-5]$', '01 text, 02 single select, 03 multi select, 04 OOB, 05 HTML other'), { minItems: 1, maxItems: 5 }),
});

/**
 * The AReq as the DS sends it to the ACS: every element it may carry, each optional here (which
 * are required is ./validate.ts's REQUIRED); elements it does not know are ignored.
 */
export const AReqSchema = Type.Object(
  {
    messageType: Type.Literal('AReq'),
    messageVersion: str(5, 8, '2.1.0 or 2.2.0'),
    threeDSServerTransID: opt(uuid('the 3DS Server’s transaction id')),
    dsTransID: opt(uuid('the DS’s transaction id')),
    dsReferenceNumber: opt(str(1, 32, 'EMVCo’s identifier of the DS')),
    dsURL: opt(url(2048, 'where the ACS sends the RReq (the ACS uses its configured DS URL)')),
    threeDSServerRefNumber: opt(str(1, 32, 'EMVCo’s identifier of the 3DS Server')),
    threeDSServerURL: opt(url(2048, 'the 3DS Server’s URL')),
    threeDSServerOperatorID: opt(str(1, 32, 'the DS’s identifier of the 3DS Server')),
    threeDSRequestorID: opt(str(1, 35, 'the DS’s identifier of the requestor')),
    threeDSRequestorName: opt(str(1, 40, 'the requestor’s name')),
    threeDSRequestorURL: opt(url(2048, 'the requestor’s website')),
    threeDSRequestorAuthenticationInd: opt(
      pat('^0[1-7]$', '01 payment, 02 recurring, 03 instalment, 04 add card, 05 maintain card, 06 ID&V, 07 billing agreement'),
    ),
    threeDSRequestorChallengeInd: opt(pat('^0[1-9]$', '01–04 (2.1.0), 01–09 (2.2.0): 04 challenge mandated')),
    threeRIInd: opt(pat('^(0[1-9]|1[0-2])$', 'the kind of 3RI request (01–12)')),
    threeDSCompInd: opt(Type.Union([Type.Literal('Y'), Type.Literal('N'), Type.Literal('U')])),
    acctNumber: opt(pat('^[0-9]{13,19}$', '13 to 19 digits')),
    acctType: opt(pat('^0[1-3]$', '01 not applicable, 02 credit, 03 debit')),
    acctID: opt(str(1, 64, 'additional account information')),
    cardExpiryDate: opt(pat('^[0-9]{2}(0[1-9]|1[0-2])$', 'YYMM')),
    deviceChannel: opt(pat('^0[1-3]$', '01 app, 02 browser, 03 requestor-initiated')),
    messageCategory: opt(pat('^0[1-2]$', '01 payment, 02 non-payment')),
    acquirerBIN: opt(str(1, 11, 'the acquirer’s identification code')),
    acquirerMerchantID: opt(str(1, 35, 'the acquirer’s identifier of the merchant')),
    mcc: opt(pat('^[0-9]{4}$', '4 digits')),
    merchantCountryCode: opt(pat('^[0-9]{3}$', 'ISO 3166-1 numeric')),
    merchantName: opt(str(1, 40, 'the merchant’s name')),
    purchaseAmount: opt(pat('^[0-9]{1,48}$', 'minor units, at most 48 digits')),
    purchaseCurrency: opt(pat('^[0-9]{3}$', 'ISO 4217 numeric')),
    purchaseExponent: opt(pat('^[0-9]$', 'the currency’s minor-unit exponent')),
    purchaseDate: opt(pat('^[0-9]{14}$', 'YYYYMMDDHHMMSS, UTC')),
    purchaseInstalData: opt(pat('^[0-9]{1,3}$', '2 to 999')),
    recurringExpiry: opt(pat('^[0-9]{8}$', 'YYYYMMDD')),
    recurringFrequency: opt(pat('^[0-9]{1,4}$', 'days')),
    transType: opt(pat('^(01|03|10|11|28)$', '01, 03, 10, 11 or 28')),
    notificationURL: opt(url(256, 'where the challenge’s CRes is posted')),
    browserAcceptHeader: opt(str(1, 2048, 'the browser’s Accept header')),
    browserIP: opt(str(1, 45, 'IPv4 or IPv6 address')),
    browserJavaEnabled: opt(Type.Boolean()),
    browserJavascriptEnabled: opt(Type.Boolean()),
    browserLanguage: opt(str(1, 8, 'IETF BCP 47')),
    browserColorDepth: opt(codes(COLOR_DEPTHS, '1, 4, 8, 15, 16, 24, 32 or 48 bits per pixel')),
    browserScreenHeight: opt(pat('^[0-9]{1,6}$', 'pixels')),
    browserScreenWidth: opt(pat('^[0-9]{1,6}$', 'pixels')),
    browserTZ: opt(pat('^[+-]?[0-9]{1,4}$', 'minutes between UTC and local time')),
    browserUserAgent: opt(str(1, 2048, 'the browser’s User-Agent header')),
    sdkAppID: opt(uuid('the app installation’s id')),
    sdkReferenceNumber: opt(str(1, 32, 'EMVCo’s identifier of the 3DS SDK')),
    sdkTransID: opt(uuid('the 3DS SDK’s transaction id')),
    sdkMaxTimeout: opt(pat('^(0[5-9]|[1-9][0-9])$', 'minutes, 05 to 99')),
    sdkEphemPubKey: opt(Type.Record(Type.String(), Type.Unknown())),
    deviceRenderOptions: opt(DeviceRenderOptionsSchema),
    deviceInfo: opt(str(1, 64000, 'the device’s data, Base64url')),
    cardholderName: opt(str(2, 45, 'the cardholder’s name')),
    email: opt(str(1, 254, 'an e-mail address')),
    homePhone: opt(PhoneNumberSchema),
    mobilePhone: opt(PhoneNumberSchema),
    workPhone: opt(PhoneNumberSchema),
    addrMatch: opt(Type.Union([Type.Literal('Y'), Type.Literal('N')])),
    billAddrCity: opt(str(1, 50, 'city')),
    billAddrCountry: opt(pat('^[0-9]{3}$', 'ISO 3166-1 numeric')),
    billAddrLine1: opt(str(1, 50, 'address line')),
    billAddrLine2: opt(str(1, 50, 'address line')),
    billAddrLine3: opt(str(1, 50, 'address line')),
    billAddrPostCode: opt(str(1, 16, 'post code')),
    billAddrState: opt(str(1, 3, 'ISO 3166-2 subdivision')),
    shipAddrCity: opt(str(1, 50, 'city')),
    shipAddrCountry: opt(pat('^[0-9]{3}$', 'ISO 3166-1 numeric')),
    shipAddrLine1: opt(str(1, 50, 'address line')),
    shipAddrLine2: opt(str(1, 50, 'address line')),
    shipAddrLine3: opt(str(1, 50, 'address line')),
    shipAddrPostCode: opt(str(1, 16, 'post code')),
    shipAddrState: opt(str(1, 3, 'ISO 3166-2 subdivision')),
    payTokenInd: opt(Type.Literal(true)),
    messageExtension: opt(Type.Array(MessageExtensionSchema, { minItems: 1, maxItems: 10 })),
  },
  { additionalProperties: true },
);
export type AReq = Static<typeof AReqSchema>;

/** The browser's elements: kept 30 days, apart from the stored AReq (decisions §14.7). */
export const BROWSER_ELEMENTS = [
  'browserAcceptHeader',
  'browserIP',
  'browserJavaEnabled',
  'browserJavascriptEnabled',
  'browserLanguage',
  'browserColorDepth',
  'browserScreenHeight',
  'browserScreenWidth',
  'browserTZ',
  'browserUserAgent',
] as const satisfies ReadonlyArray<keyof AReq>;

const answer = <T extends Record<string, TSchema>>(props: T) => Type.Object(props, { additionalProperties: false });

/** The ACS's answer to an AReq. */
export const AResSchema = answer({
  messageType: Type.Literal('ARes'),
  messageVersion: Type.String({ description: 'the AReq’s' }),
  threeDSServerTransID: Type.String(),
  dsTransID: Type.String(),
  dsReferenceNumber: Type.String(),
  acsTransID: Type.String({ description: 'a random UUID (v4)' }),
  acsReferenceNumber: Type.String(),
  acsOperatorID: opt(Type.String()),
  sdkTransID: opt(Type.String()),
  transStatus: codes(TRANS_STATUSES, 'Y authenticated (frictionless), N not authenticated, U could not be performed, C challenge required'),
  transStatusReason: opt(Type.String({ description: 'why N or U (EMVCo’s table, docs/3ds.md)' })),
  eci: opt(Type.String({ description: 'Visa (BIN 4…) 05 authenticated, 07 not; Mastercard (51–55, 2221–2720) 02 and 00' })),
  authenticationValue: opt(Type.String({ description: '20 bytes, 28 Base64 characters; with Y' })),
  acsURL: opt(Type.String({ description: 'where the challenge runs: {public}/3ds/challenge; with C' })),
  acsChallengeMandated: opt(Type.Literal('Y')),
  authenticationType: opt(Type.String({ description: '02 one-time code, 03 out of band; with C' })),
});
export type ARes = Static<typeof AResSchema>;

/** An error message (Annex A.5.5), answered with HTTP 200 as the protocol wants. */
export const ErroSchema = answer({
  messageType: Type.Literal('Erro'),
  messageVersion: Type.String(),
  threeDSServerTransID: Type.String({ description: 'the AReq’s when it had a valid one, else the nil UUID' }),
  dsTransID: opt(Type.String()),
  acsTransID: opt(Type.String()),
  errorCode: Type.String(),
  errorComponent: Type.Literal('A'),
  errorDescription: Type.String(),
  errorDetail: Type.String({ description: 'the elements at fault, comma-separated' }),
  errorMessageType: opt(Type.String()),
});
export type Erro = Static<typeof ErroSchema>;

/** The challenge request the browser posts to acsURL (Base64url JSON in the form field `creq`). */
export const CReqSchema = Type.Object({
  threeDSServerTransID: uuid('the 3DS Server’s transaction id'),
  acsTransID: uuid('the ACS’s transaction id, from the ARes'),
  messageType: Type.Literal('CReq'),
  messageVersion: str(5, 8, '2.1.0 or 2.2.0'),
  challengeWindowSize: codes(WINDOW_SIZES, '01 250×400, 02 390×400, 03 500×600, 04 600×400, 05 full page'),
});
export type CReq = Static<typeof CReqSchema>;

/** The final challenge response the page posts to the notificationURL (Base64url JSON in `cres`). */
export const CResSchema = answer({
  threeDSServerTransID: Type.String(),
  acsTransID: Type.String(),
  messageType: Type.Literal('CRes'),
  messageVersion: Type.String(),
  transStatus: Type.String(),
  challengeCompletionInd: Type.Literal('Y'),
});
export type CRes = Static<typeof CResSchema>;

/** The result the ACS reports to the DS at the end of a challenge. */
export const RReqSchema = answer({
  messageType: Type.Literal('RReq'),
  messageVersion: Type.String(),
  threeDSServerTransID: Type.String(),
  dsTransID: Type.String(),
  acsTransID: Type.String(),
  messageCategory: Type.String(),
  transStatus: Type.String(),
  transStatusReason: opt(Type.String()),
  eci: opt(Type.String()),
  authenticationValue: opt(Type.String()),
  authenticationType: opt(Type.String()),
  interactionCounter: opt(Type.String({ description: '2 digits' })),
  challengeCancel: opt(Type.String()),
});
export type RReq = Static<typeof RReqSchema>;

/** The DS's acknowledgement of an RReq. */
export const RResSchema = Type.Object({
  messageType: Type.Literal('RRes'),
  messageVersion: Type.String(),
  threeDSServerTransID: Type.String(),
  dsTransID: Type.String(),
  acsTransID: Type.String(),
  resultsStatus: Type.String({ description: '01 received, 02 challenge not completed, 03 not sent' }),
});
export type RRes = Static<typeof RResSchema>;
