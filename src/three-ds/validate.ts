import { isIP } from 'node:net';
import { Compile } from 'typebox/compile';
import { isLoopbackAddress } from '../config-three-ds.js';
import { exponent } from '../money/currency.js';
import { currencyAlpha } from '../money/iso4217.js';
import { type AReq, AReqSchema, ERROR_CODES, type ErrorCode, MESSAGE_VERSIONS, type MessageVersion } from './emv-messages.js';

/** An AReq whose elements passed every check: the ones the decision needs are there. */
export type CheckedAReq = AReq &
  Required<Pick<AReq, 'threeDSServerTransID' | 'dsTransID' | 'dsReferenceNumber' | 'acctNumber' | 'deviceChannel' | 'messageCategory'>> & {
    messageVersion: MessageVersion;
  };

/** Why an AReq is refused: the Erro's code and the elements at fault. */
export interface Refusal {
  errorCode: ErrorCode;
  elements: string[];
}

type Rule = (m: AReq) => boolean;
const always: Rule = () => true;
const channel =
  (c: string): Rule =>
  (m) =>
    m.deviceChannel === c;
const payment: Rule = (m) => m.messageCategory === '01';
const v210: Rule = (m) => m.messageVersion === '2.1.0';
const v220: Rule = (m) => m.messageVersion === '2.2.0';
const and =
  (...rules: Rule[]): Rule =>
  (m) =>
    rules.every((r) => r(m));
const or =
  (...rules: Rule[]): Rule =>
  (m) =>
    rules.some((r) => r(m));
const recurring: Rule = (m) => m.threeDSRequestorAuthenticationInd === '02' || m.threeDSRequestorAuthenticationInd === '03';
const javascript: Rule = (m) => m.browserJavascriptEnabled === true;

/**
 * Which elements an AReq must carry, and when (EMVCo 3-D Secure 2.1.0 and 2.2.0, Annex A, the AReq
 * from the DS to the ACS): each element with the condition under which it is required.
 */
export const REQUIRED: ReadonlyArray<[keyof AReq, Rule]> = [
  ['threeDSServerTransID', always],
  ['dsTransID', always],
  ['dsReferenceNumber', always],
  ['dsURL', always],
  ['threeDSServerRefNumber', always],
  ['threeDSServerURL', always],
  ['threeDSRequestorID', always],
  ['threeDSRequestorName', always],
  ['threeDSRequestorURL', always],
  ['acctNumber', always],
  ['deviceChannel', always],
  ['messageCategory', always],
  ['cardExpiryDate', v210],
  ['threeDSRequestorAuthenticationInd', or(channel('01'), channel('02'))],
  ['threeRIInd', channel('03')],
  ['purchaseAmount', or(payment, recurring)],
  ['purchaseCurrency', or(payment, recurring)],
  ['purchaseExponent', or(payment, recurring)],
  ['purchaseDate', or(payment, recurring)],
  ['recurringExpiry', recurring],
  ['recurringFrequency', recurring],
  ['purchaseInstalData', (m) => m.threeDSRequestorAuthenticationInd === '03'],
  ['acquirerBIN', payment],
  ['acquirerMerchantID', payment],
  ['mcc', payment],
  ['merchantCountryCode', payment],
  ['merchantName', payment],
  ['sdkAppID', channel('01')],
  ['sdkReferenceNumber', channel('01')],
  ['sdkTransID', channel('01')],
  ['sdkMaxTimeout', channel('01')],
  ['sdkEphemPubKey', channel('01')],
  ['deviceRenderOptions', channel('01')],
  ['notificationURL', channel('02')],
  ['threeDSCompInd', channel('02')],
  ['browserAcceptHeader', channel('02')],
  ['browserLanguage', channel('02')],
  ['browserUserAgent', channel('02')],
  ['browserIP', and(channel('02'), v210)],
  ['browserJavascriptEnabled', and(channel('02'), v220)],
  ['browserJavaEnabled', and(channel('02'), or(v210, javascript))],
  ['browserColorDepth', and(channel('02'), or(v210, javascript))],
  ['browserScreenHeight', and(channel('02'), or(v210, javascript))],
  ['browserScreenWidth', and(channel('02'), or(v210, javascript))],
  ['browserTZ', and(channel('02'), or(v210, javascript))],
];

/** Elements the message needs before anything else can be read: without them it is not a message this ACS can answer. */
const FIRST = new Set<keyof AReq>(REQUIRED.filter(([, rule]) => rule === always).map(([name]) => name));

const check = Compile(AReqSchema);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function present(m: Record<string, unknown>, name: string): boolean {
  return Object.hasOwn(m, name);
}

/** The element an error of the compiled schema is about: the first segment of its path. */
function elementOf(path: string): string {
  return decodeURIComponent(path.split('/')[1] ?? 'message')
    .replace(/~1/g, '/')
    .replace(/~0/g, '~');
}

function isHttpUrl(text: string, httpsOnly: boolean): boolean {
  // The scheme's "//" written out: `https:evil.example/x` parses as https://evil.example/x here, but a
  // browser on an https page reads it as a path of that page's own origin (the CRes would go back to the ACS).
  if (!/^https?:\/\//i.test(text)) return false;
  try {
    const u = new URL(text);
    return u.protocol === 'https:' || (!httpsOnly && u.protocol === 'http:');
  } catch {
    return false;
  }
}

/**
 * Where the challenge page may post the CRes (decisions §14.4): https; plain http in the sandbox only
 * to a loopback host (`localhost`, 127.0.0.0/8, ::1) or to the service's own public origin (the
 * sandbox's stand-in 3DS Server, `/sandbox/3ds/notification`); never in production. Anything else
 * (`javascript:`, `data:`, plain http across a network) would hand the result to whoever is on the way.
 */
function notificationUrlOk(text: string, env: 'sandbox' | 'production', ownOrigin: string | undefined): boolean {
  // Written with its "//", as isHttpUrl requires (a browser reads `https:evil.example/x` as a path of the ACS's own origin).
  if (!/^https?:\/\//i.test(text)) return false;
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    return false;
  }
  if (u.protocol === 'https:') return true;
  if (u.protocol !== 'http:' || env === 'production') return false;
  if (ownOrigin !== undefined && u.origin === ownOrigin) return true;
  const host = u.hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();
  return host === 'localhost' || host.endsWith('.localhost') || isLoopbackAddress(host);
}

function validDate(yyyymmddhhmmss: string): boolean {
  const [y, mo, d, h, mi, s] = [0, 4, 6, 8, 10, 12].map((at, i) => Number(yyyymmddhhmmss.slice(at, at + (i === 0 ? 4 : 2))));
  const t = new Date(Date.UTC(y as number, (mo as number) - 1, d, h, mi, s));
  return (
    t.getUTCFullYear() === y &&
    t.getUTCMonth() === (mo as number) - 1 &&
    t.getUTCDate() === d &&
    (h as number) < 24 &&
    (mi as number) < 60 &&
    (s as number) < 60
  );
}

/** What the schema cannot say: values that must be real (a date, an address, a URL) or fit another element. */
function semanticProblems(m: AReq, env: 'sandbox' | 'production', ownOrigin: string | undefined): string[] {
  const bad: string[] = [];
  if (m.threeDSRequestorChallengeInd !== undefined && m.messageVersion === '2.1.0' && m.threeDSRequestorChallengeInd > '04') {
    bad.push('threeDSRequestorChallengeInd');
  }
  if (m.threeDSRequestorAuthenticationInd === '07' && m.messageVersion === '2.1.0') bad.push('threeDSRequestorAuthenticationInd');
  if (m.purchaseDate !== undefined && !validDate(m.purchaseDate)) bad.push('purchaseDate');
  if (m.purchaseExponent !== undefined && m.purchaseCurrency !== undefined) {
    const alpha = currencyAlpha(m.purchaseCurrency);
    if (alpha !== null && exponent(alpha) !== Number(m.purchaseExponent)) bad.push('purchaseExponent');
  }
  if (m.purchaseInstalData !== undefined && Number(m.purchaseInstalData) < 2) bad.push('purchaseInstalData');
  if (m.browserIP !== undefined && isIP(m.browserIP) === 0) bad.push('browserIP');
  // The page posts the CRes there: a script URL, or plain http across a network, would hand the result to anyone.
  if (m.notificationURL !== undefined && !notificationUrlOk(m.notificationURL, env, ownOrigin)) bad.push('notificationURL');
  for (const name of ['threeDSServerURL', 'threeDSRequestorURL', 'dsURL'] as const) {
    const value = m[name];
    if (value !== undefined && !isHttpUrl(value, false)) bad.push(name);
  }
  return bad;
}

/**
 * Checks an AReq element by element, as EMVCo says an ACS must: not an AReq (101), a version it does
 * not speak (102), a required element missing (201), an element of the wrong format or length
 * (203), a critical message extension it does not know (202: it knows none). Elements it does not
 * know are ignored. Returns the checked message, or the refusal naming every element at fault.
 */
export function validateAReq(
  message: unknown,
  env: 'sandbox' | 'production',
  /** The service's public origin (CARDPROGRAM_PUBLIC_URL's): in the sandbox a plain http notificationURL may be there. */
  ownOrigin?: string,
): { areq: CheckedAReq } | { refusal: Refusal } {
  const refuse = (errorCode: ErrorCode, elements: string[]) => ({ refusal: { errorCode, elements } });
  if (!isObject(message)) return refuse(ERROR_CODES.messageInvalid, ['message']);
  if (message.messageType !== 'AReq') return refuse(ERROR_CODES.messageInvalid, ['messageType']);
  const version = message.messageVersion;
  if (!present(message, 'messageVersion')) return refuse(ERROR_CODES.requiredMissing, ['messageVersion']);
  if (typeof version !== 'string' || !/^\d{1,2}\.\d{1,2}\.\d{1,2}$/.test(version))
    return refuse(ERROR_CODES.formatInvalid, ['messageVersion']);
  if (!(MESSAGE_VERSIONS as readonly string[]).includes(version)) return refuse(ERROR_CODES.versionNotSupported, ['messageVersion']);
  // browserJavascriptEnabled is not an element of 2.1.0: there, an element the ACS does not know.
  const m: Record<string, unknown> = { ...message };
  if (version === '2.1.0') delete m.browserJavascriptEnabled;

  const missingFirst = [...FIRST].filter((name) => !present(m, name));
  if (missingFirst.length > 0) return refuse(ERROR_CODES.requiredMissing, missingFirst);
  if (!check.Check(m)) {
    const elements = new Set<string>();
    for (const error of check.Errors(m)) elements.add(elementOf(error.instancePath));
    return refuse(ERROR_CODES.formatInvalid, [...elements]);
  }
  const areq = m as AReq;
  const missing = REQUIRED.filter(([name, rule]) => rule(areq) && !present(m, name)).map(([name]) => name);
  if (missing.length > 0) return refuse(ERROR_CODES.requiredMissing, missing);
  const bad = semanticProblems(areq, env, ownOrigin);
  if (bad.length > 0) return refuse(ERROR_CODES.formatInvalid, bad);
  const critical = (areq.messageExtension ?? []).filter((e) => e.criticalityIndicator).map((e) => e.id);
  if (critical.length > 0) return refuse(ERROR_CODES.criticalExtension, critical);
  return { areq: areq as CheckedAReq };
}

/** The request's identifiers an Erro echoes, each only when it is a well-formed value. */
export function echoedIds(message: unknown): {
  threeDSServerTransID: string | null;
  dsTransID: string | null;
  messageVersion: MessageVersion | null;
} {
  const m = isObject(message) ? message : {};
  const uuid = (v: unknown) => (typeof v === 'string' && /^[0-9A-Fa-f]{8}(-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}$/.test(v) ? v : null);
  const version = m.messageVersion;
  return {
    threeDSServerTransID: uuid(m.threeDSServerTransID),
    dsTransID: uuid(m.dsTransID),
    messageVersion:
      typeof version === 'string' && (MESSAGE_VERSIONS as readonly string[]).includes(version) ? (version as MessageVersion) : null,
  };
}
