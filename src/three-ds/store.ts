import type { Selectable } from 'kysely';
import { maskPan } from '../cards/card-number.js';
import type { ThreeDsAuthenticationsTable } from '../db/schema.js';
import { type AReq, BROWSER_ELEMENTS } from './emv-messages.js';
import type { AuthenticationRecord } from './schemas.js';

export type AuthenticationRow = Selectable<ThreeDsAuthenticationsTable>;

/** A card number as it may be kept and shown: first 6 and last 4 digits. */
export function maskedAcct(pan: string): string {
  return pan.length < 13 ? '*'.repeat(pan.length) : maskPan(pan.slice(0, 6), pan.slice(-4), pan.length);
}

/**
 * The AReq's elements kept with an authentication (decisions §14.7): what the decision read and what
 * identifies the message, the PAN masked. Left out: the cardholder's personal data (name, e-mail,
 * phones, addresses), the device's data, the expiry date; the browser's elements are kept apart
 * (browserData) and dropped after 30 days.
 */
const KEPT: ReadonlyArray<keyof AReq> = [
  'messageType',
  'messageVersion',
  'threeDSServerTransID',
  'dsTransID',
  'dsReferenceNumber',
  'dsURL',
  'threeDSServerRefNumber',
  'threeDSServerURL',
  'threeDSServerOperatorID',
  'threeDSRequestorID',
  'threeDSRequestorName',
  'threeDSRequestorURL',
  'threeDSRequestorAuthenticationInd',
  'threeDSRequestorChallengeInd',
  'threeRIInd',
  'threeDSCompInd',
  'deviceChannel',
  'messageCategory',
  'acquirerBIN',
  'acquirerMerchantID',
  'mcc',
  'merchantCountryCode',
  'merchantName',
  'purchaseAmount',
  'purchaseCurrency',
  'purchaseExponent',
  'purchaseDate',
  'transType',
  'notificationURL',
  'sdkTransID',
  'sdkReferenceNumber',
];

export function storedAReq(areq: AReq): string {
  const out: Record<string, unknown> = {};
  for (const name of KEPT) if (areq[name] !== undefined) out[name] = areq[name];
  if (areq.acctNumber !== undefined) out.acctNumber = maskedAcct(areq.acctNumber);
  return JSON.stringify(out);
}

/** The browser's elements of an AReq (JSON), or null when it has none. */
export function browserData(areq: AReq): string | null {
  const out: Record<string, unknown> = {};
  for (const name of BROWSER_ELEMENTS) if (areq[name] !== undefined) out[name] = areq[name];
  return Object.keys(out).length === 0 ? null : JSON.stringify(out);
}

const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());

/** An amount in major units: minor units over 10^exponent, a correctly rounded division (1250, 2 → 12.5). */
const major = (minor: number | null, exponent: number | null) => (minor === null ? null : Number(minor) / 10 ** (exponent ?? 2));

/** An authentication as the API answers it (decisions §14.6). */
export function toAuthenticationRecord(row: AuthenticationRow, tradeIds: string[]): AuthenticationRecord {
  return {
    acsTransID: row.acs_trans_id,
    cardId: row.card_id ?? '',
    cardNo: row.pan_masked,
    transStatus: row.trans_status,
    transStatusReason: row.trans_status_reason,
    eci: row.eci,
    authenticationType: row.authentication_type,
    challengeMethod: row.challenge_method,
    decidedBy: row.decided_by,
    merchantName: row.merchant_name,
    amount: major(row.amount === null ? null : Number(row.amount), row.exponent),
    currency: row.currency,
    deviceChannel: row.device_channel,
    messageCategory: row.message_category,
    createdAt: iso(Number(row.created_at)) ?? '',
    completedAt: iso(row.completed_at === null ? null : Number(row.completed_at)),
    tradeIds,
  };
}
