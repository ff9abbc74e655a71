import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { databaseFault } from '../db/faults.js';
import { DomainError, ErrorCodes } from '../errors.js';

interface AjvError {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
  parentSchema?: { description?: string; enum?: unknown[]; properties?: Record<string, unknown> };
  /** The value that failed (Ajv's verbose mode): for required/additionalProperties, the object. */
  data?: unknown;
}

function fieldName(instancePath: string): string {
  return instancePath.replace(/^\//, '').replace(/\//g, '.');
}

/** Levenshtein distance, for "did you mean" over a handful of short field names. */
function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min((prev[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length] ?? 0;
}

const squash = (name: string) => name.toLowerCase().replace(/[_-]/g, '');

/** The known field an unknown one most likely stands for: same letters ignoring case and _/-, or a typo. */
export function closestField(unknown: string, known: string[]): string | undefined {
  const same = known.find((k) => squash(k) === squash(unknown));
  if (same) return same;
  const limit = unknown.length <= 4 ? 1 : 2;
  let best: { name: string; distance: number } | undefined;
  for (const k of known) {
    const distance = editDistance(squash(unknown), squash(k));
    if (distance <= limit && (!best || distance < best.distance)) best = { name: k, distance };
  }
  return best?.name;
}

/**
 * One rule for a field the schema does not know, whichever check met the object first: Ajv reports
 * a missing required field before an unknown one, so `cardID` alone read "cardId: is required" while
 * `card_id` read "is not a known field". Any unknown field of the object is named first, with the
 * known field it most likely stands for (preferring the missing one).
 */
function unknownField(e: AjvError): { name: string; suggestion: string | undefined } | undefined {
  const props = e.parentSchema?.properties;
  const data = e.data;
  if (!props || typeof data !== 'object' || data === null || Array.isArray(data)) return undefined;
  const known = Object.keys(props);
  const unknown = Object.keys(data).filter((k) => !Object.hasOwn(props, k));
  if (unknown.length === 0) return undefined;
  const absent = known.filter((k) => !Object.hasOwn(data, k));
  const missing = e.keyword === 'required' ? String(e.params.missingProperty) : undefined;
  const candidates = unknown.map((name) => ({ name, suggestion: closestField(name, absent) }));
  const chosen =
    candidates.find((c) => missing !== undefined && c.suggestion === missing) ??
    candidates.find((c) => c.name === e.params.additionalProperty) ??
    candidates[0];
  return chosen;
}

/** Turns the first schema violation into "field: rule" a person can act on. */
export function describeValidation(errors: AjvError[]): string {
  const e = errors[0];
  if (!e) return 'request body is invalid';
  const base = fieldName(e.instancePath);
  const join = (name: string) => (base ? `${base}.${name}` : name);
  switch (e.keyword) {
    case 'required':
    case 'additionalProperties': {
      const stray = unknownField(e);
      if (stray) {
        return `${join(stray.name)}: is not a known field${stray.suggestion ? `; did you mean ${stray.suggestion}?` : ''}`;
      }
      if (e.keyword === 'required') return `${join(String(e.params.missingProperty))}: is required`;
      return `${join(String(e.params.additionalProperty))}: is not a known field`;
    }
    case 'type': {
      if (e.parentSchema?.enum && e.parentSchema.description) return `${base}: ${e.parentSchema.description}`;
      const type = String(e.params.type);
      return `${base || 'body'}: must be ${type === 'object' ? 'a JSON object' : `${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type}`}`;
    }
    case 'maxLength':
    case 'minLength':
    case 'pattern':
    case 'format':
    case 'enum':
    case 'const':
    case 'anyOf':
    case 'minimum':
    case 'maximum':
    case 'minItems':
    case 'maxItems':
    case 'multipleOf':
      if (e.parentSchema?.description) {
        return `${base}: ${e.parentSchema.description}${e.keyword === 'maxLength' ? ` (at most ${e.params.limit} characters)` : ''}`;
      }
      return `${base}: ${e.message ?? 'is invalid'}`;
    default:
      return `${base || 'body'}: ${e.message ?? 'is invalid'}`;
  }
}

export function errorEnvelope(req: FastifyRequest, code: string, msg: string, detail?: Record<string, unknown>) {
  const body: Record<string, unknown> = { code, msg, model: null, traceId: req.id, success: false, error: true };
  // The cardholder operation reports its result text in errMsg too (interface §7).
  if (req.routeOptions?.config?.errMsg) body.errMsg = msg;
  if (detail) body.detail = detail;
  return body;
}

function send(req: FastifyRequest, reply: FastifyReply, status: number, code: string, msg: string, detail?: Record<string, unknown>) {
  // What the request's metrics are labelled with (src/http/metrics.ts).
  req.resultCode = code;
  if (typeof detail?.declineReason === 'string') req.declineReason = detail.declineReason;
  return reply.status(status).send(errorEnvelope(req, code, msg, detail));
}

/** The one place where any failure becomes the envelope and HTTP status of decisions §5. */
/**
 * What a 404 says. A sandbox path (only registered in the sandbox) reached in production says what
 * it is and what takes its place, instead of reading like a typo.
 */
export function notFoundMessage(req: FastifyRequest, production: boolean): string {
  const path = (req.url.split('?')[0] ?? '').slice(0, 120);
  if (production && /^\/sandbox(\/|$)/.test(path)) {
    return (
      `${req.method} ${path} is a sandbox operation, not served in production: card events arrive over ` +
      'the card network link there (docs/network.md), and reviews are decided in the console or by the cardprogram command'
    );
  }
  return `No operation at ${req.method} ${path}`;
}

export function registerErrorHandling(app: FastifyInstance, opts: { production: boolean }): void {
  app.setErrorHandler((err: FastifyError, req, reply) => {
    if (err instanceof DomainError) {
      if (err.replayed) reply.header('x-idempotent-replay', 'true');
      if (err.retryAfterSeconds !== undefined) reply.header('retry-after', String(err.retryAfterSeconds));
      return send(req, reply, err.status, err.code, err.message, err.detail);
    }
    if (err.validation) {
      return send(req, reply, 400, ErrorCodes.validation.code, describeValidation(err.validation as unknown as AjvError[]));
    }
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      // A route with a larger limit (a dispute's evidence files) says its own.
      const limit = req.routeOptions?.bodyLimit;
      const msg = limit && limit > 1024 * 1024 ? `Request body is larger than ${limit / (1024 * 1024)} MiB` : ErrorCodes.bodyTooLarge.msg;
      return send(req, reply, 413, ErrorCodes.bodyTooLarge.code, msg);
    }
    if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || err.code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH') {
      return send(req, reply, 400, ErrorCodes.validation.code, 'Content-Type must be application/json');
    }
    if (err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') {
      return send(req, reply, 400, ErrorCodes.validation.code, 'body: must be a JSON object');
    }
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      // Malformed JSON, a forbidden __proto__ key and other client faults of the parser.
      return send(req, reply, 400, ErrorCodes.validation.code, 'body: must be well-formed JSON');
    }
    const fault = databaseFault(err);
    if (fault) {
      // The database, not the request: safe to retry (a write with the same randomStr, a read with a new one).
      req.log.error({ err, reason: fault.reason }, `database unavailable: ${fault.reason}`);
      reply.header('retry-after', String(fault.retryAfterSeconds));
      return send(req, reply, 503, ErrorCodes.unavailable.code, `${ErrorCodes.unavailable.msg}; retry in ${fault.retryAfterSeconds} s`);
    }
    // Never a stack trace or an internal message in a response: log it, answer generically.
    req.log.error({ err }, 'unhandled error');
    return send(req, reply, 500, ErrorCodes.internal.code, ErrorCodes.internal.msg);
  });

  app.setNotFoundHandler((req, reply) => send(req, reply, 404, ErrorCodes.operationNotFound.code, notFoundMessage(req, opts.production)));
}
