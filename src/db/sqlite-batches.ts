import { CompiledQuery, type Kysely } from 'kysely';
import type { DB } from './schema.js';

/**
 * SQLite's one connection, shared by the requests of a process: writes in group commits, reads in
 * batches, each queue running what arrived together one after the other.
 */

interface Pending {
  fn: (tx: Kysely<DB>) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
  /** A read's: whether what it read is answered only once on disk (absent: always). */
  needsDisk?: ((value: unknown) => boolean) | undefined;
}

/** The group commit's statements, compiled once (each group sends two per transaction). */
const GROUP = {
  begin: CompiledQuery.raw('begin immediate'),
  savepoint: CompiledQuery.raw('savepoint grp'),
  release: CompiledQuery.raw('release grp'),
  rollbackTo: CompiledQuery.raw('rollback to grp'),
  commit: CompiledQuery.raw('commit'),
  rollback: CompiledQuery.raw('rollback'),
};

/** Most transactions committed together. */
const MAX_GROUP = 256;
/** Transactions waiting below which a group commit waits for the last one's sync before it begins. */
const PACED_BELOW = 64;

type Outcome = { ok: true; value: unknown } | { ok: false; err: unknown };

/**
 * A queue of work for the one connection: what was asked for in one turn of the event loop runs as
 * one batch, on the connection (Kysely's lock on it held for the batch), and each caller is answered
 * with its own outcome once the batch is done.
 */
abstract class Batches {
  private readonly queue: Pending[] = [];
  private draining = false;
  /** Told each batch's size (metrics). */
  onBatch: ((size: number) => void) | undefined;

  /**
   * @param durable resolves once every write committed so far is on disk (WalSync.durable); absent
   *   when each COMMIT waits for the disk itself (synchronous = FULL).
   */
  constructor(
    private readonly db: Kysely<DB>,
    private readonly durable?: () => Promise<void>,
    /** Whether a sync failed (WalSync.failed): then no read is answered without the wait, which fails it. */
    private readonly syncFailed?: () => boolean,
  ) {}

  /** A read's outcome answered at once: read well, it says it needs no disk, and no sync has failed. */
  private static atOnce(o: Outcome, p: Pending, syncFailed: (() => boolean) | undefined): boolean {
    if (!o.ok || !p.needsDisk || syncFailed?.()) return false;
    try {
      return !p.needsDisk(o.value);
    } catch {
      return false;
    }
  }

  /** Whether a batch waits for the last one's sync before it begins (group commits; not reads). */
  protected readonly paced: boolean = false;

  run<T>(fn: (tx: Kysely<DB>) => Promise<T>, needsDisk?: (value: T) => boolean): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject, needsDisk: needsDisk as Pending['needsDisk'] });
      if (!this.draining) void this.drain();
    });
  }

  /** Runs one batch on the connection: an outcome per caller, in order (all failed if the batch failed). */
  protected abstract runBatch(conn: Kysely<DB>, batch: Pending[]): Promise<Outcome[]>;

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      while (this.queue.length > 0) {
        // Let the requests that arrived meanwhile (during the last batch) reach the queue, so they
        // join this batch; the connection is free for others until the batch begins.
        await new Promise((resolve) => setImmediate(resolve));
        // A group commit begins once the last one's commit is on disk, unless many are waiting: the
        // requests that arrive during the sync join it (fewer, larger commits: less of the log to
        // write per transaction, on the main thread) instead of each starting a small commit of its own.
        if (this.paced && this.durable && this.queue.length < PACED_BELOW) await this.durable().catch(() => undefined);
        const batch = this.queue.splice(0, MAX_GROUP);
        this.onBatch?.(batch.length);
        const outcomes = await this.db
          .connection()
          .execute((conn) => this.runBatch(conn, batch))
          .catch((err: unknown) => batch.map((): Outcome => ({ ok: false, err })));
        const answer = (o: Outcome, p: Pending): void => {
          if (o.ok) p.resolve(o.value);
          else p.reject(o.err);
        };
        // The callers are answered once what the batch wrote, and what it read, is on disk; the
        // connection goes on with the next batch meanwhile (src/db/sqlite-wal-sync.ts). A read
        // whose caller says what it read needs no disk (Database.read's needsDisk) is answered at once.
        if (this.durable) {
          const later: Array<[Outcome, Pending]> = [];
          outcomes.forEach((o, i) => {
            const p = batch[i] as Pending;
            if (Batches.atOnce(o, p, this.syncFailed)) answer(o, p);
            else later.push([o, p]);
          });
          if (later.length > 0)
            this.durable().then(
              () => {
                for (const [o, p] of later) answer(o, p);
              },
              (err: unknown) => {
                for (const [, p] of later) p.reject(err);
              },
            );
        } else {
          outcomes.forEach((o, i) => {
            answer(o, batch[i] as Pending);
          });
        }
      }
    } finally {
      this.draining = false;
    }
  }
}

/**
 * Group commit for SQLite. A durable commit waits for the disk (fsync); one commit per request
 * would cap writes at the disk's fsync rate. Instead, the transactions of requests that arrive
 * together run one after the other inside one database transaction, each in its own savepoint (a
 * failure rolls back its own writes only), and one COMMIT makes them all durable. Each caller is
 * answered only after that commit is on disk — the log synced on libuv's thread pool, not on the
 * main thread (WalSync, src/db/sqlite-wal-sync.ts), while the next group already runs — and a
 * failed commit (or a failed sync) fails every transaction of the group. Nothing changes for the
 * callers: `withTx` runs fn in a transaction and returns once its commit is durable.
 *
 * BEGIN IMMEDIATE takes the write lock up front, so a second process (the CLI) waits on
 * busy_timeout instead of failing on a lock upgrade half-way through. Every commit is durable,
 * including the bookkeeping that asked for `durable: false`: in a group it costs nothing more.
 */
export class GroupCommitter extends Batches {
  protected override readonly paced = true;

  protected async runBatch(conn: Kysely<DB>, group: Pending[]): Promise<Outcome[]> {
    const outcomes: Outcome[] = [];
    await conn.executeQuery(GROUP.begin);
    try {
      for (const p of group) {
        await conn.executeQuery(GROUP.savepoint);
        try {
          const value = await p.fn(conn);
          await conn.executeQuery(GROUP.release);
          outcomes.push({ ok: true, value });
        } catch (err) {
          // Its own writes are undone; the others' stay. If SQLite already rolled the whole
          // transaction back (a full disk, an I/O error), the savepoint is gone: the group fails
          // with the original error, not with "no such savepoint".
          try {
            await conn.executeQuery(GROUP.rollbackTo);
            await conn.executeQuery(GROUP.release);
          } catch {
            throw err;
          }
          outcomes.push({ ok: false, err });
        }
      }
      await conn.executeQuery(GROUP.commit);
    } catch (err) {
      await conn.executeQuery(GROUP.rollback).catch(() => undefined);
      // Nothing of this group was committed: every caller fails (and none was answered yet).
      return group.map(() => ({ ok: false as const, err }));
    }
    return outcomes;
  }
}

/**
 * Read batching for SQLite (issue 31). better-sqlite3 runs a statement on the main thread, between
 * the HTTP work of other requests; run that way, a 4.1 list's four reads cost this machine about
 * three times what they cost run back to back (the CPU's caches hold SQLite's pages and code between
 * one statement and the next, not the request handling that came between). So the reads of the
 * requests that arrive together are queued and run one request after the other, in one read
 * transaction (deferred BEGIN: one snapshot and one lock for the batch, never the write lock), as the
 * group commit runs writes. Its callers are answered once the commits whose writes it could see
 * are durable (a read never shows what a power loss could still take back). Measured in process (50 requests in flight, each statement timed): 1,226
 * → 2,300 lists/s, 960 → 607 µs of CPU per list; over HTTP, bench:http, 2,030 → 3,306. A batch begins after every read in it was asked for, so a read sees
 * every write acknowledged before it.
 */
export class ReadBatcher extends Batches {
  protected async runBatch(conn: Kysely<DB>, batch: Pending[]): Promise<Outcome[]> {
    await conn.executeQuery(READS.begin);
    const done: Outcome[] = [];
    try {
      for (const p of batch) {
        try {
          done.push({ ok: true, value: await p.fn(conn) });
        } catch (err) {
          done.push({ ok: false, err });
        }
      }
    } finally {
      await conn.executeQuery(READS.commit);
    }
    return done;
  }
}

const READS = { begin: CompiledQuery.raw('begin'), commit: CompiledQuery.raw('commit') };
