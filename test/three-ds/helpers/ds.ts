// A directory server (and the 3DS Server behind it) as the tests play it, written from the EMVCo
// 3-D Secure Protocol and Core Functions Specification 2.1.0/2.2.0 (Annex A: the AReq, ARes and Erro
// data elements), not from this project: it imports none of its types, schemas or code. It builds
// AReqs a DS forwards to an ACS, sends them over HTTP(S), and checks every element of the answer
// against EMVCo's formats.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export type Message = Record<string, unknown>;

export interface AReqOptions {
  pan: string;
  /** YYMM; null: left out. */
  expiry: string | null;
  /** Minor units, as digits. */
  amount?: string;
  currency?: string;
  exponent?: string;
  version?: '2.1.0' | '2.2.0';
  deviceChannel?: '01' | '02' | '03';
  messageCategory?: '01' | '02';
  challengeInd?: string;
  merchantName?: string;
  mcc?: string;
  merchantCountryCode?: string;
  notificationURL?: string;
}

/** An AReq as a DS forwards it to the ACS: every element the channel and category require, with the sample values of a test DS. */
export function areq(o: AReqOptions): Message {
  const version = o.version ?? '2.2.0';
  const channel = o.deviceChannel ?? '02';
  const category = o.messageCategory ?? '01';
  const m: Message = {
    messageType: 'AReq',
    messageVersion: version,
    threeDSServerTransID: randomUUID(),
    dsTransID: randomUUID(),
    dsReferenceNumber: 'EMVCO-TEST-DS-0001',
    dsURL: 'https://ds.test.example/rreq',
    threeDSServerRefNumber: 'EMVCO-TEST-3DSS-01',
    threeDSServerURL: 'https://3dss.test.example/',
    threeDSRequestorID: 'REQ-0001',
    threeDSRequestorName: 'Test Requestor',
    threeDSRequestorURL: 'https://shop.test.example/',
    acctNumber: o.pan,
    deviceChannel: channel,
    messageCategory: category,
  };
  if (o.expiry !== null) m.cardExpiryDate = o.expiry;
  if (channel !== '03') m.threeDSRequestorAuthenticationInd = '01';
  else m.threeRIInd = '01';
  if (o.challengeInd) m.threeDSRequestorChallengeInd = o.challengeInd;
  if (category === '01') {
    Object.assign(m, {
      purchaseAmount: o.amount ?? '1500',
      purchaseCurrency: o.currency ?? '978',
      purchaseExponent: o.exponent ?? '2',
      purchaseDate: new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14),
      acquirerBIN: '412345',
      acquirerMerchantID: 'MERCHANT-0001',
      mcc: o.mcc ?? '5732',
      merchantCountryCode: o.merchantCountryCode ?? '276',
      merchantName: o.merchantName ?? 'Elektro Laden',
    });
  }
  if (channel === '02') {
    Object.assign(m, {
      threeDSCompInd: 'Y',
      notificationURL: o.notificationURL ?? 'https://3dss.test.example/notify',
      browserAcceptHeader: 'text/html,application/xhtml+xml',
      browserIP: '198.51.100.23',
      browserJavaEnabled: false,
      browserLanguage: 'fr-FR',
      browserColorDepth: '24',
      browserScreenHeight: '900',
      browserScreenWidth: '1440',
      browserTZ: '-60',
      browserUserAgent: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) Safari/605.1.15',
    });
    if (version === '2.2.0') m.browserJavascriptEnabled = true;
  }
  if (channel === '01') {
    Object.assign(m, {
      sdkAppID: randomUUID(),
      sdkReferenceNumber: 'EMVCO-TEST-SDK-01',
      sdkTransID: randomUUID(),
      sdkMaxTimeout: '05',
      sdkEphemPubKey: {
        kty: 'EC',
        crv: 'P-256',
        x: 'WWcpTjbOqiu_1aODllw5rYTq5oLXE_T0huCPjMIRbkI',
        y: 'Wz_7anIeadV8SJZUfr4drwjzuWoUbOsHp5GdRZBAAiw',
      },
      deviceRenderOptions: { sdkInterface: '03', sdkUiType: ['01', '02', '03', '04', '05'] },
    });
  }
  return m;
}

/** Posts a message to the ACS and gives the HTTP status, the raw text and the JSON answer. */
export function send(
  url: string,
  body: string | Message,
  opts: { tls?: { ca: Buffer; cert?: Buffer; key?: Buffer }; headers?: Record<string, string> } = {},
): Promise<{ status: number; text: string; json: Message | null }> {
  const payload = typeof body === 'string' ? body : JSON.stringify(body);
  const u = new URL(url);
  const client = u.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.request(
      u,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...opts.headers },
        agent: false,
        ...(opts.tls ? { ca: opts.tls.ca, cert: opts.tls.cert, key: opts.tls.key, servername: 'localhost' } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: Message | null = null;
          try {
            json = JSON.parse(text) as Message;
          } catch {
            json = null;
          }
          resolve({ status: res.statusCode ?? 0, text, json });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** EMVCo's ARes elements (Annex A) and the format of each; an element not listed has no place in an ARes. */
const ARES_FORMATS: Record<string, (v: unknown) => boolean> = {
  messageType: (v) => v === 'ARes',
  messageVersion: (v) => v === '2.1.0' || v === '2.2.0',
  threeDSServerTransID: (v) => typeof v === 'string' && UUID.test(v),
  dsTransID: (v) => typeof v === 'string' && UUID.test(v),
  dsReferenceNumber: (v) => typeof v === 'string' && v.length >= 1 && v.length <= 32,
  acsTransID: (v) => typeof v === 'string' && UUID.test(v),
  acsReferenceNumber: (v) => typeof v === 'string' && v.length >= 1 && v.length <= 32,
  acsOperatorID: (v) => typeof v === 'string' && v.length >= 1 && v.length <= 32,
  sdkTransID: (v) => typeof v === 'string' && UUID.test(v),
  transStatus: (v) => typeof v === 'string' && ['Y', 'N', 'U', 'A', 'C', 'D', 'R', 'I'].includes(v),
  transStatusReason: (v) => typeof v === 'string' && /^(0[1-9]|1[0-9]|2[0-6])$/.test(v),
  eci: (v) => typeof v === 'string' && /^[0-9]{2}$/.test(v),
  authenticationValue: (v) => typeof v === 'string' && v.length === 28 && /^[A-Za-z0-9+/]{27}=$/.test(v),
  acsURL: (v) => typeof v === 'string' && v.length <= 2048 && /^https?:\/\//.test(v),
  acsChallengeMandated: (v) => v === 'Y' || v === 'N',
  authenticationType: (v) => typeof v === 'string' && /^0[1-4]$/.test(v),
  cardholderInfo: (v) => typeof v === 'string' && v.length <= 128,
  messageExtension: (v) => Array.isArray(v) && v.length <= 10,
};

/** Every problem of an ARes answering `request`, element by element; empty when it is right. */
export function aresProblems(ares: Message, request: Message): string[] {
  const problems: string[] = [];
  for (const [name, value] of Object.entries(ares)) {
    const format = ARES_FORMATS[name];
    if (!format) problems.push(`${name}: not an ARes element`);
    else if (!format(value)) problems.push(`${name}: ${JSON.stringify(value)} is not in EMVCo's format`);
  }
  const required = [
    'messageType',
    'messageVersion',
    'threeDSServerTransID',
    'dsTransID',
    'dsReferenceNumber',
    'acsTransID',
    'acsReferenceNumber',
  ];
  if (request.messageCategory === '01') required.push('transStatus');
  if (['N', 'U', 'R'].includes(ares.transStatus as string)) required.push('transStatusReason');
  if (['Y', 'A'].includes(ares.transStatus as string) && request.messageCategory === '01') required.push('authenticationValue');
  if (ares.transStatus === 'C') required.push('acsChallengeMandated', 'authenticationType');
  if (ares.transStatus === 'C' && request.deviceChannel === '02') required.push('acsURL');
  if (request.deviceChannel === '01') required.push('sdkTransID');
  for (const name of required) if (!(name in ares)) problems.push(`${name}: required, missing`);
  for (const name of ['messageVersion', 'threeDSServerTransID', 'dsTransID', 'dsReferenceNumber']) {
    if (ares[name] !== request[name])
      problems.push(`${name}: ${JSON.stringify(ares[name])} is not the AReq's ${JSON.stringify(request[name])}`);
  }
  return problems;
}

const ERROR_CODES = [
  '101',
  '102',
  '103',
  '201',
  '202',
  '203',
  '204',
  '301',
  '302',
  '303',
  '304',
  '305',
  '306',
  '307',
  '402',
  '403',
  '404',
  '405',
];
const MESSAGE_TYPES = ['ARes', 'AReq', 'PRes', 'PReq', 'CRes', 'CReq', 'RReq', 'RRes', 'Erro'];

const ERRO_FORMATS: Record<string, (v: unknown) => boolean> = {
  messageType: (v) => v === 'Erro',
  messageVersion: (v) => typeof v === 'string' && /^\d+\.\d+\.\d+$/.test(v),
  threeDSServerTransID: (v) => typeof v === 'string' && UUID.test(v),
  dsTransID: (v) => typeof v === 'string' && UUID.test(v),
  acsTransID: (v) => typeof v === 'string' && UUID.test(v),
  sdkTransID: (v) => typeof v === 'string' && UUID.test(v),
  errorCode: (v) => typeof v === 'string' && ERROR_CODES.includes(v),
  errorComponent: (v) => v === 'A',
  errorDescription: (v) => typeof v === 'string' && v.length >= 1 && v.length <= 2048,
  errorDetail: (v) => typeof v === 'string' && v.length >= 1 && v.length <= 2048,
  errorMessageType: (v) => typeof v === 'string' && MESSAGE_TYPES.includes(v),
};

/** Every problem of an Erro sent by an ACS, element by element; empty when it is right. */
export function erroProblems(erro: Message): string[] {
  const problems: string[] = [];
  for (const [name, value] of Object.entries(erro)) {
    const format = ERRO_FORMATS[name];
    if (!format) problems.push(`${name}: not an Erro element`);
    else if (!format(value)) problems.push(`${name}: ${JSON.stringify(value)} is not in EMVCo's format`);
  }
  for (const name of [
    'messageType',
    'messageVersion',
    'threeDSServerTransID',
    'errorCode',
    'errorComponent',
    'errorDescription',
    'errorDetail',
  ]) {
    if (!(name in erro)) problems.push(`${name}: required, missing`);
  }
  return problems;
}

/** The elements an Erro's errorDetail names (EMVCo: comma-separated). */
export const detailElements = (erro: Message) =>
  String(erro.errorDetail ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
