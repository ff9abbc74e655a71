import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions, LogController } from 'fastify';
import { startWorker } from './callbacks/manage.js';
import type { CallbackWorker } from './callbacks/worker.js';
import { cardRoutes } from './cards/routes.js';
import type { Config } from './config.js';
import type { Services } from './context.js';
import { type Database, openDatabase } from './db/index.js';
import { migrateToLatest } from './db/migrate.js';
import { holderRoutes, holderSandboxRoutes } from './holders/routes.js';
import { authPlugin } from './http/auth.js';
import { registerJsonBody } from './http/body.js';
import { errorEnvelope, registerErrorHandling } from './http/errors.js';
import { RateLimiter } from './http/rate-limit.js';
import { reapKeys } from './idempotency/keys.js';
import { kycRoutes, kycSandboxRoutes } from './kyc/routes.js';
import { networkSandboxRoutes } from './network/routes.js';
import { pageRoutes } from './page/routes.js';
import { createServices } from './services.js';

declare module 'fastify' {
  interface FastifyInstance {
    svc: Services;
    worker: CallbackWorker | null;
    /** Every signed operation registered: path and operation name (for docs checks and tooling). */
    operations: Array<{ url: string; operation: string }>;
  }
}

export interface BuildOptions {
  /** An open database to use (tests); otherwise config.databaseUrl is opened and closed with the app. */
  database?: Database;
  /** Fastify logger options, or false; defaults to JSON logs at config.logLevel. */
  logger?: FastifyServerOptions['logger'];
  /** Where the default logger writes (stdout unless given): the same lines, redactions included. */
  logStream?: { write(line: string): void };
  clock?: () => number;
}

export const SERVICE_VERSION = (createRequire(import.meta.url)('../package.json') as { version: string }).version;

export const BODY_LIMIT = 1024 * 1024;

/** The one factory of the HTTP service: production and tests build it the same way. */
export async function buildApp(config: Config, opts: BuildOptions = {}): Promise<FastifyInstance> {
  const ownsDatabase = !opts.database;
  const database = opts.database ?? openDatabase(config.databaseUrl);
  await migrateToLatest(database);

  const app = Fastify({
    logger: opts.logger ?? {
      level: config.logLevel,
      // Bodies are never logged (they carry PII and, for some operations, card data); headers that
      // carry credentials are redacted.
      redact: { paths: ['req.headers.cookie', 'req.headers.authorization', 'res.headers["set-cookie"]'], censor: '[redacted]' },
      serializers: {
        // A page link's token is a credential until it is spent: the logged URL never carries it.
        req: (req) => ({
          method: req.method,
          url: String(req.url).replace(/([?&]token=)[^&#]*/gi, '$1[redacted]'),
          host: req.host,
          remoteAddress: req.ip,
          remotePort: req.socket?.remotePort ?? 0,
        }),
      },
      ...(opts.logStream ? { stream: opts.logStream } : {}),
    },
    genReqId: () => randomBytes(16).toString('hex'),
    logController: new LogController({ requestIdLogLabel: 'traceId' }),
    bodyLimit: BODY_LIMIT,
    return503OnClosing: true,
    // Errors the router raises before any hook (a malformed URL) get the envelope too.
    frameworkErrors: (err, req, reply) => {
      const r = reply as unknown as FastifyReply;
      r.header('x-trace-id', req.id);
      r.status(400).send(
        errorEnvelope(req as unknown as FastifyRequest, '1002', `url: ${err.code === 'FST_ERR_BAD_URL' ? 'is malformed' : 'is invalid'}`),
      );
    },
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
  }).withTypeProvider<TypeBoxTypeProvider>();

  const clock = opts.clock ?? Date.now;
  const svc = createServices(config, database, app.log, clock);
  await svc.vault.ensureKeys(database.db);
  app.decorate('svc', svc);

  // Only JSON bodies: anything else (text/plain included) is a 1002, not a guess.
  registerJsonBody(app);
  app.addHook('onRequest', async (req, reply) => {
    reply.header('x-trace-id', req.id);
  });

  registerErrorHandling(app);
  const operations: Array<{ url: string; operation: string }> = [];
  app.decorate('operations', operations);
  // Requests still being handled when the service closes: the database stays open until they are
  // answered (a request counts from its arrival; one whose client went away, until its handler ends).
  const inflight = { count: 0, idle: null as (() => void) | null };
  const tracked = new WeakSet<object>();
  const release = (req: object) => {
    if (!tracked.delete(req)) return;
    inflight.count--;
    if (inflight.count === 0) inflight.idle?.();
  };
  app.addHook('onRequest', async (req) => {
    tracked.add(req);
    inflight.count++;
  });
  app.addHook('onResponse', async (req) => release(req));
  app.addHook('onRoute', (route) => {
    const handler = route.handler;
    // The handler's own shape is kept: a synchronous one (a static file) stays synchronous.
    route.handler = function (this: unknown, req, reply) {
      // No response will be sent to a client that has gone: the handler's end is the request's end.
      const settled = () => {
        if (req.raw.destroyed) release(req);
      };
      let result: unknown;
      try {
        result = handler.call(this as never, req, reply);
      } catch (err) {
        settled();
        throw err;
      }
      if (result instanceof Promise) return result.finally(settled);
      settled();
      return result;
    } as typeof handler;
    if (route.config?.operation) {
      operations.push({ url: route.url, operation: route.config.operation });
      // The operation's name is its OpenAPI operationId: SDKs, `cardprogram call` and docs use it.
      if (route.schema && !route.schema.operationId) route.schema.operationId = route.config.operation;
    }
  });
  // The OpenAPI document is generated from the same TypeBox schemas that validate requests.
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'cardprogram',
        version: SERVICE_VERSION,
        description:
          'Card-program service for merchants. Every operation is POST with a JSON body signed as described in docs/signing.md; failures return the error envelope of docs/errors.md. Each merchant may send a limited number of signed requests a second (100 by default); past it the answer is 1009 (HTTP 429) with a Retry-After header in seconds. A 503 (database unavailable) also carries Retry-After and is safe to retry: a write with the same randomStr, a read with a new one.',
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      },
      servers: [{ url: config.publicUrl }],
    },
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  // The API reference, rendered by Swagger UI from the same document; its assets are served from
  // the package (no CDN). "Try it out" is off: a request needs a signature the browser cannot make.
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    staticCSP: true,
    // Served over plain http too (the sandbox, a LAN address): the upgrade would blank the page there.
    transformStaticCSP: (header) => header.replace(/\s*upgrade-insecure-requests;?/, ''),
    // No call-out to the public validator either.
    uiConfig: { supportedSubmitMethods: [], docExpansion: 'list', defaultModelsExpandDepth: 0, tryItOutEnabled: false, validatorUrl: null },
  });
  await app.register(authPlugin, {
    merchants: svc.merchants,
    clock,
    // A test's clock drives the limiter's timers too; otherwise they run on the monotonic clock.
    limiter: new RateLimiter(database, clock, opts.clock),
    rateLimit: config.rateLimit,
  });

  // For load balancers and operators (docs/operations.md), not part of the merchant API document.
  app.get('/healthz', { schema: { hide: true } }, async (_req, reply) => {
    try {
      await database.db.selectFrom('merchants').select('id').limit(1).execute();
      return { status: 'ok', database: database.dialect };
    } catch (err) {
      app.log.warn({ err }, 'health check failed');
      return reply.status(503).send({ status: 'unavailable', database: database.dialect });
    }
  });

  await app.register(holderRoutes, { svc });
  await app.register(cardRoutes, { svc });
  await app.register(kycRoutes, { svc });
  await app.register(pageRoutes, { svc });
  if (config.env === 'sandbox') {
    await app.register(holderSandboxRoutes, { svc });
    await app.register(networkSandboxRoutes, { svc });
    await app.register(kycSandboxRoutes, { svc });
  }

  // randomStr keys are kept for the retention period, then reaped (decisions §4: at least 24 h).
  const reaper = setInterval(
    () => {
      reapKeys(database, clock() - config.idempotencyRetentionMs).catch((err) => app.log.warn({ err }, 'reaping idempotency keys failed'));
    },
    60 * 60 * 1000,
  );
  reaper.unref();

  // The callback worker runs inside the service unless CARDPROGRAM_WORKER=off (then `cardprogram worker`).
  const worker = config.callbacks.worker ? startWorker(svc) : null;
  app.decorate('worker', worker);

  app.addHook('onClose', async () => {
    clearInterval(reaper);
    await worker?.stop();
    if (inflight.count > 0) {
      await new Promise<void>((resolve) => {
        inflight.idle = resolve;
        // A handler that never ends must not hold the shutdown for ever.
        setTimeout(resolve, 10_000).unref();
      });
    }
    if (ownsDatabase) await database.close();
  });
  return app;
}
