import { randomInt } from 'node:crypto';
import { accessSync, constants, existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import { connectionLost } from './faults.js';
import { createPrivateFile } from './files.js';
import { discardingDeadClients, failedBegin, replanned } from './pg-prepared.js';
import type { DB } from './schema.js';
import { GroupCommitter, ReadBatcher } from './sqlite-batches.js';
import { Checkpointer } from './sqlite-checkpointer.js';
import { WalSync } from './sqlite-wal-sync.js';

export type Dialect = 'sqlite' | 'postgres';

export interface Database {
  db: Kysely<DB>;
  dialect: Dialect;
  /**
   * Runs fn in one write transaction and commits durably before returning. `durable: false` is for
   * bookkeeping whose loss in a crash is harmless (callback leases and attempt records: the event is
   * simply sent again): on PostgreSQL its commit does not wait for the disk. On SQLite every commit
   * is durable, and concurrent transactions share one commit (group commit, below).
   */
  withTx<T>(fn: (tx: Kysely<DB>) => Promise<T>, opts?: { durable?: boolean }): Promise<T>;
  /**
   * One durable write statement. On SQLite it joins the group commit like any transaction; on
   * PostgreSQL it runs on its own (autocommit), sparing the BEGIN and COMMIT round trips.
   */
  write<T>(fn: (db: Kysely<DB>) => Promise<T>): Promise<T>;
  /**
   * Reads only (fn writes nothing), on the primary. On SQLite the reads of requests that arrive
   * together run one after the other in one read transaction (ReadBatcher, src/db/sqlite-batches.ts); on PostgreSQL
   * fn runs on `db`, each statement on a pooled connection. SQLite answers a read once the commits
   * it could see are on disk (a read never shows what a power loss could take back); `needsDisk`
   * says of what was read whether it needs that wait: false answers at once (a message's card,
   * looked at before its own transaction decides under the card's lock; not its stored answer,
   * which is sent again as it is). PostgreSQL shows nothing before it is durable.
   */
  read<T>(fn: (db: Kysely<DB>) => Promise<T>, opts?: { needsDisk?: (value: T) => boolean }): Promise<T>;
  /**
   * Resolves once every write committed so far is on disk (SQLite: the log synced; rejects after a
   * failed sync); at once on PostgreSQL. For an answer resting on a read answered without the wait.
   * The same wait as the function `afterDurable(db)`, for a caller holding the Database.
   */
  afterDurable(): Promise<void>;
  close(): Promise<void>;
  /** Told how many transactions each SQLite group commit held (the service's metrics). */
  observer?: { groupCommit(size: number): void };
  /**
   * Told of every statement sent to the database (its SQL and parameters), when set: what the
   * round-trip budget of each operation is counted with (docs/architecture.md,
   * test/round-trips.test.ts), and what the partition tests explain (test/trades.partitions.test.ts).
   */
  onStatement?: ((sql: string, parameters: readonly unknown[]) => void) | undefined;
  /** SQLite in WAL mode: the sync of its log (fault injection in tests: WalSync.sync). */
  walSync?: WalSync;
  /** PostgreSQL: the pool's connections now: open, idle, and callers waiting for one. */
  pool?: () => { total: number; idle: number; waiting: number };
  /**
   * PostgreSQL: a few connections of their own (CARDPROGRAM_PG_URGENT_POOL_SIZE, 4; opened on first
   * use) for short statements that must not queue behind the pool's transactions: an authorization's
   * claim and rules' reads before its merchant's endpoint is asked, within the endpoint's deadline
   * (src/sandbox/authorize-with-endpoint.ts, src/card-network/authorize.ts). Absent on SQLite, or when set to 0: use `db`.
   */
  urgent?: () => Kysely<DB>;
}

export interface OpenOptions {
  /** PostgreSQL schema to use (tests isolate themselves in one schema each). */
  pgSchema?: string;
  pgPoolSize?: number;
  /** PostgreSQL: connections of the urgent lane (Database.urgent); 0: none. Default 4. */
  pgUrgentPoolSize?: number;
  /** PostgreSQL: the statements the code marks (src/db/prepared.ts) prepared on each connection (named); default true. */
  pgPrepared?: boolean;
  /** PostgreSQL: how long a caller may wait for a pooled connection (a new one, or a free one), ms; then 503. Default 5000. */
  pgPoolWaitMs?: number;
  /**
   * PostgreSQL: how long one statement may take (ms), on the server (statement_timeout) and on the
   * client (a server that stopped answering, a network black hole): past it the request is a 503.
   * 0 or absent: no bound (the operator's commands: migrations, `ledger check`).
   */
  statementTimeoutMs?: number;
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
  if (file !== ':memory:') {
    createPrivateFile(file);
    // SQLite's own error here ("unable to open database file") names neither the file nor why.
    for (const path of [dirname(file), file]) {
      try {
        if (existsSync(path)) accessSync(path, constants.R_OK | constants.W_OK);
      } catch (err) {
        const why = (err as NodeJS.ErrnoException).code === 'EROFS' ? 'is on a read-only file system' : 'is not writable';
        throw new Error(`the SQLite database ${file} ${why}: the service must write the file and its directory (DATABASE_URL)`);
      }
    }
  }
  const raw = new SQLite(file);
  const wal = raw.pragma('journal_mode = WAL', { simple: true }) === 'wal' && file !== '' ? new WalSync(`${file}-wal`) : null;
  // In WAL mode, NORMAL: a COMMIT does not wait for the disk on the main thread; the log is synced on
  // libuv's thread pool and no caller is answered before (WalSync, docs/architecture.md, Durability
  // on SQLite). Without a log (an in-memory database, a file system refusing WAL): FULL, each
  // COMMIT synced by SQLite itself.
  raw.pragma(wal ? 'synchronous = NORMAL' : 'synchronous = FULL');
  // Checkpoints in a worker thread of their own, not inside a COMMIT on the main thread.
  const checkpointer = wal ? new Checkpointer(file) : null;
  if (wal && checkpointer) {
    raw.pragma('wal_autocheckpoint = 0');
    wal.onLogSize = (bytes) => checkpointer.logSize(bytes);
  }
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
        statement = wal ? counted(raw.prepare(text), wal) : raw.prepare(text);
        statements.set(text, statement);
      }
      return statement;
    },
  };
  // The hooks below are read when called: set on the Database object, after it is made.
  const db = new Kysely<DB>({
    dialect: new SqliteDialect({ database }),
    log: (e) => sqlite.onStatement?.(e.query.sql, e.query.parameters),
  });
  const durable = wal ? () => wal.durable() : undefined;
  const committer = new GroupCommitter(db, durable);
  const reader = new ReadBatcher(db, durable, wal ? () => wal.failed : undefined);
  if (durable) durableOf.set(db, durable);
  const sqlite: Database = {
    db,
    dialect: 'sqlite',
    withTx: (fn) => committer.run(fn),
    write: (fn) => committer.run(fn),
    read: (fn, opts) => reader.run(fn, opts?.needsDisk),
    afterDurable: () => afterDurable(db),
    close: async () => {
      await checkpointer?.close();
      await db.destroy();
      await wal?.close();
    },
    ...(wal ? { walSync: wal } : {}),
  };
  committer.onBatch = (size) => sqlite.observer?.groupCommit(size);
  return sqlite;
}

/**
 * A statement of the SQLite connection whose runs are counted as writes (everything but a reader:
 * INSERT, UPDATE, DELETE, BEGIN, COMMIT), so that WalSync knows what it owes the disk.
 */
function counted(statement: SQLite.Statement, wal: WalSync): SQLite.Statement {
  if (statement.reader) return statement;
  // Kysely's driver reads `reader` and calls `run` on a statement that is not a reader.
  const run = statement.run.bind(statement);
  return {
    reader: false,
    run: (...params: unknown[]) => {
      wal.wrote();
      return run(...params);
    },
  } as unknown as SQLite.Statement;
}

/** The durability waits of SQLite connections, by their Kysely (afterDurable). */
const durableOf = new WeakMap<Kysely<DB>, () => Promise<void>>();

/**
 * Resolves once every write committed so far on this connection is on disk: for a read made outside
 * `withTx` and `read` (those wait by themselves) whose result is answered without a commit of its
 * own — a stored answer sent again. At once on PostgreSQL, where nothing is seen before it is durable.
 */
export function afterDurable(db: Kysely<DB>): Promise<void> {
  return durableOf.get(db)?.() ?? Promise.resolve();
}

function openPostgres(url: string, opts: OpenOptions): Database {
  const poolSize = opts.pgPoolSize ?? 10;
  const statementTimeout = opts.statementTimeoutMs ?? 0;
  const newPool = (max: number) => {
    const pool = new pg.Pool({
      connectionString: url,
      max,
      types: pgTypes,
      // Waiting for a connection (a new one, or a free one of the pool) ends after the bound: 503.
      connectionTimeoutMillis: opts.pgPoolWaitMs ?? 5000,
      // A statement ends after the bound: the server cancels it (57014), and the client stops
      // waiting a moment later if the server does not answer at all (a black hole), then drops the
      // connection. Either way the request is answered 503 within the bound, not never.
      ...(statementTimeout > 0 ? { statement_timeout: statementTimeout, query_timeout: statementTimeout + 1000 } : {}),
      // A peer that vanished without a reset (a network black hole) is found by TCP keepalive.
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      // A transaction's BEGIN is written with its first statement (src/db/pg-prepared.ts): pg sends a
      // query without waiting for the answer to the one before only in its pipeline mode. Every
      // other query is still awaited before the next (Kysely's connection runs one at a time).
      pipeline: true,
      ...(opts.pgSchema ? { options: `-c search_path=${opts.pgSchema}` } : {}),
    });
    // A client losing its connection (PostgreSQL restarting, the network cut) must not crash the
    // process. The pool reports idle clients' errors on itself; a client in use (a transaction, the
    // worker's pass) emits on its own 'error' with no listener of the pool's, which would throw. Its
    // queries fail (the request is answered 503, src/db/faults.ts) and the pool drops it on release.
    pool.on('error', () => undefined);
    pool.on('connect', (client) => client.on('error', () => undefined));
    return pool;
  };
  const kysely = (p: pg.Pool) =>
    new Kysely<DB>({
      dialect: new PostgresDialect({ pool: discardingDeadClients(p, opts.pgPrepared ?? true) }),
      log: (e) => postgres.onStatement?.(e.query.sql, e.query.parameters),
    });
  const pool = newPool(poolSize);
  const db = kysely(pool);
  const urgentSize = opts.pgUrgentPoolSize ?? 4;
  let urgent: Kysely<DB> | undefined;
  const postgres: Database = {
    db,
    dialect: 'postgres',
    withTx: async (fn, txOpts) => {
      // One try more than the pool holds connections: each dead idle one costs a try, and is dropped.
      let conflicts = 0;
      for (let attempt = 1; ; attempt++) {
        // Kysely rolls back after fn fails and lets a failed ROLLBACK's error replace fn's. On a
        // connection that died under fn (PostgreSQL restarting), the ROLLBACK fails too, and its
        // "Connection terminated" would hide the cause (57P01, a constraint, a domain error). fn's
        // own error is what happened: nothing was committed either way.
        let stage = 'connecting' as 'connecting' | 'beginning' | 'running';
        let failed = undefined as { err: unknown } | undefined;
        try {
          return await db.connection().execute(async (conn) => {
            stage = 'beginning';
            return conn.transaction().execute(async (tx) => {
              stage = 'running';
              try {
                if (txOpts?.durable === false) await sql`set local synchronous_commit = off`.execute(tx);
                return await fn(tx);
              } catch (err) {
                failed = { err };
                throw err;
              }
            });
          });
        } catch (err) {
          // A pooled connection whose server session ended while it sat idle (a restart, an
          // administrator's pg_terminate_backend, a firewall dropping idle sessions) is known as dead
          // only when it is next used: its BEGIN fails. Nothing of fn has run, so the transaction is
          // begun again on another connection. Not when no connection was had at all (refused, timed
          // out): PostgreSQL is down, and trying again at once would only add to the wait.
          // A BEGIN that timed out met a server that does not answer (a black hole), not a dead
          // connection: trying the next pooled one would wait again, once per connection.
          const timedOut = err instanceof Error && err.message.includes('Query read timeout');
          if (stage === 'beginning' && attempt <= poolSize && connectionLost(err) && !timedOut) continue;
          // A BEGIN goes with fn's first statement (src/db/pg-prepared.ts): its failure reaches fn, which
          // has run up to that statement and written nothing; fn is run again, as after a lost conflict.
          const dead = failed && failedBegin(failed.err) ? (failed.err as Error) : null;
          if (dead && attempt <= poolSize && connectionLost(dead) && !dead.message.includes('Query read timeout')) continue;
          const cause = failed ? failed.err : err;
          // A transaction that lost a deadlock (40P01) or a serialization conflict (40001) was rolled
          // back whole, and the same work run again succeeds: it is retried here, a few times after
          // a short jittered pause, before the request is ever answered 503. Locks taken in one
          // order (docs/architecture.md, Concurrency) make this rare; it is the backstop. So is a
          // record routed to the default partition just as its month's partition was attached
          // (src/db/partitions.ts): run again, it goes to the new partition.
          // And a transaction whose prepared statement met a table changed under it (a migration):
          // run again, its statements go unprepared.
          if (conflicts < MAX_CONFLICT_RETRIES && (lostConflict(cause) || missedNewPartition(cause) || replanned(cause))) {
            conflicts++;
            attempt--;
            await sleep(randomInt(1, 5 + 10 * conflicts));
            continue;
          }
          throw cause;
        }
      }
    },
    write: (fn) => fn(db),
    read: (fn) => fn(db),
    afterDurable: () => afterDurable(db),
    close: async () => {
      await db.destroy();
      await urgent?.destroy();
    },
    pool: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    ...(urgentSize > 0 ? { urgent: () => (urgent ??= kysely(newPool(urgentSize))) } : {}),
  };
  return postgres;
}

/** Tries of a transaction after the first that lost a deadlock or a serialization conflict. */
const MAX_CONFLICT_RETRIES = 5;

/** PostgreSQL chose this transaction as a deadlock's victim, or found it not serializable. */
export function lostConflict(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '40P01' || code === '40001';
}

/**
 * A row inserted into the default partition of `trades` while the partition of its month was being
 * attached: PostgreSQL checks the default's narrowed bounds and refuses it (23514 on the default
 * partition, no named constraint; a CHECK constraint's violation names its constraint).
 */
export function missedNewPartition(err: unknown): boolean {
  const e = err as { code?: unknown; table?: unknown; constraint?: unknown } | null;
  return e?.code === '23514' && e.table === 'trades_default' && !e.constraint;
}

/** True for a unique-constraint violation on either dialect. */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
