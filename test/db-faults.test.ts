import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { databaseFault } from '../src/db/faults.js';
import { openDatabase } from '../src/db/index.js';
import { holderBody, randomStr, sign } from './helpers/app.js';
import { childDatabaseUrl, runCli } from './helpers/cli.js';
import { isolatedDatabase, testDialects } from './helpers/db.js';

import { eventually } from './helpers/receiver.js';
import { type Started, startService } from './helpers/service.js';

interface Demo {
  appId: string;
  secret: string;
}

async function post(service: Started, demo: Demo, path: string, body: Record<string, unknown>) {
  const started = Date.now();
  const res = await fetch(`${service.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(sign(body, { ...demo, webhookSecret: '' })),
    signal: AbortSignal.timeout(15_000),
  });
  return {
    status: res.status,
    body: (await res.json()) as Record<string, any>,
    retryAfter: res.headers.get('retry-after'),
    ms: Date.now() - started,
  };
}

function alive(service: Started): boolean {
  return service.child.exitCode === null && service.child.signalCode === null;
}

function assertUnavailable(reply: Awaited<ReturnType<typeof post>>, retryAfter: string): void {
  assert.equal(reply.status, 503, JSON.stringify(reply.body));
  assert.deepEqual(
    { code: reply.body.code, success: reply.body.success, error: reply.body.error, model: reply.body.model, retryAfter: reply.retryAfter },
    { code: '1', success: false, error: true, model: null, retryAfter },
  );
  assert.equal(reply.body.msg, `Service temporarily unavailable; retry in ${retryAfter} s`);
  assert.ok(!/at |\.ts|\.js|SQLITE|ECONN|postgres/i.test(JSON.stringify(reply.body)), 'no internal detail in the reply');
}

/** PostgreSQL's ErrorResponse for a session ended by an administrator (pg_terminate_backend). */
const fatal57P01 = (() => {
  const fields = Buffer.from('SFATAL\0VFATAL\0C57P01\0Mterminating connection due to administrator command\0\0');
  const head = Buffer.alloc(5);
  head.write('E');
  head.writeInt32BE(fields.length + 4, 1);
  return Buffer.concat([head, fields]);
})();

/**
 * A TCP proxy in front of PostgreSQL that can go down like a restarting server: every open
 * connection is cut and new ones are refused, until it comes back on the same port. The real
 * PostgreSQL keeps serving the other tests meanwhile.
 */
async function pgProxy(t: TestContext, target: { host: string; port: number }) {
  const sockets = new Set<Socket>();
  const upstreamPorts = new Set<number>();
  // Connections that look alive to the client but are reset by the first bytes it sends.
  const clients = new Set<Socket>();
  // Connections that look alive to the client but answer its next bytes with a reset, or with the
  // error reply a server sends when it ends a session (FATAL 57P01) and a close.
  const stale = new Map<Socket, 'reset' | 'fatal'>();
  let resets = 0;
  let server: Server | null = null;
  let port = 0;
  const up = async () => {
    const listening = createServer((client) => {
      const upstream = connect(target.port, target.host);
      upstream.on('connect', () => upstream.localPort && upstreamPorts.add(upstream.localPort));
      clients.add(client);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('close', () => {
          sockets.delete(s);
          clients.delete(s);
          stale.delete(s);
        });
        s.on('error', () => undefined);
      }
      // One side gone, the other follows, as with a real server: a proxy that kept the client's side
      // open would be a network black hole, where queries wait for TCP keepalive.
      upstream.on('close', () => client.end());
      client.on('close', () => upstream.destroy());
      client.on('data', (chunk: Buffer) => {
        const mode = stale.get(client);
        if (!mode) return void upstream.write(chunk);
        // Counted once: what the client sends after (its goodbye) goes nowhere.
        stale.delete(client);
        resets++;
        upstream.destroy();
        if (mode === 'reset') client.resetAndDestroy();
        else client.end(fatal57P01);
      });
      upstream.pipe(client);
    });
    await new Promise<void>((resolve) => listening.listen(port, '127.0.0.1', resolve));
    port = (listening.address() as { port: number }).port;
    server = listening;
  };
  const down = async () => {
    const s = server;
    server = null;
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => s?.close(resolve));
  };
  /** Every open connection goes dead silently, as a server session ended while the client sat idle. */
  const staleAll = (mode: 'reset' | 'fatal' = 'reset') => {
    for (const client of clients) stale.set(client, mode);
  };
  await up();
  t.after(down);
  return { port: () => port, up, down, upstreamPorts, staleAll, resets: () => resets };
}

const PG = testDialects().find((d) => d.name === 'postgres');
const SQLITE = testDialects().find((d) => d.name === 'sqlite');

/** An isolated PostgreSQL database with a proxy in front of it; via(url) points a URL of it at the proxy. */
async function behindProxy(t: TestContext) {
  const db = await isolatedDatabase(PG as NonNullable<typeof PG>);
  t.after(() => db.cleanup());
  const target = new URL(db.url);
  const proxy = await pgProxy(t, { host: target.hostname, port: Number(target.port || 5432) });
  const via = (url: string) => {
    const u = new URL(url);
    u.host = `127.0.0.1:${proxy.port()}`;
    return u.toString();
  };
  return { db, proxy, via };
}

describe('faults around the database', () => {
  it('which errors are the database failing (503 with a wait) and which are not', () => {
    const e = (code: string, message = 'x') => Object.assign(new Error(message), { code });
    const cases: Array<[Error, number | null]> = [
      [e('ECONNREFUSED'), 1],
      [e('57P01', 'terminating connection due to administrator command'), 1],
      [e('08006'), 1],
      [e('25006', 'cannot execute INSERT in a read-only transaction'), 5],
      [e('53100'), 30],
      [e('40P01'), 1],
      [new Error('timeout exceeded when trying to connect'), 1],
      [new Error('Connection terminated unexpectedly'), 1],
      [new Error('Client has encountered a connection error and is not queryable'), 1],
      [e('SQLITE_FULL'), 30],
      [e('SQLITE_READONLY_DBMOVED'), 30],
      [e('SQLITE_IOERR_FSYNC'), 5],
      [e('SQLITE_BUSY_SNAPSHOT'), 1],
      // Defects, not outages: a constraint, a bad query, a client used after release.
      [e('SQLITE_CONSTRAINT_UNIQUE'), null],
      [e('23505'), null],
      [e('42P01', 'relation does not exist'), null],
      [new Error('Client was closed and is not queryable'), null],
      [new TypeError('x is undefined'), null],
    ];
    for (const [err, wait] of cases)
      assert.equal(databaseFault(err)?.retryAfterSeconds ?? null, wait, `${err.message} ${(err as { code?: string }).code}`);
  });

  it('PostgreSQL goes away and comes back: 503 with Retry-After at once (no hang, no crash), then it recovers by itself', {
    skip: !PG,
  }, async (t) => {
    const { db, proxy, via } = await behindProxy(t);
    const service = await startService({ DATABASE_URL: via(childDatabaseUrl(db)), CARDPROGRAM_DATA_DIR: db.dataDir });
    t.after(() => service.child.kill('SIGKILL'));
    const demo = JSON.parse(readFileSync(join(db.dataDir, 'demo-merchant.json'), 'utf8')) as Demo;

    const before = await post(service, demo, '/api/network/holderCreate.html', holderBody());
    assert.equal(before.status, 200, JSON.stringify(before.body));

    // Down: every pooled connection is cut and new ones are refused.
    await proxy.down();
    const write = holderBody();
    for (let i = 0; i < 5; i++) {
      const reply = await post(service, demo, '/api/network/holderCreate.html', write);
      assertUnavailable(reply, '1');
      assert.ok(reply.ms < 6000, `answered in ${reply.ms} ms, not held until a client timeout`);
    }
    const read = await post(service, demo, '/api/network/holderQuery.html', { holderId: before.body.holderId, randomStr: randomStr() });
    assertUnavailable(read, '1');
    const health = await fetch(`${service.url}/healthz`);
    assert.equal(health.status, 503);
    assert.ok(alive(service), 'the service is still running');
    await eventually(() => /database unavailable: PostgreSQL is not reachable/.test(service.output()), 5000, 'the log line');

    // Back: the same request (same randomStr) now succeeds, once; nothing was half-written meanwhile.
    await proxy.up();
    let after: Awaited<ReturnType<typeof post>> | undefined;
    await eventually(
      async () => {
        after = await post(service, demo, '/api/network/holderCreate.html', write);
        return after.status === 200;
      },
      15_000,
      'the service recovers once PostgreSQL is back',
    );
    const again = await post(service, demo, '/api/network/holderCreate.html', write);
    assert.equal(again.body.holderId, after?.body.holderId);
    assert.equal((await fetch(`${service.url}/healthz`)).status, 200);

    // A restart as PostgreSQL does it: the server ends every session of the service (57P01).
    const admin = new pg.Client({ connectionString: PG?.url });
    await admin.connect();
    t.after(() => admin.end());
    const ended = await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where client_port = any($1::int[])', [
      [...proxy.upstreamPorts],
    ]);
    assert.ok(ended.rowCount && ended.rowCount > 0, 'the service had sessions to end');
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) {
      const reply = await post(service, demo, '/api/network/holderCreate.html', holderBody());
      if (reply.status !== 200) assertUnavailable(reply, '1');
      statuses.push(reply.status);
    }
    assert.equal(statuses.at(-1), 200, `recovered after the sessions ended: ${statuses.join(' ')}`);
    assert.ok(alive(service));

    const rows = await db.database.db
      .selectFrom('cardholders')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    assert.equal(Number(rows.n), 2 + statuses.filter((s) => s === 200).length, 'exactly the acknowledged cardholders');
  });

  it('a transaction whose connection dies fails with its cause, not with the ROLLBACK that failed after it', { skip: !PG }, async (t) => {
    const db = await isolatedDatabase(PG as NonNullable<typeof PG>);
    t.after(() => db.cleanup());
    const { withTx } = db.database;
    // The server ends the session under the transaction, as a restart does; the ROLLBACK that
    // follows fails too ("Connection terminated unexpectedly").
    await assert.rejects(
      withTx(async (tx) => {
        await sql`select pg_terminate_backend(pg_backend_pid())`.execute(tx);
      }),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, '57P01', err.message);
        assert.equal(databaseFault(err)?.retryAfterSeconds, 1);
        return true;
      },
    );
    // An error of the caller's own, thrown once the connection is gone, is the one reported.
    const admin = new pg.Client({ connectionString: PG?.url });
    await admin.connect();
    t.after(() => admin.end());
    await assert.rejects(
      withTx(async (tx) => {
        const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(tx);
        await admin.query('select pg_terminate_backend($1)', [rows[0]?.pid]);
        await eventually(
          async () => (await admin.query('select 1 from pg_stat_activity where pid = $1', [rows[0]?.pid])).rowCount === 0,
          5000,
          'the session ended',
        );
        throw new RangeError('the caller gave up');
      }),
      { name: 'RangeError', message: 'the caller gave up' },
    );
    // The pool drops the dead connections and goes on.
    assert.equal(await withTx(async (tx) => (await sql<{ n: number }>`select 1 as n`.execute(tx)).rows[0]?.n), 1);
  });

  it('a pooled connection that died while idle is found dead by its BEGIN, and the transaction runs on a fresh one', {
    skip: !PG,
  }, async (t) => {
    const { db, proxy, via } = await behindProxy(t);
    const database = openDatabase(via(db.url), { ...(db.pgSchema ? { pgSchema: db.pgSchema } : {}), pgPoolSize: 2 });
    t.after(() => database.close());
    const one = async (tx: Parameters<Parameters<typeof database.withTx>[0]>[0]) =>
      (await sql<{ n: number }>`select 1 as n`.execute(tx)).rows[0]?.n;

    // Both pooled connections idle, then dead without the client knowing: reset by the network, or
    // ended by the server with an error reply that the client reads only with its BEGIN's answer.
    let runs = 0;
    for (const mode of ['reset', 'fatal'] as const) {
      await Promise.all([database.withTx(one), database.withTx(one)]);
      const before = proxy.resets();
      proxy.staleAll(mode);
      runs = 0;
      const n = await database.withTx(async (tx) => {
        runs++;
        return one(tx);
      });
      assert.deepEqual(
        { n, runs, deadBegins: proxy.resets() - before },
        { n: 1, runs: 1, deadBegins: 2 },
        `${mode}: two dead BEGINs (each dead connection dropped, none handed out twice), then fn once on a fresh one`,
      );
    }

    // Once fn has begun, a connection dying under it is the caller's failure to answer (503), not run again.
    runs = 0;
    await assert.rejects(
      database.withTx(async (tx) => {
        runs++;
        await one(tx);
        proxy.staleAll();
        return one(tx);
      }),
      (err: Error) => {
        assert.equal(databaseFault(err)?.retryAfterSeconds, 1, err.message);
        return true;
      },
    );
    assert.equal(runs, 1);
    assert.equal(await database.withTx(one), 1);
  });

  it('a connect that fails is not tried again at once: PostgreSQL is down, and a retry would only add to the wait', {
    skip: !PG,
  }, async (t) => {
    let accepted = 0;
    const server = createServer((socket) => {
      accepted++;
      socket.resetAndDestroy();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise((resolve) => server.close(resolve)));
    const database = openDatabase(`postgres://postgres@127.0.0.1:${(server.address() as { port: number }).port}/test`, { pgPoolSize: 2 });
    t.after(() => database.close());
    await assert.rejects(
      database.withTx(async () => assert.fail('fn runs only on a connection')),
      (err: Error) => {
        assert.equal(databaseFault(err)?.retryAfterSeconds, 1, err.message);
        return true;
      },
    );
    assert.equal(accepted, 1);
  });

  describe('SQLite on a disk of its own (a tmpfs mounted for the test)', { skip: !SQLITE }, () => {
    /** A small file system of its own, so that it can be filled or made read-only (needs root). */
    function smallDisk(t: TestContext, megabytes: number): string | null {
      const dir = mkdtempSync(join(tmpdir(), 'cardprogram-disk-'));
      try {
        execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${megabytes}m`, 'tmpfs', dir], { stdio: 'pipe' });
      } catch (err) {
        rmSync(dir, { recursive: true, force: true });
        // CI runs as root on its own machine: there the test must run, not skip.
        if (process.env.CI === 'true') throw err;
        t.skip(`cannot mount a tmpfs here (${(err as Error).message.split('\n')[0]}); run as root`);
        return null;
      }
      t.after(() => {
        execFileSync('umount', ['-l', dir]);
        rmSync(dir, { recursive: true, force: true });
      });
      return dir;
    }

    it('a full disk: what does not fit is 503 with Retry-After and a clear log line, never a 500; writes resume when space is freed', async (t) => {
      const disk = smallDisk(t, 16);
      if (!disk) return;
      const dataDir = join(disk, 'data');
      mkdirSync(dataDir);
      const service = await startService({ DATABASE_URL: `file:${join(dataDir, 'db.sqlite')}`, CARDPROGRAM_DATA_DIR: dataDir });
      t.after(() => service.child.kill('SIGKILL'));
      const demo = JSON.parse(readFileSync(join(dataDir, 'demo-merchant.json'), 'utf8')) as Demo;
      const first = await post(service, demo, '/api/network/holderCreate.html', holderBody());
      assert.equal(first.status, 200);

      // Leave 256 KiB free, then write until the disk is full.
      const free = () => {
        const s = statfsSync(disk);
        return s.bavail * s.bsize;
      };
      writeFileSync(join(disk, 'filler'), Buffer.alloc(Math.max(0, free() - 256 * 1024)));
      const acknowledged = new Set<string>([first.body.holderId]);
      let refused: { reply: Awaited<ReturnType<typeof post>>; body: Record<string, unknown> } | null = null;
      for (let i = 0; i < 5000 && !refused; i++) {
        const body = holderBody({ address: Buffer.from('x'.repeat(200)).toString('base64') });
        const reply = await post(service, demo, '/api/network/holderCreate.html', body);
        if (reply.status === 200) acknowledged.add(reply.body.holderId);
        else refused = { reply, body };
      }
      assert.ok(refused, 'the disk filled up');
      assertUnavailable(refused.reply, '30');
      assert.equal(refused.reply.body.errMsg, refused.reply.body.msg);
      await eventually(
        () => /database unavailable: the database disk is full: free space on it/.test(service.output()),
        5000,
        'the log line',
      );
      // A signed read writes too (its randomStr, a small row that may still fit): it is answered, or
      // it is the same 503, never a 500. The health check, which only reads, answers; the service is up.
      for (let i = 0; i < 20; i++) {
        const read = await post(service, demo, '/api/network/holderQuery.html', { holderId: first.body.holderId, randomStr: randomStr() });
        if (read.status !== 200) assertUnavailable(read, '30');
      }
      assert.equal((await fetch(`${service.url}/healthz`)).status, 200);
      assert.ok(alive(service));

      rmSync(join(disk, 'filler'));
      const retried = await post(service, demo, '/api/network/holderCreate.html', refused.body);
      assert.equal(retried.status, 200, JSON.stringify(retried.body));
      acknowledged.add(retried.body.holderId);
      for (let i = 0; i < 5; i++) {
        const more = await post(service, demo, '/api/network/holderCreate.html', holderBody());
        assert.equal(more.status, 200);
        acknowledged.add(more.body.holderId);
      }
      // Every acknowledged cardholder is there, and nothing else.
      service.child.kill('SIGKILL');
      await new Promise((resolve) => service.child.once('exit', resolve));
      const check = openDatabase(`file:${join(dataDir, 'db.sqlite')}`);
      t.after(() => check.close());
      const ids = (await check.db.selectFrom('cardholders').select('id').execute()).map((r) => r.id);
      assert.deepEqual(new Set(ids), acknowledged);
    });

    it('a read-only file system: the service refuses to start, saying so in one line', async (t) => {
      const disk = smallDisk(t, 16);
      if (!disk) return;
      const env = { DATABASE_URL: `file:${join(disk, 'db.sqlite')}`, CARDPROGRAM_DATA_DIR: disk };
      assert.equal((await runCli(['migrate'], env)).code, 0);
      execFileSync('mount', ['-o', 'remount,ro', disk]);
      const res = await runCli(['serve'], { ...env, PORT: '0' });
      assert.equal(res.code, 1);
      assert.equal(
        res.stderr,
        `cardprogram: the SQLite database ${join(disk, 'db.sqlite')} is on a read-only file system: the service must write the file and its directory (DATABASE_URL)\n`,
      );
    });
  });
});
