import assert from 'node:assert/strict';
import { it } from 'node:test';
import { sql } from 'kysely';
import { build } from './helpers/app.js';
import { fundedCard } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';

// Issue 15, item 4: a transaction PostgreSQL picked as a deadlock's victim (40P01) or found not
// serializable (40001) is run again inside withTx, a bounded number of times, before any 503.
eachDialect('transaction retry on a lost conflict', (dialect) => {
  const pgOnly = dialect.name === 'postgres' ? false : 'PostgreSQL only: SQLite runs one writer at a time and never deadlocks';

  it('two transactions locking two cards in opposite orders both commit: the deadlock’s victim runs again', { skip: pgOnly }, async (t) => {
    const h = await build(t, dialect);
    const a = (await fundedCard(h)).cardId;
    const b = (await fundedCard(h)).cardId;
    let runs = 0;
    const lockBoth = (first: string, second: string) =>
      h.db.database.withTx(async (tx) => {
        runs++;
        await sql`select id from cards where id = ${first} for update`.execute(tx);
        await sql`select pg_sleep(0.2)`.execute(tx);
        await sql`select id from cards where id = ${second} for update`.execute(tx);
        await tx.updateTable('cards').set({ updated_at: Date.now() }).where('id', 'in', [a, b]).execute();
        return `${first}→${second}`;
      });
    assert.deepEqual(await Promise.all([lockBoth(a, b), lockBoth(b, a)]), [`${a}→${b}`, `${b}→${a}`]);
    assert.ok(runs >= 3, `one of them lost the deadlock and ran again (${runs} runs)`);
  });

  it('a conflict that persists fails after 6 tries with its own error; other errors are not retried', { skip: pgOnly }, async (t) => {
    const h = await build(t, dialect);
    let runs = 0;
    const conflict = Object.assign(new Error('could not serialize access'), { code: '40001' });
    await assert.rejects(
      h.db.database.withTx(async () => {
        runs++;
        throw conflict;
      }),
      (err) => err === conflict,
    );
    assert.equal(runs, 6);
    runs = 0;
    const unique = Object.assign(new Error('duplicate key'), { code: '23505' });
    await assert.rejects(
      h.db.database.withTx(async () => {
        runs++;
        throw unique;
      }),
      (err) => err === unique,
    );
    assert.equal(runs, 1);
  });
});
