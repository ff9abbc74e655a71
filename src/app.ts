import { createRequire } from 'node:module';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { cardRoutes, cardStatusRoutes } from './cards/routes.js';
import { type Config, ConfigError } from './config.js';
import { consoleRoutes } from './console/routes.js';
import type { Services } from './context.js';
import { controlsRoutes } from './controls/routes.js';
import { widePermissions } from './db/files.js';
import { type Database, openDatabase } from './db/index.js';
import { isCurrent, migrateToLatest } from './db/migrate.js';
import { ensureTradePartitions } from './db/partitions.js';
import { ReplicaRouter } from './db/replica.js';
import { disputeRoutes, disputeSandboxRoutes } from './disputes/routes.js';
import { holderRoutes, holderSandboxRoutes } from './holders/routes.js';
import { authPlugin } from './http/auth.js';
import { registerJsonBody } from './http/body.js';
import { lazySchemaCompilers } from './http/compilers.js';
import { registerErrorHandling } from './http/errors.js';
import { healthPlugin } from './http/health.js';
import { inFlightPlugin } from './http/in-flight.js';
import { metricsPlugin } from './http/metrics.js';
import { openApiPlugin } from './http/openapi.js';
import { serverOptions } from './http/options.js';
import { RateLimiter } from './http/rate-limit.js';
import { reaperPlugin } from './http/reaper.js';
import { workerPlugin } from './http/worker.js';
import { openReadNonces } from './idempotency/read-nonce-store.js';
import { periodicJobs } from './jobs/periodic.js';
import { kycRoutes, kycSandboxRoutes } from './kyc/routes.js';
import { openExceptions } from './ledger/exceptions-query.js';
import { fundingRoutes } from './ledger/routes.js';
import { merchantRoutes } from './merchants/routes.js';
import { pageRoutes } from './page/routes.js';
import { networkSandboxRoutes } from './sandbox/routes.js';
import { createServices, readyVault } from './services.js';
import { resultsBacklog } from './three-ds/results.js';
import { threeDsRoutes, threeDsSandboxRoutes } from './three-ds/routes.js';
import { challengeRoutes } from './three-ds/routes-challenge.js';
import { liveTokensByWallet } from './tokens/live.js';
import { tokenRoutes } from './tokens/routes.js';
import { tokensSandboxRoutes } from './tokens/routes-sandbox.js';
import { tspCallsBacklog } from './tokens/tsp-calls.js';
import { tradeRoutes } from './trades/routes.js';

declare module 'fastify' {
  interface FastifyInstance {
    svc: Services;
    /** Compiles every request and reply schema not compiled yet (src/http/compilers.ts); `serve` calls it once ready. */
    compileSchemas(): Promise<void>;
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
  /** SQLite, a process of `serve --processes N`: the read-nonce file the processes share (src/cluster.ts). */
  readNonceFile?: string;
}

/**
 * The read replica (DATABASE_REPLICA_URL, PostgreSQL only): its own pool, probed once before the
 * service answers and every second after, closed with the app (before the primary).
 */
async function openReplica(config: Config, database: Database, app: FastifyInstance): Promise<ReplicaRouter> {
  if (database.dialect !== 'postgres') {
    throw new ConfigError('DATABASE_REPLICA_URL is for PostgreSQL only: DATABASE_URL is SQLite (file:), which has no replicas');
  }
  const replica = new ReplicaRouter(
    database,
    openDatabase(config.databaseReplicaUrl as string, {
      statementTimeoutMs: config.pgStatementTimeoutMs,
      pgPoolSize: config.pgPool.size,
      ...(config.pgPool.urgentSize === undefined ? {} : { pgUrgentPoolSize: config.pgPool.urgentSize }),
      pgPoolWaitMs: config.pgPool.waitMs,
      pgPrepared: config.pgPool.prepared,
    }),
    {
      maxLagMs: config.replicaMaxLagMs,
      onChange: (status, err) => {
        if (status.status === 'ready') app.log.info({ replica: status }, 'read replica in use');
        else app.log.warn({ replica: status, err }, 'read replica not in use: reads go to the primary');
      },
    },
  );
  app.addHook('onClose', () => replica.close());
  await replica.probe();
  replica.start();
  return replica;
}

export const SERVICE_VERSION = (createRequire(import.meta.url)('../package.json') as { version: string }).version;

/**
 * The one factory of the HTTP service: production and tests build it the same way. It reads as the
 * list of what the service is made of; each part is a plugin in src/http or a domain's routes.
 */
export async function buildApp(config: Config, opts: BuildOptions = {}): Promise<FastifyInstance> {
  const ownsDatabase = !opts.database;
  const database =
    opts.database ??
    openDatabase(config.databaseUrl, {
      statementTimeoutMs: config.pgStatementTimeoutMs,
      pgPoolSize: config.pgPool.size,
      ...(config.pgPool.urgentSize === undefined ? {} : { pgUrgentPoolSize: config.pgPool.urgentSize }),
      pgPoolWaitMs: config.pgPool.waitMs,
      pgPrepared: config.pgPool.prepared,
    });
  // (SQLite has no statement bound, and an in-memory database exists only on its one connection.)
  if (opts.database || database.dialect === 'sqlite') {
    await migrateToLatest(database);
  } else if (!(await isCurrent(database))) {
    // Migrations may take longer than a request's statement may: they run on a connection of their
    // own, without the bound (the usual start, with nothing to apply, costs the one read above).
    const unbounded = openDatabase(config.databaseUrl);
    try {
      await migrateToLatest(unbounded);
    } finally {
      await unbounded.close();
    }
  }

  const compilers = lazySchemaCompilers();
  const app = Fastify(
    serverOptions(config, { logger: opts.logger, logStream: opts.logStream, schemaController: { compilersFactory: compilers.factories } }),
  ).withTypeProvider<TypeBoxTypeProvider>();
  app.decorate('compileSchemas', compilers.compileAll);
  // onClose hooks run last-registered first: the database closes after everything below has stopped.
  app.addHook('onClose', async () => {
    if (ownsDatabase) await database.close();
  });

  const clock = opts.clock ?? Date.now;
  const replica = config.databaseReplicaUrl ? await openReplica(config, database, app) : null;
  const svc = createServices(config, database, app.log, clock, replica);
  await readyVault(svc);
  // PostgreSQL: the coming months' partitions of `trades` (src/db/partitions.ts). A record whose
  // month has none yet is stored in the default partition, so this failing stops nothing.
  await ensureTradePartitions(database, clock()).catch((err) => app.log.warn({ err }, 'creating partitions of trades failed'));
  // One line per private file or directory that others may read (src/db/files.ts).
  const sqliteFile = config.databaseUrl.startsWith('file:') ? config.databaseUrl.slice('file:'.length) : null;
  for (const line of widePermissions(config.dataDir, sqliteFile === ':memory:' ? null : sqliteFile)) app.log.warn(line);
  // Where reads spend their randomStr when a timestamp is required (docs/idempotency.md, "Reads").
  svc.readNonces = await openReadNonces({
    requireTimestamp: config.requireTimestamp,
    database,
    sharedFile: opts.readNonceFile,
    now: clock(),
  });
  app.addHook('onClose', async () => svc.readNonces?.close());
  app.decorate('svc', svc);

  // Only JSON bodies: anything else (text/plain included) is a 1002, not a guess.
  registerJsonBody(app);
  app.addHook('onRequest', async (req, reply) => {
    reply.header('x-trace-id', req.id);
  });
  registerErrorHandling(app, { production: config.env === 'production' });
  await app.register(inFlightPlugin);
  await app.register(openApiPlugin, { version: SERVICE_VERSION, publicUrl: config.publicUrl });
  await app.register(authPlugin, {
    merchants: svc.merchants,
    clock,
    // A test's clock drives the limiter's timers too; otherwise they run on the monotonic clock.
    limiter: new RateLimiter(database, clock, opts.clock),
    rateLimit: config.rateLimit,
    requireTimestamp: config.requireTimestamp,
    explainSignature: config.env === 'sandbox',
  });
  await app.register(healthPlugin, { database });
  await app.register(metricsPlugin, {
    svc,
    token: config.metricsToken,
    gauges: { openExceptions, resultsBacklog, liveTokensByWallet, tspCallsBacklog },
  });

  await app.register(holderRoutes, { svc });
  await app.register(cardRoutes, { svc });
  await app.register(tradeRoutes, { svc });
  await app.register(fundingRoutes, { svc });
  await app.register(cardStatusRoutes, { svc });
  await app.register(controlsRoutes, { svc });
  await app.register(merchantRoutes, { svc });
  await app.register(kycRoutes, { svc });
  await app.register(disputeRoutes, { svc });
  await app.register(threeDsRoutes, { svc });
  await app.register(tokenRoutes, { svc });
  await app.register(pageRoutes, { svc });
  await app.register(challengeRoutes, { svc });
  // The operators' console answers nothing unless it is turned on (CARDPROGRAM_CONSOLE).
  if (config.console) await app.register(consoleRoutes, { svc });
  if (config.env === 'sandbox') {
    await app.register(holderSandboxRoutes, { svc });
    await app.register(networkSandboxRoutes, { svc });
    await app.register(kycSandboxRoutes, { svc });
    await app.register(disputeSandboxRoutes, { svc });
    await app.register(threeDsSandboxRoutes, { svc });
    await app.register(tokensSandboxRoutes, { svc });
  }

  // Every periodic job, from the one registry (src/jobs/periodic.ts): the reaper's timers, the worker's
  // polls and the timers beside the worker (the 3-D Secure passes; `cardprogram worker` runs those too).
  const jobs = periodicJobs(svc);
  await app.register(reaperPlugin, { jobs: jobs.reaper, clock });
  await app.register(workerPlugin, { svc, jobs: jobs.worker, withWorker: jobs.withWorker });
  return app;
}
