import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import type { DB } from './schema.js';

export type Dialect = 'sqlite' | 'postgres';

export interface Database {
  db: Kysely<DB>;
  dialect: Dialect;
  /**
   * Runs fn in one write transaction and commits durably before returning. `durable: false` is for
   * bookkeeping whose loss in a crash is harmless (callback leases and attempt records: the event is
   * simply sent again): its commit does not wait for the disk, and the next durable commit makes it
   * durable too.
   */
  withTx<T>(fn: (tx: Kysely<DB>) => Promise<T>, opts?: { durable?: boolean }): Promise<T>;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** PostgreSQL schema to use (tests isolate themselves in one schema each). */
  pgSchema?: string;
  pgPoolSize?: number;
}

// bigint (int8) columns hold millisecond timestamps and minor units, all far below 2^53.
const INT8_OID = 20;
const pgTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

export function openDatabase(url: string, opts: OpenOptions = {}): Database {
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) return openPostgres(url, opts);
  if (url.startsWith('file:')) return openSqlite(url.slice('file:'.length));
  throw new Error('DATABASE_URL must start with file: or postgres://');
}

function openSqlite(file: string): Database {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const raw = new SQLite(file);
  raw.pragma('journal_mode = WAL');
  // FULL, not NORMAL: in WAL mode NORMAL may lose the last commits on power loss, and a write is
  // acknowledged to the merchant only once it is durable.
  raw.pragma('synchronous = FULL');
  raw.pragma('foreign_keys = ON');
  raw.pragma('busy_timeout = 5000');
  // Kysely's driver prepares every query anew; keeping prepared statements by their SQL text saves
  // that on every request (queries are few and parameterised, so the cache stays small). Reusing
  // a statement is safe: the driver runs each one to completion synchronously.
  const statements = new Map<string, SQLite.Statement>();
  const database = {
    close: () => raw.close(),
    prepare: (text: string) => {
      let statement = statements.get(text);
      if (!statement) {
        if (statements.size >= 1000) statements.clear();
        statement = raw.prepare(text);
        statements.set(text, statement);
      }
      return statement;
    },
  };
  const db = new Kysely<DB>({ dialect: new SqliteDialect({ database }) });
  return {
    db,
    dialect: 'sqlite',
    // BEGIN IMMEDIATE takes the write lock up front, so a second process (the CLI) waits on
    // busy_timeout instead of failing on a lock upgrade half-way through.
    withTx: (fn, opts) =>
      db.connection().execute(async (conn) => {
        const relaxed = opts?.durable === false;
        // The connection is ours for this whole callback, so the setting covers this transaction only.
        if (relaxed) await sql`pragma synchronous = NORMAL`.execute(conn);
        try {
          await sql`begin immediate`.execute(conn);
          try {
            const result = await fn(conn);
            await sql`commit`.execute(conn);
            return result;
          } catch (err) {
            await sql`rollback`.execute(conn).catch(() => undefined);
            throw err;
          }
        } finally {
          if (relaxed) await sql`pragma synchronous = FULL`.execute(conn);
        }
      }),
    close: () => db.destroy(),
  };
}

function openPostgres(url: string, opts: OpenOptions): Database {
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.pgPoolSize ?? 10,
    types: pgTypes,
    connectionTimeoutMillis: 5000,
    ...(opts.pgSchema ? { options: `-c search_path=${opts.pgSchema}` } : {}),
  });
  // An idle client losing its connection (a restart of PostgreSQL) must not crash the process.
  pool.on('error', () => undefined);
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  return {
    db,
    dialect: 'postgres',
    withTx: (fn, opts) =>
      db.transaction().execute(async (tx) => {
        if (opts?.durable === false) await sql`set local synchronous_commit = off`.execute(tx);
        return fn(tx);
      }),
    close: () => db.destroy(),
  };
}

/** True for a unique-constraint violation on either dialect. */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
