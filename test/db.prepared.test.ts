// PostgreSQL's prepared statements (src/db/index.ts): a statement with parameters is parsed and
// planned once per connection, under a name of its text; a table changed under one (a migration
// beside a serving process) costs no request.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CompiledQuery, sql } from 'kysely';
import pg from 'pg';
import { openDatabase } from '../src/db/index.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { discardingDeadClients } from '../src/db/pg-prepared.js';
import { precompiled, preparedText, type Slots } from '../src/db/prepared.js';
import { isolatedDatabase } from './helpers/db.js';
import { PG, PG_SKIP } from './helpers/db-faults.js';
import { eachDialect } from './helpers/dialects.js';

async function onePooledConnection(t: import('node:test').TestContext, pgPrepared = true) {
  const isolated = await isolatedDatabase(PG as NonNullable<typeof PG>);
  t.after(() => isolated.cleanup());
  // One connection: what the session has prepared is what the next statement finds.
  const database = openDatabase(isolated.url, { pgSchema: isolated.pgSchema as string, pgPoolSize: 1, pgPrepared });
  t.after(() => database.close());
  await migrateToLatest(database);
  const prepared = async () =>
    (await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`.execute(database.db)).rows;
  return { database, prepared };
}

describe('prepared statements on PostgreSQL', () => {
  it('a statement the code marks is prepared once on its connection and then executed by name; any other is sent unnamed', {
    skip: PG_SKIP,
  }, async (t) => {
    const { database, prepared } = await onePooledConnection(t);
    const byKey = precompiled((d, slot: Slots<{ id: string }>) =>
      d.selectFrom('merchants').select(['id', 'status']).where('id', '=', slot('id')),
    );
    const read = async (id: string) => (await byKey.execute(database.db, { id })).rows;
    await read('mch_none');
    const once = (await prepared()).filter((p) => p.statement.includes('select "id", "status" from "merchants" where "id" = $1'));
    assert.equal(once.length, 1, JSON.stringify(await prepared()));
    await read('mch_other');
    await read('mch_third');
    const after = (await prepared()).filter((p) => p.statement.includes('select "id", "status" from "merchants" where "id" = $1'));
    assert.deepEqual(after, once, 'the same name, not one more per execution');
    // A search built as usual (its best plan depends on its values): planned for each call, unnamed.
    for (const email of ['a@example.com', 'b@example.com'])
      await database.db.selectFrom('operators').select('id').where('email', '=', email).execute();
    assert.ok(
      (await prepared()).every((p) => !/^(begin|commit|select name, statement)/i.test(p.statement) && !p.statement.includes('"operators"')),
      JSON.stringify(await prepared()),
    );
  });

  it('a connection keeps at most 200: the least recently used go, the hot ones stay, whatever texts come', { skip: PG_SKIP }, async (t) => {
    const { database, prepared } = await onePooledConnection(t);
    const hotQuery = precompiled((d, slot: Slots<{ id: string }>) => d.selectFrom('merchants').select('id').where('id', '=', slot('id')));
    const hot = async () => (await hotQuery.execute(database.db, { id: 'mch_hot' })).rows;
    // 300 marked texts of another shape each, the hot statement used between them.
    for (let n = 1; n <= 300; n++) {
      const ids = Array.from({ length: n }, (_, i) => `mch_${i}`);
      const some = precompiled((d) => d.selectFrom('merchants').select('id').where('id', 'in', ids));
      await some.execute(database.db, {});
      if (n % 20 === 0) await hot();
    }
    const kept = await prepared();
    // The listing itself has no parameters: it is not among them.
    assert.ok(kept.length <= 200, `${kept.length} kept`);
    assert.ok(kept.length >= 150, `${kept.length} kept: the room is used`);
    assert.equal(kept.filter((p) => p.statement.includes('"id" = $1')).length, 1, 'the hot statement stayed prepared');
    assert.ok(!kept.some((p) => p.statement.includes('"id" in ($1)')), 'the oldest, unused since, went');
    assert.deepEqual((await hot()).length, 0);
  });

  it('CARDPROGRAM_PG_PREPARED=off: every statement unnamed (a pooler that does not keep them)', { skip: PG_SKIP }, async (t) => {
    const { database, prepared } = await onePooledConnection(t, false);
    const byKey = precompiled((d, slot: Slots<{ id: string }>) => d.selectFrom('merchants').select('status').where('id', '=', slot('id')));
    for (let i = 0; i < 3; i++) await byKey.execute(database.db, { id: `mch_${i}` });
    assert.deepEqual(await prepared(), []);
  });

  it('a table whose columns change under a prepared statement: the next one succeeds, in a transaction or not', {
    skip: PG_SKIP,
  }, async (t) => {
    const { database, prepared } = await onePooledConnection(t);
    // Marked texts of this test's own (the names are the process's): a select * outside a transaction
    // and one inside.
    const outsideText = preparedText('select * from operators where email = $1');
    const insideText = preparedText('select * from operators where email = $1 for update');
    const outside = () => database.db.executeQuery(CompiledQuery.raw(outsideText, ['probe-outside@example.com']));
    let runs = 0;
    const inside = () =>
      database.withTx(async (tx) => {
        runs++;
        return tx.executeQuery(CompiledQuery.raw(insideText, ['probe-inside@example.com']));
      });
    await outside();
    await inside();
    assert.equal((await prepared()).filter((p) => p.statement.includes('select * from operators')).length, 2);

    await sql`alter table operators add column probe integer`.execute(database.db);
    runs = 0;
    await outside(); // would fail with 0A000 ("cached plan must not change result type") were it sent by name again
    await inside();
    assert.equal(runs, 2, 'the transaction met the changed table once, and ran again unprepared');
    // Both run unprepared from now on: no error on the next ones.
    await outside();
    runs = 0;
    await inside();
    assert.equal(runs, 1);
  });

  it('a transaction’s BEGIN goes with its first statement: one round trip, the statement inside the transaction; a client left after a lone BEGIN is not handed out again', {
    skip: PG_SKIP,
  }, async (t) => {
    const { database } = await onePooledConnection(t);
    // The first statement runs inside the transaction BEGIN opened (its xid is the transaction's).
    const ids = await database.withTx(async (tx) => {
      const b = (await sql<{ x: string }>`select txid_current()::text as x`.execute(tx)).rows[0]?.x;
      const c = (await sql<{ x: string }>`select txid_current()::text as x`.execute(tx)).rows[0]?.x;
      return { b, c };
    });
    assert.equal(ids.b, ids.c, 'the first statement and the next are in one transaction');
    // A rolled-back transaction leaves nothing, its first statement included (sent with the BEGIN).
    await database.db.schema.createTable('pipelined_probe').addColumn('v', 'integer').execute();
    await assert.rejects(
      database.withTx(async (tx) => {
        await sql`insert into pipelined_probe (v) values (1)`.execute(tx);
        throw new Error('rolled back');
      }),
    );
    assert.equal((await sql<{ n: number }>`select count(*)::int as n from pipelined_probe`.execute(database.db)).rows[0]?.n, 0);
    // A BEGIN released without its transaction (never done by Kysely): the client is dropped.
    const raw = new pg.Pool({ connectionString: PG?.url, max: 1, pipeline: true } as pg.PoolConfig);
    t.after(() => raw.end());
    const pool = discardingDeadClients(raw, true);
    const first = await pool.connect();
    await first.query('begin', []);
    first.release();
    assert.equal(raw.totalCount, 0, 'the client that began is discarded');
    const next = await pool.connect();
    await next.query('select 1', []);
    next.release();
    assert.equal(raw.totalCount, 1, 'a client that ran a statement on its own is kept');
  });
});

eachDialect('queries built once (src/db/prepared.ts)', (dialect) => {
  it('a precompiled query runs with each call’s values, keeps the constants of its build, and is the SQL Kysely builds', async (t) => {
    const isolated = await isolatedDatabase(dialect);
    t.after(() => isolated.cleanup());
    const { db } = isolated.database;
    await migrateToLatest(isolated.database);
    const insert = precompiled((d, slot: Slots<{ id: string; tokens: number; at: number }>) =>
      d
        .insertInto('rate_buckets')
        .values({ merchant_id: slot('id'), tokens: slot('tokens'), refilled_at: slot('at') })
        .onConflict((oc) => oc.column('merchant_id').doNothing()),
    );
    const read = precompiled((d, slot: Slots<{ prefix: string }>) =>
      d
        .selectFrom('rate_buckets')
        .select(['merchant_id', 'tokens'])
        .where('merchant_id', 'like', slot('prefix'))
        .where('tokens', '!=', 7)
        .orderBy('merchant_id'),
    );
    assert.equal((await insert.execute(db, { id: 'probe_a', tokens: 1, at: 1 })).numAffectedRows, 1n);
    assert.equal((await insert.execute(db, { id: 'probe_b', tokens: 7, at: 2 })).numAffectedRows, 1n);
    assert.equal((await insert.execute(db, { id: 'probe_c', tokens: 3, at: 3 })).numAffectedRows, 1n);
    assert.equal((await insert.execute(db, { id: 'probe_a', tokens: 4, at: 4 })).numAffectedRows, 0n, 'on conflict do nothing, as built');
    assert.deepEqual((await read.execute(db, { prefix: 'probe%' })).rows, [
      { merchant_id: 'probe_a', tokens: 1 },
      { merchant_id: 'probe_c', tokens: 3 },
    ]);
    assert.deepEqual((await read.execute(db, { prefix: 'probe_c%' })).rows, [{ merchant_id: 'probe_c', tokens: 3 }]);
    // In a transaction too, and the SQL is what the builder makes, with the dialect's placeholders.
    await isolated.database.withTx(async (tx) => {
      assert.deepEqual((await read.execute(tx, { prefix: 'probe_a' })).rows, [{ merchant_id: 'probe_a', tokens: 1 }]);
    });
    const built = db
      .selectFrom('rate_buckets')
      .select(['merchant_id', 'tokens'])
      .where('merchant_id', 'like', 'x')
      .where('tokens', '!=', 7);
    assert.equal(read.sql(db), built.orderBy('merchant_id').compile().sql);
  });
});
