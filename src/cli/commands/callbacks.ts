import { type Command, Option } from 'commander';
import { pino } from 'pino';
import { listCallbacks, retryCallbacks, startWorker } from '../../callbacks/manage.js';
import { loadConfig } from '../../config.js';
import { openDatabase } from '../../db/index.js';
import { migrateToLatest } from '../../db/migrate.js';
import { runOnTimers } from '../../http/reaper.js';
import { periodicJobs } from '../../jobs/periodic.js';
import { runVerb } from '../../runner.js';
import { createServices, readyVault } from '../../services.js';
import { audited, cliOperator, intArg, print, withServices } from '../util.js';

/** `worker` and `callbacks list|retry`. */
export function callbackCommands(program: Command): void {
  program
    .command('worker')
    .description(
      'deliver callbacks, end 3-D Secure challenges past their time and send their results to the DS (and, in the sandbox, run the automatic KYC reviewer) without serving HTTP',
    )
    .action(async () => {
      const config = loadConfig();
      const database = openDatabase(config.databaseUrl);
      await migrateToLatest(database);
      const svc = createServices(config, database, pino({ level: config.logLevel }));
      for (const warning of config.warnings ?? []) svc.log.warn(warning);
      await readyVault(svc);
      const jobs = periodicJobs(svc);
      const worker = startWorker(svc, { jobs: jobs.worker });
      // The jobs beside the worker too (the 3-D Secure passes): with CARDPROGRAM_WORKER=off the service runs none.
      const withWorker = runOnTimers(jobs.withWorker, { clock: svc.clock, log: svc.log });
      svc.log.info({ owner: worker.owner }, 'callback worker running');
      // The worker's own timers do not hold the process open (they must not keep a closing service
      // alive); this command exists to run it, so it holds the process until told to stop.
      const keepAlive = setInterval(() => undefined, 60_000);
      await new Promise<void>((resolve) => {
        for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => resolve());
      });
      clearInterval(keepAlive);
      await Promise.all([worker.stop(), withWorker.stop()]);
      await database.close();
    });

  const callbacks = program.command('callbacks').description('callback deliveries');
  callbacks
    .command('list')
    .description('recent callback events and their delivery state (--json: with each payload, secrets and codes redacted)')
    .addOption(new Option('--status <status>', 'only these').choices(['pending', 'delivered', 'failed']))
    .option('--merchant <appId>', 'only this merchant’s')
    .option('--limit <n>', 'how many (default 50)', intArg)
    .option('--json', 'print JSON')
    .action(async (o: { status?: 'pending' | 'delivered' | 'failed'; merchant?: string; limit?: number; json?: boolean }) => {
      const rows = await withServices((svc) =>
        svc.database.read((db) => listCallbacks(db, { status: o.status, merchantId: o.merchant, limit: o.limit }, svc.box)),
      );
      print(!!o.json, rows, () =>
        rows.length
          ? rows
              .map(
                (r) =>
                  `${r.eventId}  ${r.status.padEnd(9)} ${r.type.padEnd(12)} attempts:${r.attempts}  ${r.url}${r.lastError ? `  last error: ${r.lastError}` : ''}`,
              )
              .join('\n')
          : 'no callback events',
      );
    });
  callbacks
    .command('retry [eventIds...]')
    .description('send events again now (same eventId), or every failed one with --failed')
    .option('--failed', 'every failed event')
    .option('--merchant <appId>', 'only this merchant’s')
    .option('--json', 'print JSON')
    .action(async (eventIds: string[], o: { failed?: boolean; merchant?: string; json?: boolean }) => {
      const input = { eventIds, ...(o.failed ? { allFailed: true } : {}), ...(o.merchant ? { merchantId: o.merchant } : {}) };
      const queued = await withServices((svc) =>
        runVerb(svc, retryCallbacks, {
          input,
          actor: cliOperator(),
          audit: audited('callbacks.retry', eventIds.length ? eventIds.join(',') : 'failed'),
        }),
      );
      print(!!o.json, { queued }, () => `${queued} event(s) queued for delivery`);
    });
}
