import { lookup } from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { ConfigError } from '../config.js';
import { isLoopbackAddress } from '../config-three-ds.js';
import type { Services } from '../context.js';

/**
 * The HTTP listeners for outside parties (the 3-D Secure ACS's for the directory server, the wallet
 * tokens' for the TSP): one hardening for both. HTTPS with the party's client certificate verified
 * against its CA, or plain HTTP on a loopback address in the sandbox; connection caps (total and per
 * remote address, counted on the TCP connection before any TLS work), a TLS handshake, headers and a
 * request each within a bound, a body read up to a limit, and a stop that lets requests in flight end.
 */

/** A request's headers must arrive within this, and the whole request within REQUEST_MS. */
const HEADERS_MS = 10_000;
const REQUEST_MS = 15_000;
/** An idle kept-alive connection is closed after this. */
const KEEP_ALIVE_MS = 30_000;
const STOP_GRACE_MS = 5000;

/** What both listeners' configurations hold (src/config-three-ds.ts, src/config-tokens.ts). */
export interface OutsideListenerConfig {
  port: number | null;
  host: string;
  tls: { ca: string; cert: string; key: string } | null;
  maxConnections: number;
  maxPerAddress: number;
  handshakeMs: number;
}

export interface OutsideServer {
  port: number;
  /** Stops accepting, lets the requests in flight be answered (at most a few seconds), closes every connection. */
  stop(): Promise<void>;
}

export interface OutsideListener {
  cfg: OutsideListenerConfig & { port: number };
  /** The variables named when plain HTTP is refused (in full, so that each is found in the one list of known variables). */
  vars: { port: string; host: string; tls: string };
  /** Answers one request (writes the response). */
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /**
   * A request whose handling threw, logged as `failedMessage`: the answer sent for it (with the
   * connection closed), unless its headers went out already (then the connection is destroyed).
   */
  onFailure(req: IncomingMessage): { status: number; body: unknown };
  failedMessage: string;
  /** A connection closed at once: beyond a cap, or while stopping. */
  refused(why: 'capacity' | 'per_address' | 'stopping'): void;
  /** The gauge of open connections. */
  gauge: { name: string; help: string };
  /** Logged once listening. */
  listeningMessage: string;
}

/** The sandbox's plain HTTP only on loopback: the host is resolved, and every address it has must be one (not its text). */
/** A listener's variables as its refusals name them. */
type OutsideListenerVars = { port: string; host: string; tls: string };

async function assertLoopback(host: string, vars: OutsideListenerVars): Promise<void> {
  const addresses = await lookup(host, { all: true }).catch(() => []);
  if (addresses.length === 0 || addresses.some((a) => !isLoopbackAddress(a.address))) {
    throw new ConfigError(
      `${vars.port}: plain HTTP is allowed on a loopback address only; ${host} resolves to ${addresses.map((a) => a.address).join(', ') || 'nothing'} (set ${vars.tls} or ${vars.host}=127.0.0.1)`,
    );
  }
}

/** A JSON answer, never cached; `close` asks the client to close the connection after it. */
export function sendJson(res: ServerResponse, status: number, body: unknown, close = false): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...(close ? { connection: 'close' } : {}),
  });
  res.end(text);
}

/** Who sent it: the party's certificate subject (CN) over TLS, else its address. */
export function peerOf(req: IncomingMessage): string {
  const socket = req.socket as TLSSocket;
  const cn = typeof socket.getPeerCertificate === 'function' ? socket.getPeerCertificate()?.subject?.CN : undefined;
  return (Array.isArray(cn) ? cn[0] : cn) ?? socket.remoteAddress ?? 'unknown';
}

/** The request's path, without its query. */
export const pathOf = (req: IncomingMessage): string => (req.url ?? '').split('?')[0] ?? '';

/** Reads the body up to `max` bytes; null when it is larger (the rest is not read). */
export function readBodyUpTo(req: IncomingMessage, max: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
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

/** Starts a listener for an outside party, hardened as the module's comment says. */
export async function startOutsideListener(svc: Services, l: OutsideListener): Promise<OutsideServer> {
  const { cfg } = l;
  if (cfg.tls === null) await assertLoopback(cfg.host, l.vars);
  const inFlight = new Set<Promise<void>>();
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const done = l.handle(req, res).catch((err: unknown) => {
      svc.log.error({ err: { name: (err as Error)?.name, message: (err as Error)?.message } }, l.failedMessage);
      const failed = l.onFailure(req);
      if (!res.headersSent) sendJson(res, failed.status, failed.body, true);
      else res.destroy();
    });
    inFlight.add(done);
    void done.finally(() => inFlight.delete(done));
  };
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
  // Caps counted on the TCP connection, before any TLS work: whatever arrives, the party's own connections and the API keep working.
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? 'unknown';
    const mine = perAddress.get(address) ?? 0;
    const why = stopping ? 'stopping' : sockets.size >= cfg.maxConnections ? 'capacity' : mine >= cfg.maxPerAddress ? 'per_address' : null;
    if (why) {
      l.refused(why);
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
  svc.metrics.gauge(l.gauge.name, l.gauge.help, () => sockets.size);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(cfg.port, cfg.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as { port: number }).port;
  svc.log.info({ port, host: cfg.host, tls: cfg.tls !== null }, l.listeningMessage);
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
