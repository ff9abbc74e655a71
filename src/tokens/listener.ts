import { lookup } from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { ConfigError } from '../config.js';
import { isLoopbackAddress } from '../config-three-ds.js';
import type { Actor, Services } from '../context.js';
import { databaseFault } from '../db/faults.js';
import { charsetOf, parseJsonBody } from '../http/body.js';
import { runVerb } from '../runner.js';
import { requestActivationCode, verifyActivationCode } from './activation.js';
import { applyNotification } from './notify.js';
import { processProvision } from './provision.js';
import { TspRefusal } from './refusal.js';
import { checkActivationCode, checkNotify, checkProvision, checkVerify } from './validate.js';

/** The largest request read: a provisioning is well under 4 KiB. */
export const MAX_TSP_BYTES = 16 * 1024;
const HEADERS_MS = 10_000;
const REQUEST_MS = 15_000;
const KEEP_ALIVE_MS = 30_000;
const STOP_GRACE_MS = 5000;

export interface TspServer {
  port: number;
  stop(): Promise<void>;
}

type Answer = { status: number; body: unknown };
const refusal = (status: number, error: string, detail: string): Answer => ({ status, body: { error, detail } });

/** The sandbox's plain HTTP only on loopback: the host is resolved, and every address it has must be one. */
async function assertLoopback(host: string): Promise<void> {
  const addresses = await lookup(host, { all: true }).catch(() => []);
  if (addresses.length === 0 || addresses.some((a) => !isLoopbackAddress(a.address))) {
    throw new ConfigError(
      `CARDPROGRAM_TSP_PORT: plain HTTP is allowed on a loopback address only; ${host} resolves to ${addresses.map((a) => a.address).join(', ') || 'nothing'} (set CARDPROGRAM_TSP_TLS_CA/_CERT/_KEY or CARDPROGRAM_TSP_HOST=127.0.0.1)`,
    );
  }
}

function send(res: ServerResponse, answer: Answer, close = false): void {
  const text = JSON.stringify(answer.body);
  res.writeHead(answer.status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...(close ? { connection: 'close' } : {}),
  });
  res.end(text);
}

/** Who sent it: the TSP's certificate subject (CN) over TLS, else its address. */
function peerOf(req: IncomingMessage): string {
  const socket = req.socket as TLSSocket;
  const cn = typeof socket.getPeerCertificate === 'function' ? socket.getPeerCertificate()?.subject?.CN : undefined;
  return (Array.isArray(cn) ? cn[0] : cn) ?? socket.remoteAddress ?? 'unknown';
}

function readBody(req: IncomingMessage): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_TSP_BYTES) {
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

const PATHS = {
  '/tsp/provision': 'provision',
  '/tsp/activation-code': 'activation-code',
  '/tsp/activation-code/verify': 'verify',
  '/tsp/notify': 'notify',
} as const;
type Route = (typeof PATHS)[keyof typeof PATHS];

/** One checked request to its verb; a refusal of the body's content is a 400 naming the element. */
async function dispatch(svc: Services, route: Route, body: unknown, actor: Actor): Promise<Answer> {
  if (route === 'provision') {
    const c = checkProvision(body);
    if ('detail' in c) return refusal(400, 'invalid_request', c.detail);
    return { status: 200, body: await processProvision(svc, c.value, actor) };
  }
  if (route === 'activation-code') {
    const c = checkActivationCode(body);
    if ('detail' in c) return refusal(400, 'invalid_request', c.detail);
    return { status: 200, body: await runVerb(svc, requestActivationCode, { input: c.value, actor }) };
  }
  if (route === 'verify') {
    const c = checkVerify(body);
    if ('detail' in c) return refusal(400, 'invalid_request', c.detail);
    return { status: 200, body: await runVerb(svc, verifyActivationCode, { input: c.value, actor }) };
  }
  const c = checkNotify(body);
  if ('detail' in c) return refusal(400, 'invalid_request', c.detail);
  const atMs = Date.parse(c.value.at);
  if (!Number.isFinite(atMs)) return refusal(400, 'invalid_request', 'at: must be an ISO 8601 date and time that exists');
  return { status: 200, body: await runVerb(svc, applyNotification, { input: { ...c.value, atMs }, actor }) };
}

/**
 * One request of the TSP (decisions §15.1–15.2): JSON in, bare JSON out. A malformed request is a
 * 400 `{error, detail}` naming the element; a token it does not know 404; a request its state
 * refuses 409; a database that cannot answer 503. Nothing of the body is logged (it holds the PAN).
 */
async function answer(svc: Services, req: IncomingMessage): Promise<Answer & { close?: boolean }> {
  const path = (req.url ?? '').split('?')[0] ?? '';
  const route = (PATHS as Record<string, Route>)[path];
  if (!route) return refusal(404, 'not_found', `path: the TSP endpoint answers POST ${Object.keys(PATHS).join(', ')}`);
  if (req.method !== 'POST') return refusal(405, 'method_not_allowed', 'method: must be POST');
  const type = req.headers['content-type'] ?? '';
  const charset = charsetOf(type);
  if (!/^application\/json\s*(;|$)/i.test(type) || (charset !== null && charset !== 'utf-8' && charset !== 'utf8')) {
    return refusal(415, 'unsupported_media_type', 'Content-Type: must be application/json (UTF-8)');
  }
  const encoding = req.headers['content-encoding'];
  if (encoding && encoding.toLowerCase() !== 'identity')
    return refusal(415, 'unsupported_media_type', 'Content-Encoding: must be identity');
  const body = await readBody(req);
  if (body === null) return { ...refusal(413, 'too_large', `body: must be at most ${MAX_TSP_BYTES} bytes`), close: true };
  const parsed = parseJsonBody(body);
  if ('problem' in parsed) {
    const { kind, field } = parsed.problem;
    if (kind === 'duplicate') return refusal(400, 'invalid_request', `${field}: appears twice`);
    if (kind === 'shape' && field !== 'body')
      return refusal(400, 'invalid_request', `${field}: holds a control character or is nested too deep`);
    return refusal(400, 'invalid_request', 'body: must be JSON (UTF-8)');
  }
  const actor: Actor = { kind: 'network', peer: `tsp:${peerOf(req)}` };
  try {
    return await dispatch(svc, route, parsed.value, actor);
  } catch (err) {
    if (err instanceof TspRefusal) return refusal(err.status, err.error, err.detail);
    const fault = databaseFault(err);
    if (fault) {
      svc.log.warn({ route, reason: fault.reason }, 'TSP endpoint: the database could not answer (503)');
      return refusal(503, 'unavailable', 'the issuer cannot answer now; try again');
    }
    svc.log.error({ route, err: { name: (err as Error)?.name, message: (err as Error)?.message } }, 'TSP endpoint: a request failed');
    return refusal(503, 'unavailable', 'the issuer cannot answer now; try again');
  }
}

/**
 * The TSP's endpoint for wallet tokens (decisions §15.1, docs/tokens.md): HTTPS with the TSP's client
 * certificate verified against CARDPROGRAM_TSP_TLS_CA (production refuses to start without it:
 * src/config-tokens.ts), or plain HTTP on a loopback address in the sandbox. Hardened as the ACS's
 * listener: connection caps (total and per address), a TLS handshake within 10 s, headers within
 * 10 s and a request within 15 s, a body of at most 16 KiB. Null when no port is set.
 */
export async function startTsp(svc: Services): Promise<TspServer | null> {
  const cfg = svc.config.tokens;
  if (cfg.port === null) return null;
  if (cfg.tls === null) await assertLoopback(cfg.host);
  const inFlight = new Set<Promise<void>>();
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '').split('?')[0] ?? '';
    const label = (PATHS as Record<string, string>)[path] ?? 'other';
    const done = answer(svc, req)
      .then((a) => {
        svc.metrics.tspRequest(label, a.status);
        send(res, a, a.close === true);
      })
      .catch((err: unknown) => {
        svc.log.error({ err: { name: (err as Error)?.name, message: (err as Error)?.message } }, 'TSP listener: a request failed');
        svc.metrics.tspRequest(label, 503);
        if (!res.headersSent) send(res, refusal(503, 'unavailable', 'the issuer cannot answer now; try again'), true);
        else res.destroy();
      });
    inFlight.add(done);
    void done.finally(() => inFlight.delete(done));
  };
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
  server.on('tlsClientError', () => undefined);
  server.on('clientError', (_err, socket: Socket) => socket.destroy());

  const sockets = new Set<Socket>();
  const perAddress = new Map<string, number>();
  let stopping = false;
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? 'unknown';
    const mine = perAddress.get(address) ?? 0;
    const why = stopping ? 'stopping' : sockets.size >= cfg.maxConnections ? 'capacity' : mine >= cfg.maxPerAddress ? 'per_address' : null;
    if (why) {
      svc.metrics.tspConnectionRefused(why);
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
  svc.metrics.gauge('cardprogram_tsp_connections', 'Open connections of the TSP endpoint', () => sockets.size);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(cfg.port ?? 0, cfg.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as { port: number }).port;
  svc.log.info({ port, host: cfg.host, tls: cfg.tls !== null }, 'TSP endpoint listening');
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
