import { existsSync, rmSync } from 'node:fs';
import SQLite from 'better-sqlite3';
import { createPrivateFile } from '../db/files.js';
import type { RequestKey } from './keys.js';
import { usedNonce } from './keys.js';
import { beforeWatermark, bucketOf, NONCE_KEEP_MS, type ReadNonceStore } from './read-nonces.js';

/**
 * The read-nonce store that the processes of `serve --processes N` share on SQLite (issue 31): a
 * SQLite file of its own beside the database, written without waiting for the disk
 * (`synchronous = OFF`). A process that dies loses nothing of it (its writes are in the operating
 * system's cache); a machine that stops may, so the cluster's first process makes it anew, empty,
 * every time it starts, before it starts the others, and that moment is its watermark. One `serve`
 * alone keeps them in its memory (read-nonces.ts).
 */
const SCHEMA = `
create table if not exists read_nonces (
  bucket integer not null,
  merchant_id text not null,
  random_str text not null,
  primary key (bucket, merchant_id, random_str)
) without rowid;
create table if not exists store (id integer primary key check (id = 1), watermark integer not null);`;

/** The store's file for a SQLite database file. */
export const readNonceFile = (databaseFile: string) => `${databaseFile}-read-nonces`;

function open(path: string): SQLite.Database {
  createPrivateFile(path);
  const raw = new SQLite(path);
  raw.pragma('journal_mode = WAL');
  // Why OFF: a nonce outlives a crash of the process without it, and after a crash of the machine
  // the file is made anew (the watermark refuses what it held).
  raw.pragma('synchronous = OFF');
  raw.pragma('busy_timeout = 5000');
  raw.exec(SCHEMA);
  return raw;
}

/** The cluster's first process, before it starts the others: a new, empty store whose watermark is now. */
export function createNonceFile(path: string, now: number): void {
  for (const f of [path, `${path}-wal`, `${path}-shm`]) if (existsSync(f)) rmSync(f);
  const raw = open(path);
  raw.prepare('insert into store (id, watermark) values (1, ?)').run(now);
  raw.close();
}

export class FileNonces implements ReadNonceStore {
  readonly kind = 'file';
  readonly watermark: number;
  private readonly raw: SQLite.Database;
  private readonly insert: SQLite.Statement;
  private readonly drop: SQLite.Statement;

  constructor(path: string, now: number) {
    this.raw = open(path);
    // Made by the cluster's first process; if it is not there, this process starts it, empty, now.
    this.raw.prepare('insert into store (id, watermark) values (1, ?) on conflict (id) do nothing').run(now);
    this.watermark = (this.raw.prepare('select watermark from store where id = 1').get() as { watermark: number }).watermark;
    // Per bucket, as every store (read-nonces.ts): the primary key is the check.
    this.insert = this.raw.prepare('insert into read_nonces (bucket, merchant_id, random_str) values (?, ?, ?) on conflict do nothing');
    this.drop = this.raw.prepare('delete from read_nonces where bucket < ?');
  }

  async spend(key: RequestKey, timestamp: number, _now: number): Promise<void> {
    if (timestamp < this.watermark) throw beforeWatermark(this.watermark);
    if (this.insert.run(bucketOf(timestamp), key.merchantId, key.randomStr).changes === 0) throw usedNonce();
  }

  /** Whole buckets, by the primary key's first column. */
  async maintain(now: number): Promise<void> {
    this.drop.run(bucketOf(now - NONCE_KEEP_MS));
  }

  async close(): Promise<void> {
    this.raw.close();
  }
}
