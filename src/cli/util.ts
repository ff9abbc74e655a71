import { InvalidArgumentError } from 'commander';
import { pino } from 'pino';
import { loadConfig } from '../config.js';
import type { Services } from '../context.js';
import { type Database, openDatabase } from '../db/index.js';
import { migrateToLatest } from '../db/migrate.js';
import { createServices } from '../services.js';

/** Opens the configured database (migrated), runs fn, closes it. */
export async function withServices<T>(fn: (svc: Services) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const database = openDatabase(config.databaseUrl);
  try {
    await migrateToLatest(database);
    const svc = createServices(config, database, pino({ level: 'warn' }, pino.destination(2)));
    await svc.vault.ensureKeys(database.db);
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
