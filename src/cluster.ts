import cluster from 'node:cluster';
import { pino } from 'pino';
import type { Config } from './config.js';
import { ensureSandboxAdmin, sandboxAdminFile } from './console/sandbox.js';
import { openDatabase } from './db/index.js';
import { migrateToLatest } from './db/migrate.js';
import { exampleCurl } from './docs/example-curl.js';
import { createNonceFile, readNonceFile } from './idempotency/read-nonces-file.js';
import { ensureDemoMerchant } from './merchants/demo.js';
import { serve } from './server.js';
import { createServices, readyVault } from './services.js';

/**
 * `cardprogram serve --processes N`: N copies of the service sharing the port (node:cluster), for
 * the cores of one machine. The primary prepares the database once (migrations, keys, the sandbox
 * demo merchant) so the copies do not race to do it, then forks them and restarts one that dies.
 * The copies share nothing in memory: as several instances on one database, they agree through it
 * (idempotency keys, rate-limit windows, callback leases). On SQLite, where a timestamp is
 * required, reads' nonces are not in the database but in a file of their own that the copies share
 * (src/idempotency/read-nonces-file.ts): the primary makes it anew, empty, before it starts them.
 */
export async function serveCluster(config: Config, processes: number): Promise<void> {
  const sqliteFile = config.databaseUrl.startsWith('file:') ? config.databaseUrl.slice('file:'.length) : null;
  const nonceFile = config.requireTimestamp && sqliteFile && sqliteFile !== ':memory:' ? readNonceFile(sqliteFile) : undefined;
  if (!cluster.isPrimary) {
    // The primary has logged the configuration's warnings once.
    await serve({ ...config, demoMerchant: false, warnings: [] }, nonceFile ? { readNonceFile: nonceFile } : {});
    return;
  }
  const log = pino({ level: config.logLevel });
  for (const warning of config.warnings ?? []) log.warn(warning);
  const database = openDatabase(config.databaseUrl);
  try {
    await migrateToLatest(database);
    const svc = createServices(config, database, log);
    await readyVault(svc);
    const demo = await ensureDemoMerchant(svc);
    if (demo)
      process.stdout.write(
        `Demo merchant created: appId ${demo.appId} (credentials in ${config.dataDir}/demo-merchant.json)\n  ${exampleCurl(demo)}\n`,
      );
    const admin = await ensureSandboxAdmin(svc);
    if (admin)
      process.stdout.write(`Console sandbox admin ${admin.email} created (password and authenticator key in ${sandboxAdminFile(svc)})\n`);
  } finally {
    await database.close();
  }
  // Its watermark is now: a request signed before this start is refused (1007), whatever the file held.
  if (nonceFile) createNonceFile(nonceFile, Date.now());
  let stopping = false;
  const fork = () => cluster.fork();
  for (let i = 0; i < processes; i++) fork();
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return;
    log.error({ pid: worker.process.pid, code, signal }, 'a service process died; starting another');
    setTimeout(fork, 1000).unref();
  });
  log.info({ processes, port: config.port }, 'cardprogram cluster started');
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      stopping = true;
      log.info({ signal }, 'stopping every process');
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM');
      const check = setInterval(() => {
        if (Object.keys(cluster.workers ?? {}).length === 0) {
          clearInterval(check);
          process.exit(0);
        }
      }, 50);
    });
  }
}
