import type { IncomingMessage } from 'node:http';
import type { Actor, Services } from '../context.js';
import { databaseFault } from '../db/faults.js';
import { charsetOf, parseJsonBody } from '../http/body.js';
import { type OutsideServer, pathOf, peerOf, readBodyUpTo, sendJson, startOutsideListener } from '../http/outside-listener.js';
import { runVerb } from '../runner.js';
import { requestActivationCode, verifyActivationCode } from './activation.js';
import { applyNotification } from './notify.js';
import { processProvision } from './provision.js';
import { TspRefusal } from './refusal.js';
import { checkActivationCode, checkNotify, checkProvision, checkVerify } from './validate.js';

/** The largest request read: a provisioning is well under 4 KiB. */
export const MAX_TSP_BYTES = 16 * 1024;

export type TspServer = OutsideServer;

type Answer = { status: number; body: unknown };
const refusal = (status: number, error: string, detail: string): Answer => ({ status, body: { error, detail } });

const PATHS = {
  '/tsp/provision': 'provision',
  '/tsp/activation-code': 'activation-code',
  '/tsp/activation-code/verify': 'verify',
  '/tsp/notify': 'notify',
} as const;
type Route = (typeof PATHS)[keyof typeof PATHS];

/** One checked request to its verb; a refusal of the body's content is a 400 naming the element. */
/** How far ahead of the service's clock a notification's `at` may be (the two clocks' drift). */
const NOTIFY_AHEAD_MS = 5 * 60_000;

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
  // An event dated ahead would make every later one stale (a notification is ordered by its `at`).
  if (atMs > svc.clock() + NOTIFY_AHEAD_MS) {
    return refusal(400, 'invalid_request', 'at: must not be more than 5 minutes ahead of the service’s clock');
  }
  return { status: 200, body: await runVerb(svc, applyNotification, { input: { ...c.value, atMs }, actor }) };
}

/**
 * One request of the TSP (decisions §15.1–15.2): JSON in, bare JSON out. A malformed request is a
 * 400 `{error, detail}` naming the element; a token it does not know 404; a request its state
 * refuses 409; a database that cannot answer 503. Nothing of the body is logged (it holds the PAN).
 */
async function answer(svc: Services, req: IncomingMessage): Promise<Answer & { close?: boolean }> {
  const path = pathOf(req);
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
  const body = await readBodyUpTo(req, MAX_TSP_BYTES);
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
  const labelOf = (req: IncomingMessage) => (PATHS as Record<string, string>)[pathOf(req)] ?? 'other';
  return startOutsideListener(svc, {
    cfg: { ...cfg, port: cfg.port },
    vars: { port: 'CARDPROGRAM_TSP_PORT', host: 'CARDPROGRAM_TSP_HOST', tls: 'CARDPROGRAM_TSP_TLS_CA/_CERT/_KEY' },
    handle: async (req, res) => {
      const a = await answer(svc, req);
      svc.metrics.tspRequest(labelOf(req), a.status);
      sendJson(res, a.status, a.body, a.close === true);
    },
    failedMessage: 'TSP listener: a request failed',
    onFailure: (req) => {
      svc.metrics.tspRequest(labelOf(req), 503);
      return refusal(503, 'unavailable', 'the issuer cannot answer now; try again');
    },
    refused: (why) => svc.metrics.tspConnectionRefused(why),
    gauge: { name: 'cardprogram_tsp_connections', help: 'Open connections of the TSP endpoint' },
    listeningMessage: 'TSP endpoint listening',
  });
}
