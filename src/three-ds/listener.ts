import { lookup } from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { ConfigError } from '../config.js';
import { isLoopbackAddress } from '../config-three-ds.js';
import type { Services } from '../context.js';
import { charsetOf, parseJsonBody } from '../http/body.js';
import { type AcsAnswer, erro, processAReq } from './areq.js';
import { ERROR_CODES } from './emv-messages.js';

/** The largest AReq read: an app's deviceInfo is the largest element (64,000 characters). */
export const MAX_AREQ_BYTES = 128 * 1024;
/** A request's headers must arrive within this, and the whole request within REQUEST_MS. */
const HEADERS_MS = 10_000;
const REQUEST_MS = 15_000;
/** An idle kept-alive connection is closed after this. */
const KEEP_ALIVE_MS = 30_000;
const STOP_GRACE_MS = 5000;

export interface AcsServer {
  port: number;
  /** Stops accepting, lets the AReqs in flight be answered (at most a few seconds), closes every connection. */
  stop(): Promise<void>;
}

/** The sandbox's plain HTTP only on loopback: the host is resolved, and every address it has must be one (not its text). */
async function assertLoopback(host: string): Promise<void> {
  const addresses = await lookup(host, { all: true }).catch(() => []);
  if (addresses.length === 0 || addresses.some((a) => !isLoopbackAddress(a.address))) {
    throw new ConfigError(
      `CARDPROGRAM_3DS_PORT: plain HTTP is allowed on a loopback address only; ${host} resolves to ${addresses.map((a) => a.address).join(', ') || 'nothing'} (set CARDPROGRAM_3DS_TLS_CA/_CERT/_KEY or CARDPROGRAM_3DS_HOST=127.0.0.1)`,
    );
  }
}

const json = (res: ServerResponse, status: number, body: unknown, close = false) => {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...(close ? { connection: 'close' } : {}),
  });
  res.end(text);
};

/** Who sent it: the DS's certificate subject (CN) over TLS, else its address. */
function peerOf(req: IncomingMessage): string {
  const socket = req.socket as TLSSocket;
  const cn = typeof socket.getPeerCertificate === 'function' ? socket.getPeerCertificate()?.subject?.CN : undefined;
  return (Array.isArray(cn) ? cn[0] : cn) ?? socket.remoteAddress ?? 'unknown';
}

/** Reads the body up to the limit; null when it is larger (the rest is not read). */
function readBody(req: IncomingMessage): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_AREQ_BYTES) {
        req.pause();
        resolve(null);
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/**
 * One HTTP request of the DS: `POST /3ds/areq` with an AReq in JSON, answered with HTTP 200 and an
 * ARes or an Erro as the protocol wants (decisions §14.1). A body that is not JSON the service
 * reads is an Erro too: 101 (not a message), 204 (a key repeated: a duplicate data element), 203
 * (an element holding control characters).
 */
async function answer(svc: Services, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '').split('?')[0];
  if (path !== '/3ds/areq') return json(res, 404, { error: 'not found: the ACS answers POST /3ds/areq' });
  if (req.method !== 'POST') {
    res.setHeader('allow', 'POST');
    return json(res, 405, { error: 'method not allowed: POST an AReq' });
  }
  const refuse = (elements: string[], code: '101' | '203' | '204' = ERROR_CODES.messageInvalid, close = false) => {
    svc.metrics.threeDsError(code);
    json(res, 200, erro(null, code, elements), close);
  };
  const type = req.headers['content-type'] ?? '';
  const charset = charsetOf(type);
  const encoding = req.headers['content-encoding'];
  if (!/^application\/json\s*(;|$)/i.test(type) || (charset !== null && charset !== 'utf-8' && charset !== 'utf8')) {
    return refuse(['Content-Type']);
  }
  if (encoding && encoding.toLowerCase() !== 'identity') return refuse(['Content-Encoding']);
  const body = await readBody(req);
  // Too large: answered, and the connection closed rather than the rest read.
  if (body === null) return refuse(['message'], ERROR_CODES.messageInvalid, true);
  const parsed = parseJsonBody(body);
  if ('problem' in parsed) {
    const { kind, field } = parsed.problem;
    if (kind === 'duplicate') return refuse([field], ERROR_CODES.duplicateElement);
    if (kind === 'shape' && field !== 'body') return refuse([field.split(/[.[]/)[0] ?? field], ERROR_CODES.formatInvalid);
    return refuse(['message']);
  }
  const result: AcsAnswer = await processAReq(svc, parsed.value, { actor: { kind: 'network', peer: `ds:${peerOf(req)}` } });
  json(res, 200, result.message);
}

/**
 * The ACS's listener for the directory server (decisions §14.1, docs/3ds.md): HTTPS with the DS's
 * client certificate verified against CARDPROGRAM_3DS_TLS_CA (production refuses to start without
 * it: src/config-three-ds.ts), or plain HTTP on a loopback address in the sandbox. Hardened as the
 * card network link: at most CARDPROGRAM_3DS_MAX_CONNECTIONS connections and _MAX_PER_ADDRESS per
 * remote address (beyond, closed at once), a TLS handshake within 10 s, headers within 10 s and a
 * request within 15 s, a body of at most 128 KiB. Null when no port is set.
 */
export async function startAcs(svc: Services): Promise<AcsServer | null> {
  const cfg = svc.config.threeDs;
  if (cfg.port === null) return null;
  if (cfg.tls === null) await assertLoopback(cfg.host);
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const done = answer(svc, req, res).catch((err: unknown) => {
      svc.log.error({ err: { name: (err as Error)?.name, message: (err as Error)?.message } }, '3-D Secure listener: a request failed');
      if (!res.headersSent) json(res, 200, erro(null, ERROR_CODES.transientFailure, ['ACS']), true);
      else res.destroy();
    });
    inFlight.add(done);
    void done.finally(() => inFlight.delete(done));
  };
  const inFlight = new Set<Promise<void>>();
  // The timeouts are enforced every second (Node checks them every 30 s by default: a slow sender would keep its connection that long).
  const options = {
    maxHeaderSize: 16 * 1024,
    requestTimeout: REQUEST_MS,
    headersTimeout: HEADERS_MS,
    keepAliveTimeout: KEEP_ALIVE_MS,
    connectionsCheckingInterval: 1000,
  };
  const server: Server = cfg.tls
    ? createHttpsServer(
        {
          ...options,
          ca: readFileSync(cfg.tls.ca),
          cert: readFileSync(cfg.tls.cert),
          key: readFileSync(cfg.tls.key),
          requestCert: true,
          rejectUnauthorized: true,
          minVersion: 'TLSv1.2',
          handshakeTimeout: cfg.handshakeMs,
        },
        handler,
      )
    : createHttpServer(options, handler);
  // A refused handshake (no certificate, an unknown one, too slow) is the peer's problem, not a crash.
  server.on('tlsClientError', () => undefined);
  server.on('clientError', (_err, socket: Socket) => socket.destroy());

  const sockets = new Set<Socket>();
  const perAddress = new Map<string, number>();
  let stopping = false;
  // Caps counted on the TCP connection, before any TLS work: whatever arrives, the DS's own connections and the API keep working.
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? 'unknown';
    const mine = perAddress.get(address) ?? 0;
    const why = stopping ? 'stopping' : sockets.size >= cfg.maxConnections ? 'capacity' : mine >= cfg.maxPerAddress ? 'per_address' : null;
    if (why) {
      svc.metrics.threeDsConnectionRefused(why);
      socket.destroy();
      return;
    }
    sockets.add(socket);
    perAddress.set(address, mine + 1);
    socket.on('error', () => undefined);
    socket.on('close', () => {
      sockets.delete(socket);
      const left = (perAddress.get(address) ?? 1) - 1;
      if (left <= 0) perAddress.delete(address);
      else perAddress.set(address, left);
    });
  });
  svc.metrics.gauge('cardprogram_3ds_connections', 'Open connections of the 3-D Secure ACS listener', () => sockets.size);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(cfg.port ?? 0, cfg.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as { port: number }).port;
  svc.log.info({ port, host: cfg.host, tls: cfg.tls !== null }, '3-D Secure ACS listening');
  return {
    port,
    stop: async () => {
      stopping = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const until = Date.now() + STOP_GRACE_MS;
      while (inFlight.size > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
