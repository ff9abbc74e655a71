import { randomBytes } from 'node:crypto';
import { type FastifyReply, type FastifyRequest, type FastifyServerOptions, LogController } from 'fastify';
import type { Config } from '../config.js';
import { errorEnvelope } from './errors.js';
import { redactedUrl } from './logged-url.js';

export const BODY_LIMIT = 1024 * 1024;

export interface ServerOptionsInput {
  /** Fastify logger options, or false; defaults to JSON logs at config.logLevel. */
  logger?: FastifyServerOptions['logger'] | undefined;
  /** Where the default logger writes (stdout unless given): the same lines, redactions included. */
  logStream?: { write(line: string): void } | undefined;
  /** Fastify's schemaController option (src/http/compilers.ts). */
  schemaController: NonNullable<FastifyServerOptions['schemaController']>;
}

export { redactedUrl } from './logged-url.js';

/**
 * One log line per request, at info, when it is answered: its method, URL (redacted), status and
 * time. Fastify's own writes two, as it comes and as it goes (measured: 10 % of a list's time at
 * `info`); the line as it comes is kept at debug. Fastify's other lines (errors, a route not
 * found, a failed serializer) are as Fastify writes them.
 */
class OneLinePerRequest extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    if (this.isLogDisabled(request) || !(request.log as { isLevelEnabled?: (l: string) => boolean }).isLevelEnabled?.('debug')) return;
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request)) return;
    if (error) reply.log.error({ req: request, res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    else reply.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}

/** How the HTTP server is set up: logs, trace ids, proxies, limits, and how bodies are validated. */
export function serverOptions(config: Config, opts: ServerOptionsInput): FastifyServerOptions {
  return {
    logger: opts.logger ?? {
      level: config.logLevel,
      // Bodies are never logged (they carry PII and, for some operations, card data); headers that
      // carry credentials are redacted.
      redact: { paths: ['req.headers.cookie', 'req.headers.authorization', 'res.headers["set-cookie"]'], censor: '[redacted]' },
      serializers: {
        // A page link's token is a credential until it is spent, and what an operator searches the
        // console for may be a card number, an e-mail or a document: the logged URL carries neither.
        req: (req) => ({
          method: req.method,
          url: redactedUrl(String(req.url)),
          host: req.host,
          remoteAddress: req.ip,
          remotePort: req.socket?.remotePort ?? 0,
        }),
        // A redirect's Location is logged as the request's URL is: it is the URL the browser asks for next.
        res: (res) => {
          const location = typeof res.getHeader === 'function' ? res.getHeader('location') : undefined;
          return { statusCode: res.statusCode, ...(typeof location === 'string' ? { location: redactedUrl(location) } : {}) };
        },
      },
      ...(opts.logStream ? { stream: opts.logStream } : {}),
    },
    genReqId: () => randomBytes(16).toString('hex'),
    logController: new OneLinePerRequest({ requestIdLogLabel: 'traceId' }),
    bodyLimit: BODY_LIMIT,
    // X-Forwarded-Proto/For/Host count only from the proxies named in CARDPROGRAM_TRUST_PROXY: from
    // anyone else they would let a client claim HTTPS, another address or another host.
    trustProxy: config.trustProxy.length > 0 ? config.trustProxy : false,
    return503OnClosing: true,
    // Errors the router raises before any hook (a malformed URL) get the envelope too.
    frameworkErrors: (err, req, reply) => {
      const r = reply as unknown as FastifyReply;
      r.header('x-trace-id', req.id);
      r.status(400).send(
        errorEnvelope(req as unknown as FastifyRequest, '1002', `url: ${err.code === 'FST_ERR_BAD_URL' ? 'is malformed' : 'is invalid'}`),
      );
    },
    schemaController: opts.schemaController,
    ajv: {
      customOptions: {
        // Reject, never silently drop or coerce: an unknown field or "12" for 12 is a 1002.
        removeAdditional: false,
        coerceTypes: false,
        useDefaults: true,
        allErrors: false,
        verbose: true,
      },
    },
  };
}
