// PostgreSQL's prepared statements (src/db/index.ts): a statement with parameters is parsed and
// planned once per connection, under a name of its text; a table changed under one (a migration
// beside a serving process) costs no request.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../src/db/index.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { isolatedDatabase } from './helpers/db.js';
import { PG } from './helpers/db-faults.js';

async function onePooledConnection(t: import('node:test').TestContext) {
  const isolated = await isolatedDatabase(PG as NonNullable<typeof PG>);
  t.after(() => isolated.cleanup());
  // One connection: what the session has prepared is what the next statement finds.
  const database = openDatabase(isolated.url, { pgSchema: isolated.pgSchema as string, pgPoolSize: 1 });
  t.after(() => database.close());
  await migrateToLatest(database);
  const prepared = async () =>
    (await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`.execute(database.db)).rows;
  return { database, prepared };
}

describe('prepared statements on PostgreSQL', () => {
  it('a statement with parameters is prepared once on its connection and then executed by name; one without is not', {
    skip: !PG,
  }, async (t) => {
    const { database, prepared } = await onePooledConnection(t);
    const read = (id: string) => database.db.selectFrom('merchants').select(['id', 'status']).where('id', '=', id).execute();
    await read('mch_none');
    const once = (await prepared()).filter((p) => p.statement.includes('from "merchants" where "id" = $1'));
    assert.equal(once.length, 1, JSON.stringify(await prepared()));
    await read('mch_other');
    await read('mch_third');
    const after = (await prepared()).filter((p) => p.statement.includes('from "merchants" where "id" = $1'));
    assert.deepEqual(after, once, 'the same name, not one more per execution');
    assert.ok(
      (await prepared()).every((p) => !/^(begin|commit|select name, statement)/i.test(p.statement)),
      'statements without parameters are sent unnamed',
    );
  });

  it('a table whose columns change under a prepared statement: the next one succeeds, in a transaction or not', {
    skip: !PG,
  }, async (t) => {
    const { database, prepared } = await onePooledConnection(t);
    // Texts of this test's own (the names are the process's): a select * outside a transaction and
    // one inside.
    const outside = () =>
      sql<Record<string, unknown>>`select * from operators where email = ${'probe-outside@example.com'}`.execute(database.db);
    const inside = () =>
      database.withTx(async (tx) => {
        runs++;
        return sql<Record<string, unknown>>`select * from operators where email = ${'probe-inside@example.com'} for update`.execute(tx);
      });
    let runs = 0;
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
});
