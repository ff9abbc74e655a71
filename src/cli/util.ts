import { existsSync } from 'node:fs';
import { hostname, userInfo } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError } from 'commander';
import { pino } from 'pino';
import type { AuditSpec } from '../audit/trail.js';
import { ConfigError, databaseUrlFrom, dataDirFrom, loadConfig } from '../config.js';
import type { Env } from '../config-vars.js';
import type { Actor, Services } from '../context.js';
import { type Database, openDatabase } from '../db/index.js';
import { migrateToLatest } from '../db/migrate.js';
import { createServices, readyVault } from '../services.js';

/**
 * For a command that works on existing data: run from another directory, the CLI would otherwise
 * make a new ./data there (a master key and an empty database) and then say the merchant or the
 * cardholder does not exist. It names the directory it looked in instead, and creates nothing.
 */
export function requireExistingData(env: Env = process.env): void {
  const dataDir = dataDirFrom(env);
  const url = databaseUrlFrom(env, dataDir);
  const hint = 'run it in the directory the service runs in, or set CARDPROGRAM_DATA_DIR (and DATABASE_URL) as the service has them';
  if (url.startsWith('file:')) {
    const file = url.slice('file:'.length);
    if (file !== ':memory:' && !existsSync(file)) {
      throw new ConfigError(`no cardprogram database at ${file} (data directory ${dataDir}): ${hint}`);
    }
  }
  const sandbox = (env.CARDPROGRAM_ENV || 'sandbox') === 'sandbox';
  if (sandbox && !env.CARDPROGRAM_MASTER_KEY && !existsSync(join(dataDir, 'master.key'))) {
    throw new ConfigError(`no master key in the data directory ${dataDir} (master.key): ${hint}`);
  }
}

/**
 * Opens the configured database (migrated), runs fn, closes it. Only a command that may start from
 * nothing (`merchant create`, `demo`) passes create: every other one needs the data to exist.
 */
/** Who runs the CLI: the operating-system user. */
export function operatorName(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER ?? 'unknown';
  }
}

/**
 * An operator's change from the command line, for the audit trail (src/audit/trail.ts): who (the
 * operating-system user), from where (this machine), what, to what, and the state before it.
 */
export function audited<After = unknown>(
  action: string,
  target: AuditSpec<After>['target'],
  before?: AuditSpec['before'],
): AuditSpec<After> & { by: Actor } {
  return { by: cliOperator(), action, target, ...(before ? { before } : {}) };
}

/** The operator at this command line: the operating-system user, on this machine. */
export function cliOperator(): Actor {
  return { kind: 'operator', via: 'cli', who: operatorName(), origin: hostname() };
}

export async function withServices<T>(fn: (svc: Services) => Promise<T>, opts: { create?: boolean } = {}): Promise<T> {
  if (!opts.create) requireExistingData();
  const config = loadConfig();
  const database = openDatabase(config.databaseUrl);
  try {
    await migrateToLatest(database);
    const svc = createServices(config, database, pino({ level: 'warn' }, pino.destination(2)));
    await readyVault(svc);
    return await fn(svc);
  } finally {
    await database.close();
  }
}

/**
 * The database alone, as it is: no migration, no keys created. For commands that only read, such as
 * checking a restored copy.
 */
export async function withDatabase<T>(fn: (database: Database) => Promise<T>): Promise<T> {
  requireExistingData();
  const database = openDatabase(loadConfig().databaseUrl);
  try {
    return await fn(database);
  } finally {
    await database.close();
  }
}

export function print(json: boolean, value: unknown, human: () => string): void {
  process.stdout.write(`${json ? JSON.stringify(value, null, 2) : human()}\n`);
}

export const onOff = (v: string): boolean => {
  if (v === 'on' || v === 'true') return true;
  if (v === 'off' || v === 'false') return false;
  throw new InvalidArgumentError('expected on or off');
};

/** A merchant's rate limit: requests a second, or "default" for the service's. */
export const rateLimitArg = (v: string): number | 'default' => (v === 'default' ? 'default' : intArg(v));

export function intArg(v: string): number {
  if (!/^\d+$/.test(v)) throw new InvalidArgumentError('expected a whole number');
  return Number(v);
}

/** A calendar day argument, YYYY-MM-DD. */
export const dateArg = (v: string): string => {
  if (!/^\d{4}-\d\d-\d\d$/.test(v) || Number.isNaN(Date.parse(`${v}T00:00:00Z`))) throw new InvalidArgumentError('expected YYYY-MM-DD');
  return v;
};
