import { Command } from 'commander';
import { serveCluster } from '../cluster.js';
import { ConfigError, loadConfig } from '../config.js';
import { unknownVariables } from '../config-vars.js';
import { MasterKeyMismatch } from '../crypto/secretbox.js';
import { databaseFault } from '../db/faults.js';
import { openDatabase } from '../db/index.js';
import { migrateToLatest } from '../db/migrate.js';
import { DomainError } from '../errors.js';
import { serve } from '../server.js';
import { auditCommands } from './commands/audit.js';
import { callbackCommands } from './commands/callbacks.js';
import { disputeCommands } from './commands/disputes.js';
import { keyCommands } from './commands/keys.js';
import { ledgerCommands } from './commands/ledger.js';
import { merchantCommands } from './commands/merchants.js';
import { networkCommands } from './commands/network.js';
import { operatorCommands } from './commands/operators.js';
import { reviewCommands } from './commands/review.js';
import { threeDsCommands } from './commands/threeds.js';
import { tokenCommands } from './commands/tokens.js';
import { toolCommands } from './commands/tools.js';
import { intArg, print } from './util.js';

/** The `cardprogram` command: each group of subcommands lives in ./commands, calling the same verbs as the API. */
export function buildCli(): Command {
  const program = new Command('cardprogram')
    .description('cardprogram: a self-hostable card-program service. Configuration is read from the environment (see README).')
    .showHelpAfterError()
    // A CARDPROGRAM_* variable that is read nowhere (misspelled?) is said on stderr, with the
    // nearest name; the service and the worker log it instead, at start.
    .hook('preAction', (_program, action) => {
      if (action.name() === 'serve' || action.name() === 'worker') return;
      for (const warning of unknownVariables(process.env)) process.stderr.write(`cardprogram: warning: ${warning}\n`);
    });

  program
    .command('serve', { isDefault: true })
    .description('run the HTTP service')
    .option('--processes <n>', 'run N copies sharing the port, one per core (node:cluster)', intArg, 1)
    .action(async (o: { processes: number }) => {
      if (o.processes < 1 || o.processes > 64) throw new ConfigError('--processes must be 1 to 64');
      const config = loadConfig();
      if (o.processes === 1) await serve(config);
      else await serveCluster(config, o.processes);
    });

  program
    .command('migrate')
    .description('apply pending database migrations')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }) => {
      const config = loadConfig();
      const database = openDatabase(config.databaseUrl);
      try {
        const applied = await migrateToLatest(database);
        print(!!o.json, { applied }, () => (applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date'));
      } finally {
        await database.close();
      }
    });

  merchantCommands(program);
  reviewCommands(program);
  callbackCommands(program);
  toolCommands(program);
  keyCommands(program);
  ledgerCommands(program);
  disputeCommands(program);
  tokenCommands(program);
  auditCommands(program);
  operatorCommands(program);
  networkCommands(program);
  threeDsCommands(program);
  return program;
}

function describe(err: unknown): string {
  if (err instanceof DomainError || err instanceof ConfigError || err instanceof MasterKeyMismatch) return err.message;
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number };
  if (e?.code === 'ENOENT' && e.path) return `no such file: ${e.path}`;
  if (e?.code === 'EACCES' && e.path) return `permission denied: ${e.path}`;
  if (e?.code === 'ECONNREFUSED')
    return `cannot reach the database at ${e.address ?? ''}:${e.port ?? ''} (is PostgreSQL running? check DATABASE_URL)`;
  if (e?.code === 'EADDRINUSE') return `port ${e.port ?? ''} is already in use (set PORT)`;
  const fault = databaseFault(err);
  if (fault) return `database unavailable: ${fault.reason}`;
  return err instanceof Error ? err.message : String(err);
}

export async function main(argv: string[]): Promise<void> {
  try {
    await buildCli().parseAsync(argv);
  } catch (err) {
    // An operator gets one line saying what is wrong, never a stack trace (DEBUG=1 shows it).
    const json = argv.includes('--json');
    const code =
      err instanceof DomainError ? err.code : err instanceof ConfigError || err instanceof MasterKeyMismatch ? 'config' : 'error';
    const msg = describe(err);
    if (json) process.stderr.write(`${JSON.stringify({ code, msg })}\n`);
    else process.stderr.write(`cardprogram: ${msg}\n`);
    if (process.env.DEBUG && err instanceof Error) process.stderr.write(`${err.stack}\n`);
    process.exitCode = 1;
  }
}
