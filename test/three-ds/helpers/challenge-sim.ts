// The other parties of a challenge as the tests play them, written from the EMVCo 3-D Secure Protocol
// and Core Functions Specification 2.1.0/2.2.0 (Annex A: the CReq, CRes, RReq and RRes data
// elements), not from this project: none of its types, schemas or code. A directory server that
// receives the ACS's RReq and answers an RRes; a 3DS Server whose checkout page opens the challenge
// in an iframe (another origin than the ACS's) and whose notificationURL receives the CRes.

import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';
import type { TLSSocket } from 'node:tls';

export type Message = Record<string, unknown>;

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** EMVCo's RReq elements and their formats; an element not listed has no place in an RReq from an ACS. */
const RREQ_FORMATS: Record<string, (v: unknown) => boolean> = {
  messageType: (v) => v === 'RReq',
  messageVersion: (v) => v === '2.1.0' || v === '2.2.0',
  threeDSServerTransID: (v) => typeof v === 'string' && UUID.test(v),
  dsTransID: (v) => typeof v === 'string' && UUID.test(v),
  acsTransID: (v) => typeof v === 'string' && UUID.test(v),
  messageCategory: (v) => v === '01' || v === '02',
  transStatus: (v) => typeof v === 'string' && ['Y', 'N', 'U', 'A', 'R'].includes(v),
  transStatusReason: (v) => typeof v === 'string' && /^(0[1-9]|1[0-9]|2[0-6])$/.test(v),
  eci: (v) => typeof v === 'string' && /^[0-9]{2}$/.test(v),
  authenticationValue: (v) => typeof v === 'string' && /^[A-Za-z0-9+/]{27}=$/.test(v),
  authenticationType: (v) => typeof v === 'string' && /^0[1-4]$/.test(v),
  authenticationMethod: (v) => typeof v === 'string' && /^[0-9]{2}$/.test(v),
  interactionCounter: (v) => typeof v === 'string' && /^[0-9]{2}$/.test(v),
  challengeCancel: (v) => typeof v === 'string' && /^0[1-8]$/.test(v),
  messageExtension: (v) => Array.isArray(v),
};

/** Every problem of an RReq, element by element; empty when it is right. */
export function rreqProblems(m: Message): string[] {
  const problems: string[] = [];
  for (const [name, value] of Object.entries(m)) {
    const format = RREQ_FORMATS[name];
    if (!format) problems.push(`${name}: not an RReq element`);
    else if (!format(value)) problems.push(`${name}: ${JSON.stringify(value)} is not in EMVCo's format`);
  }
  for (const name of [
    'messageType',
    'messageVersion',
    'threeDSServerTransID',
    'dsTransID',
    'acsTransID',
    'messageCategory',
    'transStatus',
  ]) {
    if (!(name in m)) problems.push(`${name}: required, missing`);
  }
  if (m.transStatus === 'Y' && m.messageCategory === '01' && !('authenticationValue' in m))
    problems.push('authenticationValue: required with Y');
  if (m.transStatus === 'N' && !('transStatusReason' in m)) problems.push('transStatusReason: required with N');
  if (m.transStatus === 'Y' && !('eci' in m)) problems.push('eci: required with Y');
  return problems;
}

/** EMVCo's CRes elements (the final one, from a browser challenge). */
export function cresProblems(m: Message): string[] {
  const problems: string[] = [];
  const allowed = [
    'threeDSServerTransID',
    'acsTransID',
    'messageType',
    'messageVersion',
    'transStatus',
    'challengeCompletionInd',
    'messageExtension',
  ];
  for (const name of Object.keys(m)) if (!allowed.includes(name)) problems.push(`${name}: not a CRes element`);
  if (m.messageType !== 'CRes') problems.push('messageType');
  if (!(m.messageVersion === '2.1.0' || m.messageVersion === '2.2.0')) problems.push('messageVersion');
  if (typeof m.threeDSServerTransID !== 'string' || !UUID.test(m.threeDSServerTransID)) problems.push('threeDSServerTransID');
  if (typeof m.acsTransID !== 'string' || !UUID.test(m.acsTransID)) problems.push('acsTransID');
  if (m.challengeCompletionInd !== 'Y') problems.push('challengeCompletionInd');
  if (!['Y', 'N'].includes(m.transStatus as string)) problems.push('transStatus');
  return problems;
}

async function listen(t: TestContext, server: http.Server | https.Server, host: string): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  t.after(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return (server.address() as AddressInfo).port;
}

const body = (req: http.IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });

export interface DirectoryServer {
  /** Where the ACS sends results (CARDPROGRAM_3DS_DS_URL). */
  url: string;
  /** Every RReq received, in order (refused tries included). */
  rreqs: Message[];
  /** Over HTTPS: the subject CN of the client certificate each RReq came with, in order. */
  clientCertificates: string[];
  /** The next `n` RReqs get an HTTP 503 (the DS is away). */
  failNext(n: number): void;
}

/**
 * A DS's results endpoint: takes an RReq, answers an RRes (resultsStatus 01) echoing its identifiers.
 * Plain HTTP, or with `tls` HTTPS with its own certificate, requiring a client certificate under `tls.ca`.
 */
export async function directoryServer(
  t: TestContext,
  opts: { tls?: { cert: string; key: string; ca: string } } = {},
): Promise<DirectoryServer> {
  const rreqs: Message[] = [];
  const clientCertificates: string[] = [];
  let failing = 0;
  const handle: http.RequestListener = async (req, res) => {
    if (opts.tls) clientCertificates.push(String((req.socket as TLSSocket).getPeerCertificate().subject?.CN));
    const text = await body(req);
    let m: Message = {};
    try {
      m = JSON.parse(text) as Message;
    } catch {
      m = {};
    }
    rreqs.push(m);
    if (failing > 0) {
      failing--;
      res.writeHead(503).end('maintenance');
      return;
    }
    const rres = {
      messageType: 'RRes',
      messageVersion: m.messageVersion,
      threeDSServerTransID: m.threeDSServerTransID,
      dsTransID: m.dsTransID,
      acsTransID: m.acsTransID,
      resultsStatus: '01',
    };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(rres));
  };
  const server = opts.tls
    ? https.createServer({ ...opts.tls, requestCert: true, rejectUnauthorized: true }, handle)
    : http.createServer(handle);
  const port = await listen(t, server, '127.0.0.1');
  return {
    url: `${opts.tls ? 'https' : 'http'}://127.0.0.1:${port}/results`,
    rreqs,
    clientCertificates,
    failNext: (n) => {
      failing = n;
    },
  };
}

export interface ThreeDsServer {
  /** The 3DS Server's notificationURL (origin http://localhost:PORT: another site than the ACS's 127.0.0.1). */
  notificationURL: string;
  /** The shop's checkout page: the challenge in an iframe, its creq posted into it. */
  checkoutUrl(acsURL: string, creq: string, sessionData: string): string;
  /** Every CRes received (decoded) with its threeDSSessionData. */
  cres: Array<{ cres: Message; threeDSSessionData: string | null }>;
}

/** An iframe's box for each challengeWindowSize (EMVCo: 01 250×400, 02 390×400, 03 500×600, 04 600×400, 05 full). */
export const WINDOW = {
  '01': [250, 400],
  '02': [390, 400],
  '03': [500, 600],
  '04': [600, 400],
  '05': [0, 0],
} as const;

/** A 3DS Server with its shop's checkout page, on `localhost` (another origin and site than the ACS at 127.0.0.1). */
export async function threeDsServer(t: TestContext): Promise<ThreeDsServer> {
  const cres: ThreeDsServer['cres'] = [];
  let base = '';
  const server = http.createServer(async (req, res) => {
    const u = new URL(req.url ?? '/', base);
    if (req.method === 'GET' && u.pathname === '/checkout') {
      const size = (u.searchParams.get('size') ?? '05') as keyof typeof WINDOW;
      const [w, h] = WINDOW[size] ?? WINDOW['05'];
      const esc = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
      const frameStyle = w === 0 ? 'width:100%;height:90vh' : `width:${w}px;height:${h}px`;
      const page = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Checkout</title></head>
<body style="margin:0;font-family:sans-serif;background:#f3f3f3">
<h1 style="font-size:16px;margin:8px">Shop checkout</h1>
<iframe name="challenge" title="3-D Secure" style="${frameStyle};border:1px solid #999;background:#fff"></iframe>
<form id="f" method="post" action="${esc(u.searchParams.get('acsURL') ?? '')}" target="challenge">
<input type="hidden" name="creq" value="${esc(u.searchParams.get('creq') ?? '')}">
<input type="hidden" name="threeDSSessionData" value="${esc(u.searchParams.get('session') ?? '')}">
</form>
<script>document.getElementById('f').submit();</script>
</body></html>`;
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
      return;
    }
    if (req.method === 'POST' && u.pathname === '/notify') {
      const form = new URLSearchParams(await body(req));
      let decoded: Message = {};
      try {
        decoded = JSON.parse(Buffer.from(form.get('cres') ?? '', 'base64url').toString('utf8')) as Message;
      } catch {
        decoded = {};
      }
      cres.push({ cres: decoded, threeDSSessionData: form.get('threeDSSessionData') });
      res
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end(`<!doctype html><html lang="en"><body><p id="result">CRes received: ${String(decoded.transStatus)}</p></body></html>`);
      return;
    }
    res.writeHead(404).end();
  });
  const port = await listen(t, server, '127.0.0.1');
  base = `http://localhost:${port}`;
  return {
    notificationURL: `${base}/notify`,
    checkoutUrl: (acsURL, creq, sessionData) =>
      `${base}/checkout?${new URLSearchParams({ acsURL, creq, session: sessionData, size: JSON.parse(Buffer.from(creq, 'base64url').toString('utf8')).challengeWindowSize }).toString()}`,
    cres,
  };
}

/** A CReq as the 3DS Server builds it from the ARes (Base64url JSON, the form field `creq`). */
export function creq(ares: Message, challengeWindowSize = '05'): string {
  const m = {
    threeDSServerTransID: ares.threeDSServerTransID,
    acsTransID: ares.acsTransID,
    messageType: 'CReq',
    messageVersion: ares.messageVersion,
    challengeWindowSize,
  };
  return Buffer.from(JSON.stringify(m), 'utf8').toString('base64url');
}
