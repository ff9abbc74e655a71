import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { endianness } from 'node:os';
import { Worker } from 'node:worker_threads';

/**
 * SQLite's checkpoints off the main thread (issue 42). A checkpoint copies the write-ahead log's
 * pages into the database file and syncs both (synchronous = NORMAL syncs the log before it and the
 * database after it); run by SQLite itself when the log passes 1,000 pages, it ran inside the COMMIT
 * that crossed the mark, on the main thread, with its two fsyncs. Here the connection's automatic
 * checkpoints are off (`wal_autocheckpoint = 0`) and a worker thread with a connection of its own
 * runs them (PASSIVE: it never waits for the writer nor makes it wait) once the log
 * holds more than CHECKPOINT_BYTES not yet copied (logSize). The worker starts on first need and does not keep the process alive.
 */
export const CHECKPOINT_BYTES = 4 << 20;

/** The WAL-index header's first copy and the checkpoint information after it (nBackfill at byte 96). */
const HEADER = Buffer.alloc(100);

const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const SQLite = require(workerData.driver);
const db = new SQLite(workerData.file);
db.pragma('busy_timeout = 5000');
db.pragma('synchronous = NORMAL');
parentPort.on('message', () => {
  let error = null;
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch (err) { error = String(err && err.message); }
  parentPort.postMessage({ error });
});
`;

export class Checkpointer {
  private worker: Worker | null = null;
  private running = false;
  private closed = false;
  /** Told of a checkpoint that failed (the service's log); the next one is tried at the next mark. */
  onError: ((message: string) => void) | undefined;

  constructor(private readonly file: string) {}

  /**
   * The log's file is `bytes` long: a checkpoint is asked for once the log holds more than the mark
   * not yet copied into the database, unless one is running. The file's size alone is not that: SQLite
   * writes a new log from its start once a checkpoint has copied all of it, but never shrinks the
   * file, so once past the mark it stays past it and checkpoints ran back to back, each copying a few
   * pages and syncing the database file (13 % of the service's CPU under the link's load, issue 42).
   * What is left to copy is read from the WAL-index header, as SQLite's own automatic checkpoint
   * does; a file 16 times the mark is checkpointed whatever the header says.
   */
  logSize(bytes: number): void {
    if (bytes < CHECKPOINT_BYTES || this.running || this.closed) return;
    const pending = bytes >= 16 * CHECKPOINT_BYTES ? null : this.pendingBytes();
    if (pending !== null && pending < CHECKPOINT_BYTES) return;
    this.running = true;
    this.start().postMessage('checkpoint');
  }

  private shm: { fd: number; ino: number } | null = null;

  /** Whether a checkpoint asked for is still running. */
  get checkpointing(): boolean {
    return this.running;
  }

  /**
   * Bytes of log not yet copied into the database: frames in the log (mxFrame) less those copied
   * (nBackfill), from the WAL-index header at the start of the `-shm` file (sqlite.org/walformat.html:
   * szPage a u16 at byte 14, mxFrame a u32 at 16, nBackfill a u32 at 96, in the machine's byte
   * order), each frame a page and its 24-byte header. Null when it cannot be read.
   */
  pendingBytes(): number | null {
    const path = `${this.file}-shm`;
    try {
      const ino = statSync(path).ino;
      if (this.shm?.ino !== ino) {
        this.closeShm();
        this.shm = { fd: openSync(path, 'r'), ino };
      }
      if (readSync(this.shm.fd, HEADER, 0, HEADER.length, 0) < HEADER.length) return null;
      const little = endianness() === 'LE';
      const u32 = (at: number) => (little ? HEADER.readUInt32LE(at) : HEADER.readUInt32BE(at));
      const u16 = little ? HEADER.readUInt16LE(14) : HEADER.readUInt16BE(14);
      const pageSize = u16 === 1 ? 65536 : u16;
      const frames = u32(16) - u32(96);
      return pageSize < 512 || frames < 0 ? null : frames * (pageSize + 24);
    } catch {
      this.closeShm();
      return null;
    }
  }

  private closeShm(): void {
    if (this.shm) closeSync(this.shm.fd);
    this.shm = null;
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const worker = new Worker(WORKER, { eval: true, workerData: { file: this.file, driver } });
    worker.on('message', (m: { error: string | null }) => {
      this.running = false;
      if (m.error) this.onError?.(m.error);
    });
    worker.on('error', (err) => {
      this.running = false;
      this.worker = null;
      this.onError?.(err.message);
    });
    // After the listeners: attaching a 'message' listener refs the worker again, and a CLI command
    // would then never exit.
    worker.unref();
    this.worker = worker;
    return worker;
  }

  /** No checkpoint is started after this (a last sync while the connection closes does not start one). */
  async close(): Promise<void> {
    this.closed = true;
    this.closeShm();
    await this.worker?.terminate();
    this.worker = null;
  }
}
