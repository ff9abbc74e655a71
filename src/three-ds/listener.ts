import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Services } from '../context.js';
import { charsetOf, parseJsonBody } from '../http/body.js';
import { sendJson as json, type OutsideServer, pathOf, peerOf, readBodyUpTo, startOutsideListener } from '../http/outside-listener.js';
import { type AcsAnswer, erro, processAReq } from './areq.js';
import { ERROR_CODES } from './emv-messages.js';

/** The largest AReq read: an app's deviceInfo is the largest element (64,000 characters). */
export const MAX_AREQ_BYTES = 128 * 1024;
export type AcsServer = OutsideServer;

/**
 * One HTTP request of the DS: `POST /3ds/areq` with an AReq in JSON, answered with HTTP 200 and an
 * ARes or an Erro as the protocol wants (decisions §14.1). A body that is not JSON the service
 * reads is an Erro too: 101 (not a message), 204 (a key repeated: a duplicate data element), 203
 * (an element holding control characters).
 */
async function answer(svc: Services, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = pathOf(req);
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
  const body = await readBodyUpTo(req, MAX_AREQ_BYTES);
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
  return startOutsideListener(svc, {
    cfg: { ...cfg, port: cfg.port },
    vars: { port: 'CARDPROGRAM_3DS_PORT', host: 'CARDPROGRAM_3DS_HOST', tls: 'CARDPROGRAM_3DS_TLS_CA/_CERT/_KEY' },
    handle: (req, res) => answer(svc, req, res),
    failedMessage: '3-D Secure listener: a request failed',
    onFailure: () => ({ status: 200, body: erro(null, ERROR_CODES.transientFailure, ['ACS']) }),
    refused: (why) => svc.metrics.threeDsConnectionRefused(why),
    gauge: { name: 'cardprogram_3ds_connections', help: 'Open connections of the 3-D Secure ACS listener' },
    listeningMessage: '3-D Secure ACS listening',
  });
}
