// Issue 19: reads that may be a moment stale go to a PostgreSQL replica (DATABASE_REPLICA_URL,
// src/db/replica.ts). The router's rule on its own (positions and a clock of the test's), then the
// service with a "replica" that is another database filled differently: what the list answers
// proves where it read; tradeQuery and cardQuery stay on the primary; a replica that does not answer
// leaves the reads on the primary; /readyz reports it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { buildApp } from '../src/app.js';
import { ConfigError } from '../src/config.js';
import type { Database } from '../src/db/index.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { type LsnSource, parseLsn, ReplicaRouter, type ReplicaStatus } from '../src/db/replica.js';
import { build, randomStr, testConfig } from './helpers/app.js';
import { fundedCard, ok } from './helpers/cards.js';
import { childDatabaseUrl } from './helpers/cli.js';
import { isolatedDatabase } from './helpers/db.js';
import { eachDialect } from './helpers/dialects.js';
import { testLogging } from './helpers/log-audit.js';

const LIST = '/api/network/networkAuthTradeList.html';
const today = () => new Date().toISOString().slice(0, 10);

describe('the replica router (src/db/replica.ts)', () => {
  /** A router over stand-in databases, with positions and a clock the test moves. */
  function router(maxLagMs = 2000) {
    const state = { now: 0, primary: 100n, replica: 100n as bigint | null, down: false };
    const lsn: LsnSource = {
      primary: async () => state.primary,
      replica: async () => {
        if (state.down) throw new Error('connection refused');
        return state.replica;
      },
    };
    const changes: ReplicaStatus[] = [];
    const primary = { db: 'primary' } as unknown as Database;
    const replica = { db: 'replica', close: async () => undefined } as unknown as Database;
    const r = new ReplicaRouter(primary, replica, { maxLagMs, now: () => state.now, lsn, onChange: (s) => changes.push(s) });
    return { r, state, changes, where: () => r.db() as unknown as string };
  }

  it('a replica that has replayed what the primary had is read; one that falls behind by more than the bound is left, and read again once it catches up', async () => {
    const { r, state, changes, where } = router(2000);
    assert.deepEqual([r.status(), where()], [{ status: 'unavailable', lagMs: null }, 'primary'], 'nothing known before the first probe');
    await r.probe();
    assert.deepEqual([r.status(), where()], [{ status: 'ready', lagMs: 0 }, 'replica']);

    // The primary writes on; the replica stops replaying. Its staleness grows from the last position it showed.
    state.primary = 200n;
    state.now = 1000;
    await r.probe();
    assert.deepEqual(r.status(), { status: 'ready', lagMs: 1000 });
    state.primary = 300n;
    state.now = 2000;
    await r.probe();
    assert.deepEqual([r.status(), where()], [{ status: 'ready', lagMs: 2000 }, 'replica'], 'at the bound: still read');
    state.now = 2001;
    assert.deepEqual([r.status(), where()], [{ status: 'lagging', lagMs: 2001 }, 'primary'], 'past it, without a probe: left at once');
    await r.probe();
    assert.equal(r.status().status, 'lagging');

    // It replays up to what the primary had at 1000: everything before 1000 is there, so it is 1500 behind.
    state.replica = 250n;
    state.now = 2500;
    await r.probe();
    assert.deepEqual([r.status(), where()], [{ status: 'ready', lagMs: 1500 }, 'replica']);
    // Fully caught up.
    state.replica = 300n;
    state.now = 3000;
    await r.probe();
    assert.deepEqual(r.status(), { status: 'ready', lagMs: 0 });
    assert.deepEqual(
      changes.map((c) => c.status),
      ['ready', 'lagging', 'ready'],
      'each change of status told once',
    );
  });

  it('a replica that does not answer is left until it does; a server that is not a standby counts as current', async () => {
    const { r, state, where } = router(2000);
    state.down = true;
    await r.probe();
    assert.deepEqual([r.status(), where()], [{ status: 'unavailable', lagMs: null }, 'primary']);
    state.down = false;
    state.replica = null;
    state.primary = 900n;
    state.now = 10_000;
    await r.probe();
    assert.deepEqual([r.status(), where()], [{ status: 'ready', lagMs: 0 }, 'replica']);
    // Answering but never caught up with anything this process saw: not read.
    const fresh = router(2000);
    fresh.state.replica = 50n;
    await fresh.r.probe();
    assert.deepEqual([fresh.r.status(), fresh.where()], [{ status: 'lagging', lagMs: null }, 'primary']);
  });

  it('WAL positions compare as numbers', () => {
    assert.equal(parseLsn('0/16B3740'), 0x16b3740n);
    assert.ok(parseLsn('1/0') > parseLsn('0/FFFFFFFF'));
    assert.equal(parseLsn('16/B374D848'), (0x16n << 32n) | 0xb374d848n);
  });
});

eachDialect('a read replica', (dialect) => {
  if (dialect.name === 'sqlite') {
    it('is refused beside SQLite, with a clear error', async (t) => {
      const own = await isolatedDatabase(dialect);
      t.after(() => own.cleanup());
      await assert.rejects(
        buildApp(testConfig(own.dataDir, { databaseReplicaUrl: 'postgres://postgres@127.0.0.1:5432/test' }), {
          database: own.database,
          ...testLogging(),
        }),
        (e: Error) => e instanceof ConfigError && /^DATABASE_REPLICA_URL is for PostgreSQL only/.test(e.message),
      );
    });
    return;
  }

  it('the 4.1 list reads the replica (filled differently, to tell); its nonce, tradeQuery and cardQuery the primary; /readyz reports it', async (t) => {
    // The "replica": another database of the same schema, with none of the primary's rows to begin with.
    const replica = await isolatedDatabase(dialect);
    t.after(() => replica.cleanup());
    await migrateToLatest(replica.database);
    // A statement bound, so that a replica that stops answering fails the read within a second.
    const h = await build(t, dialect, { databaseReplicaUrl: childDatabaseUrl(replica), pgStatementTimeoutMs: 1000 });
    const { cardId } = await fundedCard(h, { topUp: 50 });
    const auth = await ok(h, '/sandbox/network/authorize', { cardId, amount: 5, remark: 'on the primary' });
    const body = { cardId, beginDate: today(), endDate: today(), start: 0, maxSize: 30 };

    // The card is read on the primary (found), its records on the replica (none there yet).
    const empty = await h.call(LIST, { ...body, randomStr: randomStr() });
    assert.equal(empty.status, 200, JSON.stringify(empty.body));
    assert.deepEqual(empty.body, { total: 0, tradeList: [] });

    // The replica catches up, with one difference of its own to tell where an answer came from.
    await replica.database.withTx(async (tx) => {
      await sql`set local session_replication_role = replica`.execute(tx);
      await sql`insert into trades select * from ${sql.table(`${h.db.pgSchema}.trades`)}`.execute(tx);
      await sql`insert into trade_day_counts select * from ${sql.table(`${h.db.pgSchema}.trade_day_counts`)}`.execute(tx);
      await sql`update trades set remark = 'on the replica' where id = ${auth.tradeId}`.execute(tx);
    });
    const nonce = randomStr();
    const listed = await h.call(LIST, { ...body, randomStr: nonce });
    assert.equal(listed.body.total, 2);
    assert.deepEqual(
      listed.body.tradeList.map((x: { tradeId: string; remark: string }) => [x.tradeId, x.remark]),
      [
        [auth.tradeId, 'on the replica'],
        [listed.body.tradeList[1].tradeId, 'Top-up'],
      ],
    );
    // Its randomStr was spent on the primary: the same request again is 1008.
    const again = await h.call(LIST, { ...body, randomStr: nonce });
    assert.deepEqual([again.status, again.body.code], [409, '1008']);
    assert.equal(
      Number(
        (
          await h.db.database.db
            .selectFrom('idempotency_keys')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('random_str', '=', nonce)
            .executeTakeFirstOrThrow()
        ).n,
      ),
      1,
    );
    // A read by id (read-your-write after an authorization) and the balance read the primary (the
    // replica has no card rows at all: cardQuery would not find the card there).
    const query = await ok(h, '/api/network/tradeQuery.html', { tradeId: auth.tradeId });
    assert.equal(query.trade.remark, 'on the primary');
    const card = await ok(h, '/api/network/cardQuery.html', { cardId });
    assert.equal(card.cardId, cardId);

    // The replica stops answering under the read (a lock held there; a failover, a cancelled
    // query would do the same): the primary answers it, with its own record.
    const blocker = new pg.Client({ connectionString: childDatabaseUrl(replica) });
    await blocker.connect();
    t.after(() => blocker.end());
    await blocker.query('begin');
    await blocker.query('lock table trades in access exclusive mode');
    const fallback = await h.call(LIST, { ...body, randomStr: randomStr() });
    await blocker.query('rollback');
    assert.equal(fallback.status, 200, JSON.stringify(fallback.body));
    assert.deepEqual(
      fallback.body.tradeList.map((x: { remark: string }) => x.remark),
      ['on the primary', 'Top-up'],
    );
    assert.equal(
      (await h.call(LIST, { ...body, randomStr: randomStr() })).body.tradeList[0].remark,
      'on the replica',
      'and the replica again',
    );

    const ready = await h.app.inject({ method: 'GET', url: '/readyz' });
    assert.equal(ready.statusCode, 200);
    assert.equal(ready.json().replica.status, 'ready');
    assert.ok(ready.json().replica.lagMs >= 0);
    // Nothing else changes without the variable: /readyz of a service without a replica says nothing of one.
    const plain = await build(t, dialect);
    assert.deepEqual((await plain.app.inject({ method: 'GET', url: '/readyz' })).json(), { status: 'ready', database: 'postgres' });
    assert.equal(plain.app.svc.replica, null);
    assert.equal(plain.app.svc.reads(), plain.db.database.db);
  });

  it('a replica that does not answer: the service starts, /readyz says so (200), and the list reads the primary', async (t) => {
    const h = await build(t, dialect, { databaseReplicaUrl: 'postgres://postgres@127.0.0.1:1/test' });
    const { cardId } = await fundedCard(h, { topUp: 20 });
    const ready = await h.app.inject({ method: 'GET', url: '/readyz' });
    assert.equal(ready.statusCode, 200);
    assert.deepEqual(ready.json(), { status: 'ready', database: 'postgres', replica: { status: 'unavailable', lagMs: null } });
    const listed = await h.call(LIST, { cardId, beginDate: today(), endDate: today(), start: 0, randomStr: randomStr() });
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
    assert.equal(listed.body.total, 1, 'the top-up, from the primary');
  });
});
