// SQLite's commits synced off the main thread (src/db/sqlite-wal-sync.ts, issue 42): nobody is
// answered before the write-ahead log is on disk — a writer, a read that could see the write, a
// stored answer sent again — a failed sync fails them, and a kill between the write and the sync
// loses nothing that was acknowledged.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { afterDurable, type Database, openDatabase } from '../src/db/index.js';
import { CHECKPOINT_BYTES, Checkpointer } from '../src/db/sqlite-checkpointer.js';
import { ROOT } from './helpers/cli.js';
import { dialectSkip } from './helpers/db.js';

function fileDatabase(t: TestContext): { database: Database; file: string } {
  const dir = mkdtempSync(join(tmpdir(), 'cardprogram-wal-'));
  const file = join(dir, 'db.sqlite');
  const database = openDatabase(`file:${file}`);
  t.after(async () => {
    await database.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });
  return { database, file };
}

/** Holds every sync of the log until released; what was held is then synced for real. */
function holdSyncs(database: Database) {
  const wal = database.walSync;
  assert.ok(wal, 'a file database runs with a write-ahead log synced by WalSync');
  const real = wal.sync;
  const held: Array<() => void> = [];
  let syncs = 0;
  wal.sync = (fd) =>
    new Promise<void>((resolve, reject) => {
      syncs++;
      held.push(() => real(fd).then(resolve, reject));
    });
  return {
    syncs: () => syncs,
    release: () => {
      wal.sync = real;
      for (const go of held.splice(0)) go();
    },
  };
}

/** Whether a promise has settled after the event loop turned a few times. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((r) => setTimeout(r, 50));
  return done;
}

describe('SQLite: the commit synced off the main thread', { skip: dialectSkip('sqlite') }, () => {
  it('a writer, a batched read and a stored answer wait for the log to be on disk, then are answered', async (t) => {
    const { database } = fileDatabase(t);
    await database.withTx((tx) => sql`create table kept (id integer primary key)`.execute(tx));
    const hold = holdSyncs(database);
    const write = database.withTx((tx) => sql`insert into kept (id) values (1)`.execute(tx));
    assert.equal(await settled(write), false, 'the writer is not answered while its commit is not synced');
    assert.ok(hold.syncs() >= 1, 'the log is being synced');
    // The commit is visible on the connection, but a read that sees it is not answered before it is durable.
    const read = database.read((db) => sql<{ n: number }>`select count(*) as n from kept`.execute(db));
    const stored = afterDurable(database.db);
    assert.equal(await settled(read), false, 'a batched read that sees the write waits for its sync');
    assert.equal(await settled(stored), false, 'a stored answer waits for the sync');
    hold.release();
    await write;
    assert.equal((await read).rows[0]?.n, 1);
    await stored;
    // Nothing owed: answered at once.
    assert.equal(await settled(afterDurable(database.db)), true);
  });

  it('a read that says what it read needs no disk is answered at once; one that does, and the rest of its batch, wait', async (t) => {
    const { database } = fileDatabase(t);
    await database.withTx((tx) => sql`create table kept (id integer primary key)`.execute(tx));
    const hold = holdSyncs(database);
    const write = database.withTx((tx) => sql`insert into kept (id) values (1)`.execute(tx));
    assert.equal(await settled(write), false);
    const count = (db: Database['db']) => sql<{ n: number }>`select count(*) as n from kept`.execute(db);
    // In one batch: a read whose result needs no disk, one whose result does, and one that says nothing.
    const free = database.read(count, { needsDisk: () => false });
    const owed = database.read(count, { needsDisk: (r) => r.rows[0]?.n === 1 });
    const plain = database.read(count);
    assert.equal(await settled(free), true, 'answered before the sync');
    assert.equal((await free).rows[0]?.n, 1);
    assert.equal(await settled(owed), false, 'what it read needs the disk: it waits');
    assert.equal(await settled(plain), false, 'a read that says nothing waits');
    hold.release();
    await write;
    assert.equal((await owed).rows[0]?.n, 1);
    assert.equal((await plain).rows[0]?.n, 1);
  });

  it('a failed sync fails the writers that waited for it and every later one (what is on disk is unknown)', async (t) => {
    const { database } = fileDatabase(t);
    await database.withTx((tx) => sql`create table kept (id integer primary key)`.execute(tx));
    const wal = database.walSync;
    assert.ok(wal);
    wal.sync = () => Promise.reject(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
    await assert.rejects(
      database.withTx((tx) => sql`insert into kept (id) values (1)`.execute(tx)),
      (err: NodeJS.ErrnoException) => err.code === 'EIO',
    );
    await assert.rejects(
      database.withTx((tx) => sql`insert into kept (id) values (2)`.execute(tx)),
      (err: NodeJS.ErrnoException) => err.code === 'EIO',
    );
    // A read that needs no disk is not answered as if nothing had happened: it fails too (an 0100
    // is then answered 91 before anything is decided), and so does the wait an early answer makes.
    await assert.rejects(
      database.read((db) => sql`select count(*) as n from kept`.execute(db), { needsDisk: () => false }),
      (err: NodeJS.ErrnoException) => err.code === 'EIO',
    );
    await assert.rejects(database.afterDurable(), (err: NodeJS.ErrnoException) => err.code === 'EIO');
  });

  it('checkpoints run in a worker thread past 4 MiB of log, and a process that closes its database still exits by itself', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'cardprogram-wal-ckpt-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'db.sqlite');
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'test', 'fixtures', 'wal-checkpoint-exit.ts'), file], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += String(d)));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const code = await new Promise((r) => child.once('exit', (c, signal) => r(c ?? signal)));
    clearTimeout(timer);
    assert.equal(code, 0, `the process exits by itself once its database is closed: ${out}`);
    assert.equal(JSON.parse(out).passedMark, true);
    const raw = new SQLite(file);
    try {
      assert.equal(raw.pragma('integrity_check', { simple: true }), 'ok');
      assert.equal(raw.prepare('select count(*) from kept').pluck().get(), 1600);
    } finally {
      raw.close();
    }
  });

  it('a checkpoint is asked for by the log not yet copied, not by the size of its file (which SQLite never shrinks)', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'cardprogram-wal-pending-'));
    const file = join(dir, 'db.sqlite');
    const raw = new SQLite(file);
    const checkpointer = new Checkpointer(file);
    t.after(async () => {
      await checkpointer.close();
      raw.close();
      rmSync(dir, { recursive: true, force: true });
    });
    raw.pragma('journal_mode = WAL');
    raw.pragma('wal_autocheckpoint = 0');
    raw.exec('create table kept (id integer primary key, v text)');
    const insert = raw.prepare('insert into kept (v) values (?)');
    const value = 'x'.repeat(4000);
    for (let i = 0; i < 1200; i++) insert.run(value);
    // A log written from its start: every frame after the file's 32-byte header is still to copy.
    const size = statSync(`${file}-wal`).size;
    assert.ok(size > CHECKPOINT_BYTES, `the log passed the mark: ${size}`);
    assert.equal(checkpointer.pendingBytes(), size - 32, 'the header says what the file holds');
    checkpointer.logSize(size);
    assert.equal(checkpointer.checkpointing, true, 'past the mark: a checkpoint');
    for (let i = 0; i < 500 && checkpointer.checkpointing; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(checkpointer.checkpointing, false);
    assert.equal(checkpointer.pendingBytes(), 0, 'all of it copied');
    // The next write starts the log again from its start; the file keeps its size.
    insert.run('one more');
    const after = statSync(`${file}-wal`).size;
    assert.equal(after, size, 'the file is not shrunk');
    assert.ok((checkpointer.pendingBytes() ?? Number.NaN) < 100_000, `a few pages to copy: ${checkpointer.pendingBytes()}`);
    checkpointer.logSize(after);
    assert.equal(checkpointer.checkpointing, false, 'the file past the mark, the log not: no checkpoint');
    assert.equal(raw.prepare('select count(*) from kept').pluck().get(), 1201);
  });

  it('a kill between the write and its sync: what was acknowledged is there, the database is whole, the rest was never acknowledged', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'cardprogram-wal-kill-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'db.sqlite');
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'test', 'fixtures', 'wal-kill-child.ts'), file], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d) => {
        out += String(d);
        if (out.includes('committed 2, not synced')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`the child exited (${code}): ${out}`)));
    });
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    assert.match(out, /acknowledged 1/);
    assert.doesNotMatch(out, /acknowledged 2/, 'row 2 was never acknowledged: its sync was held');
    const raw = new SQLite(file);
    try {
      assert.equal(raw.pragma('integrity_check', { simple: true }), 'ok');
      const ids = raw.prepare('select id from kept order by id').pluck().all() as number[];
      assert.equal(ids[0], 1, 'the acknowledged row survived the kill');
      assert.ok(ids.length <= 2);
    } finally {
      raw.close();
    }
  });
});
