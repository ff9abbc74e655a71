import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';

/**
 * The service's calls to the servers the operator names (the wallet tokens' TSP, the 3-D Secure
 * directory server): one POST each, the answer read up to 64 KiB, over https with the client
 * certificate and the CA configured (src/config-tls.ts checks their files at start), the server's
 * certificate always verified, its name included. Not the merchants' endpoints: those are asked
 * through src/authorization-endpoint/ask.ts, with its rules against a merchant's URL.
 */

/** What an https call to a server presents and trusts, by the files' paths: each absent when unset. */
export interface OutboundFiles {
  cert: string | null;
  key: string | null;
  ca?: string | null | undefined;
}

interface OutboundTls {
  cert?: Buffer;
  key?: Buffer;
  ca?: Buffer;
}

const read = new Map<string, OutboundTls>();

/** The files read once by their paths (again only when the configuration names others: a test's service after another's). */
function tlsOf(files: OutboundFiles): OutboundTls {
  const from = `${files.cert}\n${files.key}\n${files.ca}`;
  let tls = read.get(from);
  if (!tls) {
    tls = {
      ...(files.cert && files.key ? { cert: readFileSync(files.cert), key: readFileSync(files.key) } : {}),
      ...(files.ca ? { ca: readFileSync(files.ca) } : {}),
    };
    read.set(from, tls);
  }
  return tls;
}

/** The most of an answer read: a server's answer past it ends the call. */
const MAX_ANSWER = 65_536;

/** POSTs `body` as JSON to `url`; resolves with the answer's status and text, rejects on no answer (callFailure words it). */
export function postTo(
  url: string,
  body: string,
  o: { files: OutboundFiles | null; timeoutMs: number; headers?: Record<string, string> },
): Promise<{ status: number; text: string }> {
  const u = new URL(url);
  const options = {
    method: 'POST',
    headers: { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), ...o.headers },
    timeout: o.timeoutMs,
    // The server's certificate is verified, its name included (https's checkServerIdentity): against
    // the CA configured only when set, the system's trust store otherwise; never turned off.
    ...(u.protocol === 'https:' ? { ...(o.files ? tlsOf(o.files) : {}), rejectUnauthorized: true } : {}),
  };
  return new Promise((resolve, reject) => {
    const req = (u.protocol === 'https:' ? https : http).request(u, options, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_ANSWER) req.destroy(new Error('the answer is over 64 KiB'));
        else chunks.push(c);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${o.timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * A call that got no HTTP answer, as its attempt records it: a TLS failure (the server's certificate
 * not under the CA trusted, not naming the server's host, expired; the server refusing the client
 * certificate) says so with OpenSSL's or Node.js's code, which is what an operator looks up:
 * `TLS UNABLE_TO_VERIFY_LEAF_SIGNATURE: unable to verify the first certificate`. Anything else as
 * Node.js words it (`connect ECONNREFUSED …`, a timeout).
 */
export function callFailure(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  const code = typeof e?.code === 'string' ? e.code : '';
  const message = e instanceof Error ? e.message : String(err);
  return /CERT|SELF_SIGNED|VERIFY|ISSUER|^ERR_TLS_|^ERR_SSL_/.test(code) ? `TLS ${code}: ${message}` : message;
}
