import { close, fdatasync, fstat, open, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { promisify } from 'node:util';

const openAsync = promisify(open);
const closeAsync = promisify(close);
const fdatasyncAsync = promisify(fdatasync);
const fstatAsync = promisify(fstat);

/**
 * The durability of SQLite's commits, waited for off the main thread (issue 42). The connection runs
 * in WAL mode with `synchronous = NORMAL`: a COMMIT appends its frames to the write-ahead log (the
 * `-wal` file) with write(2) and returns without waiting for the disk; this syncs that file on
 * libuv's thread pool (fdatasync of the same inode, through a descriptor of its own), and whoever
 * must not answer before the commit is durable waits for `durable()`. Checkpoints stay synced by
 * SQLite itself (NORMAL syncs the log before a checkpoint and the database after it). The argument
 * from SQLite's documentation is in docs/architecture.md (Durability on SQLite).
 *
 * Writes are counted as they run (`wrote()`); a sync covers every write counted before it started;
 * `durable()` resolves once a sync that started after the last counted write has completed (at once
 * when there is none). Syncs run one at a time; the writes counted meanwhile share the next one.
 * A failed sync fails every waiter and every later one: after a failed fsync what is on disk is
 * unknown (PostgreSQL stops on it too), so the process must be restarted to recover from the log.
 */
export class WalSync {
  private written = 0;
  private synced = 0;
  private running: Promise<void> | null = null;
  private waiters: Array<{ upTo: number; resolve: () => void; reject: (err: unknown) => void }> = [];
  private fd: number | null = null;
  private ino = -1;
  private failure: unknown = null;
  /** Fault injection (test/db.wal-sync.test.ts): replaces the data sync of the log's descriptor. */
  sync: (fd: number) => Promise<void> = fdatasyncAsync;
  /** Told the log's size at each sync (src/db/sqlite-checkpointer.ts). */
  onLogSize: ((bytes: number) => void) | undefined;

  constructor(private readonly walPath: string) {}

  /** A statement that may write ran (or a COMMIT): what it wrote must be synced before anyone depends on it. */
  wrote(): void {
    this.written++;
  }

  /** Whether a sync failed: what is on disk is unknown from then on, and nobody is answered as if it were. */
  get failed(): boolean {
    return this.failure !== null;
  }

  /** Resolves once everything written so far is on disk; rejects if a sync failed. */
  durable(): Promise<void> {
    if (this.failure !== null) return Promise.reject(this.failure);
    if (this.synced >= this.written) return Promise.resolve();
    const upTo = this.written;
    const waited = new Promise<void>((resolve, reject) => this.waiters.push({ upTo, resolve, reject }));
    if (!this.running) this.running = this.loop();
    return waited;
  }

  /** Waits for the syncs owed, then lets go of the log's descriptor. */
  async close(): Promise<void> {
    await this.durable().catch(() => undefined);
    if (this.fd !== null) await closeAsync(this.fd).catch(() => undefined);
    this.fd = null;
  }

  private async loop(): Promise<void> {
    try {
      while (this.synced < this.written && this.failure === null) {
        const upTo = this.written;
        try {
          await this.syncLog();
          this.synced = upTo;
        } catch (err) {
          this.failure = err;
        }
        const left: typeof this.waiters = [];
        for (const w of this.waiters) {
          if (this.failure !== null) w.reject(this.failure);
          else if (w.upTo <= this.synced) w.resolve();
          else left.push(w);
        }
        this.waiters = left;
      }
    } finally {
      this.running = null;
    }
  }

  /**
   * fdatasync of the log. Its descriptor is opened on first use and again when the file was replaced
   * (SQLite deletes the log when the last connection closes; another process may create it anew);
   * then the directory is synced too, so that the new file's name survives a power loss (what
   * SQLite's own sync of a new journal does). No log: nothing to sync (it was checkpointed, synced,
   * and removed).
   */
  private async syncLog(): Promise<void> {
    // On the main thread: a stat of a file whose inode is cached costs microseconds, a trip to the
    // thread pool more (under load, a wake-up of a thread waiting for a core).
    const stats = statSync(this.walPath, { throwIfNoEntry: false });
    if (stats === undefined) return;
    const ino = stats.ino;
    this.onLogSize?.(stats.size);
    if (this.fd === null || ino !== this.ino) {
      if (this.fd !== null) await closeAsync(this.fd).catch(() => undefined);
      this.fd = null;
      const fd = await openAsync(this.walPath, 'r');
      this.ino = (await fstatAsync(fd)).ino;
      this.fd = fd;
      const dir = await openAsync(dirname(this.walPath), 'r');
      try {
        await this.sync(dir);
      } finally {
        await closeAsync(dir);
      }
    }
    await this.sync(this.fd);
  }
}
