import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * SQLite's checkpoints off the main thread (issue 42). A checkpoint copies the write-ahead log's
 * pages into the database file and syncs both (synchronous = NORMAL syncs the log before it and the
 * database after it); run by SQLite itself when the log passes 1,000 pages, it ran inside the COMMIT
 * that crossed the mark, on the main thread, with its two fsyncs. Here the connection's automatic
 * checkpoints are off (`wal_autocheckpoint = 0`) and a worker thread with a connection of its own
 * runs them (PASSIVE: it never waits for the writer nor makes it wait) once the log has grown past
 * CHECKPOINT_BYTES. The worker starts on first need and does not keep the process alive.
 */
export const CHECKPOINT_BYTES = 4 << 20;

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

  /** The log is `bytes` long: a checkpoint is asked for past the mark, unless one is running. */
  logSize(bytes: number): void {
    if (bytes < CHECKPOINT_BYTES || this.running || this.closed) return;
    this.running = true;
    this.start().postMessage('checkpoint');
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
    await this.worker?.terminate();
    this.worker = null;
  }
}
