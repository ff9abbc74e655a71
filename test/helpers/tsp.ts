// A token service provider's side of the service's calls (decisions §15.1, §15.4), written from the
// spec, not from this project's types: it takes `POST /tokens/{tokenReferenceId}/{action}` with a
// JSON body `{reason}`, records each, and answers what the test sets (200 `{}` by default; 503 while
// "down"). Over plain HTTP, or with `tls` over HTTPS (its own certificate, and the client certificate
// it requires, verified against its CA, as a scheme's TSP does).
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Harness } from './app.js';

export interface TspCall {
  tokenReferenceId: string;
  action: string;
  body: Record<string, unknown>;
  idempotencyKey: string | undefined;
  /** The status it was answered. */
  answered: number;
  /** Over HTTPS: the subject's CN of the client certificate the caller presented (verified against the CA). */
  clientCertificate?: string;
}

/** The HTTPS side: the server's certificate and key, and the CA its callers' client certificates must chain to (PEM text). */
export interface TspSimulatorTls {
  cert: string;
  key: string;
  ca: string;
}

export async function tspSimulator(t: { after(fn: () => unknown): void }, opts: { tls?: TspSimulatorTls } = {}) {
  const calls: TspCall[] = [];
  /** Over HTTPS: the handshakes that failed, by the error the server saw. */
  const tlsErrors: string[] = [];
  /** The status to answer (200: up; 503: down). */
  let status = 200;
  const handle: http.RequestListener = (req, res) => {
    let raw = '';
    req.on('data', (c) => {
      raw += c;
    });
    req.on('end', () => {
      const m = /^\/tokens\/([^/]+)\/(activate|suspend|resume|delete)$/.exec(req.url ?? '');
      if (req.method !== 'POST' || !m) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not_found"}');
        return;
      }
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(raw);
      } catch {
        res.writeHead(400).end();
        return;
      }
      const key = req.headers['idempotency-key'];
      const peer = opts.tls ? (req.socket as TLSSocket).getPeerCertificate() : undefined;
      calls.push({
        tokenReferenceId: decodeURIComponent(m[1] as string),
        action: m[2] as string,
        body,
        idempotencyKey: typeof key === 'string' ? key : undefined,
        answered: status,
        ...(peer?.subject ? { clientCertificate: String(peer.subject.CN) } : {}),
      });
      res.writeHead(status, { 'content-type': 'application/json' }).end(status < 300 ? '{}' : '{"error":"unavailable"}');
    });
  };
  const server = opts.tls
    ? https.createServer({ ...opts.tls, requestCert: true, rejectUnauthorized: true }, handle)
    : http.createServer(handle);
  server.on('tlsClientError', (err: Error) => tlsErrors.push(err.message));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  t.after(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return {
    url: `${opts.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    port,
    calls,
    tlsErrors,
    /** The calls the TSP took (2xx). */
    taken: () => calls.filter((c) => c.answered < 300),
    answer: (next: number) => {
      status = next;
    },
    /** Over HTTPS: presents another certificate from the next handshake on (the CA of its callers unchanged). */
    present: (tls: { cert: string; key: string }) => {
      if (!opts.tls) throw new Error('the simulator is plain HTTP');
      (server as https.Server).setSecureContext({ ...opts.tls, ...tls });
    },
  };
}

/**
 * Sends what is due to the TSP and waits until it is recorded. Through the service's own pass per
 * process (the reaper's timer may be running one): the second pass starts after the first ended,
 * so it sees every change committed before this was called.
 */
export async function flushTsp(svc: import('../../src/context.js').Services): Promise<void> {
  const { sendTspCallsOnce } = await import('../../src/tokens/tsp-calls.js');
  await sendTspCallsOnce(svc);
  await sendTspCallsOnce(svc);
}

/** A token's calls to the TSP, oldest first, as the sender left them. */
export const callsOf = (h: Harness, tokenId: string) =>
  h.db.database.db
    .selectFrom('tsp_calls')
    .select(['id', 'action', 'status', 'attempts', 'next_at', 'last_error'])
    .where('token_id', '=', tokenId)
    .orderBy('created_at')
    .execute();

/** A call's tries, in order. */
export const attemptsOf = (h: Harness, callId: string) =>
  h.db.database.db
    .selectFrom('tsp_call_attempts')
    .select(['attempt', 'http_status', 'error', 'outcome'])
    .where('call_id', '=', callId)
    .orderBy('attempt')
    .execute();
