import { randomUUID } from 'node:crypto';
import type { AReq } from './emv-messages.js';

/** What an AReq built here describes: the card, the purchase and the shop. */
export interface AReqParams {
  pan: string;
  /** YYMM; left out: none sent (2.2.0 allows that). */
  expiry?: string;
  /** Minor units. */
  amount: number;
  /** ISO 4217 numeric, and the currency's exponent. */
  currency: string;
  exponent: number;
  merchantName?: string;
  challengeInd?: string;
  notificationURL: string;
  /** Defaults: 5411 (grocery), 276 (Germany). */
  mcc?: string;
  merchantCountryCode?: string;
  now?: number;
}

const stamp = (ms: number) => new Date(ms).toISOString().replace(/[-:T]/g, '').slice(0, 14);

/**
 * An AReq as a DS forwards a browser purchase (EMV 3DS 2.2.0, device channel 02, payment): what
 * the sandbox's authenticate and `cardprogram threeds areq` send, the DS's and the 3DS Server's
 * elements filled with the sandbox's own values, the browser's with a typical desktop's.
 */
export function buildAReq(p: AReqParams): AReq {
  return {
    messageType: 'AReq',
    messageVersion: '2.2.0',
    threeDSServerTransID: randomUUID(),
    dsTransID: randomUUID(),
    dsReferenceNumber: 'CARDPROGRAM-SANDBOX-DS',
    dsURL: 'https://ds.sandbox.invalid/rreq',
    threeDSServerRefNumber: 'CARDPROGRAM-SANDBOX-3DSS',
    threeDSServerURL: 'https://3dss.sandbox.invalid/',
    threeDSRequestorID: 'SANDBOX-REQUESTOR',
    threeDSRequestorName: p.merchantName ?? 'Sandbox Shop',
    threeDSRequestorURL: 'https://shop.sandbox.invalid/',
    threeDSRequestorAuthenticationInd: '01',
    ...(p.challengeInd ? { threeDSRequestorChallengeInd: p.challengeInd } : {}),
    threeDSCompInd: 'U',
    acctNumber: p.pan,
    ...(p.expiry ? { cardExpiryDate: p.expiry } : {}),
    deviceChannel: '02',
    messageCategory: '01',
    acquirerBIN: '400000',
    acquirerMerchantID: 'SANDBOX-MERCHANT-1',
    mcc: p.mcc ?? '5411',
    merchantCountryCode: p.merchantCountryCode ?? '276',
    merchantName: p.merchantName ?? 'Sandbox Shop',
    purchaseAmount: String(p.amount),
    purchaseCurrency: p.currency,
    purchaseExponent: String(p.exponent),
    purchaseDate: stamp(p.now ?? Date.now()),
    transType: '01',
    notificationURL: p.notificationURL,
    browserAcceptHeader: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
    browserIP: '192.0.2.10',
    browserJavaEnabled: false,
    browserJavascriptEnabled: true,
    browserLanguage: 'de-DE',
    browserColorDepth: '24',
    browserScreenHeight: '1080',
    browserScreenWidth: '1920',
    browserTZ: '-60',
    browserUserAgent: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36',
  };
}

/** The form field `creq` that opens a challenge: the CReq as Base64url JSON (decisions §14.4). */
export function creqFor(ares: { threeDSServerTransID: string; acsTransID: string; messageVersion: string }, windowSize = '05'): string {
  const creq = {
    threeDSServerTransID: ares.threeDSServerTransID,
    acsTransID: ares.acsTransID,
    messageType: 'CReq',
    messageVersion: ares.messageVersion,
    challengeWindowSize: windowSize,
  };
  return Buffer.from(JSON.stringify(creq), 'utf8').toString('base64url');
}
