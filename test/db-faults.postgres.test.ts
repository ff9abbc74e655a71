// PostgreSQL goes away, its connections die (idle or in a transaction), a connect fails: 503 at once,
// the right cause, and recovery by itself.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { databaseFault } from '../src/db/faults.js';
import { openDatabase } from '../src/db/index.js';
import { holderBody, randomStr } from './helpers/app.js';
import { childDatabaseUrl } from './helpers/cli.js';
import { isolatedDatabase } from './helpers/db.js';
import { alive, assertUnavailable, behindProxy, type Demo, PG, PG_SKIP, post } from './helpers/db-faults.js';
import { eventually } from './helpers/receiver.js';
import { type Started, startService } from './helpers/service.js';

/** The same write, sent until it succeeds (within 15 s): the service recovered by itself. */
async function succeedsAgain(service: Started, demo: Demo, write: Record<string, unknown>, what: string) {
  let after: Awaited<ReturnType<typeof post>> | undefined;
  await eventually(
    async () => {
      after = await post(service, demo, '/api/network/holderCreate.html', write);
      return after.status === 200;
    },
    15_000,
    what,
  );
  return after as Awaited<ReturnType<typeof post>>;
}

describe('faults around the database', () => {
  it('PostgreSQL goes away and comes back: 503 with Retry-After at once (no hang, no crash), then it recovers by itself', {
    skip: PG_SKIP,
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
    const ready = await fetch(`${service.url}/readyz`);
    assert.deepEqual([ready.status, ((await ready.json()) as { status: string }).status], [503, 'database unavailable']);
    assert.ok(alive(service), 'the service is still running');
    await eventually(() => /database unavailable: PostgreSQL is not reachable/.test(service.output()), 5000, 'the log line');

    // Back: the same request (same randomStr) now succeeds, once; nothing was half-written meanwhile.
    await proxy.up();
    const after = await succeedsAgain(service, demo, write, 'the service recovers once PostgreSQL is back');
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

  it('PostgreSQL stops answering (a network black hole): 503 within the statement bound, not never; then it recovers', {
    skip: PG_SKIP,
  }, async (t) => {
    const { db, proxy, via } = await behindProxy(t);
    const service = await startService({
      DATABASE_URL: via(childDatabaseUrl(db)),
      CARDPROGRAM_DATA_DIR: db.dataDir,
      CARDPROGRAM_PG_STATEMENT_TIMEOUT_MS: '1000',
    });
    t.after(() => service.child.kill('SIGKILL'));
    const demo = JSON.parse(readFileSync(join(db.dataDir, 'demo-merchant.json'), 'utf8')) as Demo;
    assert.equal((await post(service, demo, '/api/network/holderCreate.html', holderBody())).status, 200);

    proxy.blackhole();
    const write = holderBody();
    for (let i = 0; i < 3; i++) {
      const reply = await post(service, demo, '/api/network/holderCreate.html', write);
      assert.equal(reply.status, 503, JSON.stringify(reply.body));
      assert.equal(reply.body.code, '1');
      // A pooled connection's statement: 1 s on the server, then the client gives up at 2 s; a new
      // connection: the 5 s connect bound. Never the 15 s the test's own client would wait.
      assert.ok(reply.ms < 6500, `answered in ${reply.ms} ms`);
    }
    assert.ok(alive(service));
    proxy.heal();
    await succeedsAgain(service, demo, write, 'the service recovers once PostgreSQL answers again');
    const rows = await db.database.db
      .selectFrom('cardholders')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    assert.equal(Number(rows.n), 2, 'the acknowledged cardholders, once each');
  });

  it('every pooled connection busy: a request waits at most CARDPROGRAM_PG_POOL_WAIT_MS for one, then 503; then it recovers', {
    skip: PG_SKIP,
  }, async (t) => {
    const db = await isolatedDatabase(PG as NonNullable<typeof PG>);
    t.after(() => db.cleanup());
    const service = await startService({
      DATABASE_URL: childDatabaseUrl(db),
      CARDPROGRAM_DATA_DIR: db.dataDir,
      CARDPROGRAM_PG_POOL_SIZE: '1',
      CARDPROGRAM_PG_POOL_WAIT_MS: '300',
      CARDPROGRAM_PG_STATEMENT_TIMEOUT_MS: '4000',
      CARDPROGRAM_WORKER: 'off',
      CARDPROGRAM_RATE_LIMIT: '0',
    });
    t.after(() => service.child.kill('SIGKILL'));
    const demo = JSON.parse(readFileSync(join(db.dataDir, 'demo-merchant.json'), 'utf8')) as Demo;
    assert.equal((await post(service, demo, '/api/network/holderCreate.html', holderBody())).status, 200);
    // Another session holds the cardholders table: the service's one connection waits on it.
    const admin = new pg.Client({ connectionString: db.url, options: `-c search_path=${db.pgSchema}` });
    await admin.connect();
    t.after(() => admin.end());
    await admin.query('begin');
    await admin.query('lock table cardholders in access exclusive mode');
    const stuck = post(service, demo, '/api/network/holderCreate.html', holderBody());
    await eventually(
      async () =>
        (await admin.query("select 1 from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()")).rowCount ===
        1,
      5000,
      'the service’s connection waits for the lock',
    );
    const waited = await post(service, demo, '/api/network/holderCreate.html', holderBody());
    assertUnavailable(waited, '1');
    assert.ok(waited.ms < 2000, `answered in ${waited.ms} ms: the pool wait, not the statement bound`);
    await admin.query('rollback');
    assert.equal((await stuck).status, 200, 'the waiting write goes through once the lock is gone');
    await succeedsAgain(service, demo, holderBody(), 'and the next one too');
  });

  it('a statement past statement_timeout is 503 (57014), not 500', { skip: PG_SKIP }, () => {
    const err = Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' });
    assert.equal(databaseFault(err)?.retryAfterSeconds, 5);
    const read = new Error('Query read timeout');
    assert.equal(databaseFault(read)?.retryAfterSeconds, 1);
  });

  it('a transaction whose connection dies fails with its cause, not with the ROLLBACK that failed after it', {
    skip: PG_SKIP,
  }, async (t) => {
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

  it('a pooled connection that died while idle is found dead by its BEGIN (sent with the first statement), and the transaction runs again on a fresh one', {
    skip: PG_SKIP,
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
        { n: 1, runs: 3, deadBegins: 2 },
        // A BEGIN is sent with fn's first statement (src/db/pg-prepared.ts): fn has run up to it on
        // each dead connection, writing nothing, and runs again on the next.
        `${mode}: two dead BEGINs (each dead connection dropped, none handed out twice), fn run up to its first statement on each, then whole on a fresh one`,
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
    skip: PG_SKIP,
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
});
