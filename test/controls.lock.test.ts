import assert from 'node:assert/strict';
import { it } from 'node:test';
import { sql } from 'kysely';
import { build, type Harness, randomStr } from './helpers/app.js';
import { fundedCard } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';

// Issue 31: an authorization reads its card (locked), its codes and its cardholder's controls in one
// statement on PostgreSQL. A statement that waits for the card's lock reads the other tables as they
// were when it began; a controls change updates the card's row, so the authorization sees its card
// changed while it waited and reads the controls again. These tests hold the card's lock from another
// transaction while the authorization waits for it (PostgreSQL only: on SQLite another connection's
// lock stalls the whole process, and one writer at a time leaves nothing to interleave).

const pgOnly = (name: string) =>
  name === 'postgres' ? false : 'PostgreSQL only: on SQLite the one writer at a time leaves no authorization waiting for a lock';

/** Waits until some statement of this database waits for a lock (the authorization, at the card). */
async function untilWaitingForALock(h: Harness): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`.execute(h.db.database.db);
    if ((rows[0]?.n ?? 0) > 0) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('no statement ever waited for a lock');
}

/** The cardholder's controls as the service stores them: set on a throwaway cardholder through the API, read back. */
async function storedLimit(h: Harness, amount: number): Promise<string> {
  const other = await fundedCard(h);
  const set = await h.call('/api/network/cardControlsUpdate.html', {
    holderId: other.holderId,
    controls: { spendingLimits: [{ amount, interval: 'daily' }] },
    randomStr: randomStr(),
  });
  assert.equal(set.status, 200, JSON.stringify(set.body));
  const row = await h.db.database.db
    .selectFrom('cardholders')
    .select('controls')
    .where('id', '=', other.holderId)
    .executeTakeFirstOrThrow();
  return row.controls as string;
}

eachDialect('an authorization and a controls change that commits while it waits for the card (issue 31)', (dialect) => {
  it('a cardholder limit committed while the authorization waited for its card is applied: 2728, nothing held', {
    skip: pgOnly(dialect.name),
  }, async (t) => {
    const h = await build(t, dialect);
    const { cardId, holderId } = await fundedCard(h, { topUp: 100 });
    const limit = await storedLimit(h, 10);
    let release: () => void = () => undefined;
    const released = new Promise<void>((r) => {
      release = r;
    });
    let locked: () => void = () => undefined;
    const holding = new Promise<void>((r) => {
      locked = r;
    });
    // As src/controls/update.ts does for a cardholder: its controls, then each of its cards' rows,
    // here with the card locked first so that the authorization waits for this transaction.
    const change = h.db.database.db.transaction().execute(async (tx) => {
      await sql`select id from cards where id = ${cardId} for update`.execute(tx);
      locked();
      await released;
      await tx.updateTable('cardholders').set({ controls: limit, updated_at: Date.now() }).where('id', '=', holderId).execute();
      await tx.updateTable('cards').set({ updated_at: Date.now() }).where('holder_id', '=', holderId).execute();
    });
    await holding;
    const available = async () =>
      Number(
        (await h.db.database.db.selectFrom('cards').select('available_balance').where('id', '=', cardId).executeTakeFirstOrThrow())
          .available_balance,
      );
    const before = await available();
    const pending = h.call('/sandbox/network/authorize', { cardId, amount: 50, randomStr: randomStr() });
    await untilWaitingForALock(h);
    release();
    await change;
    const res = await pending;
    assert.notEqual(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.code, '2728', JSON.stringify(res.body));
    assert.equal(res.body.detail?.declineReason, 'spending_limit');
    assert.equal(await available(), before, 'nothing held');
  });

  it('a cardholder’s controls change updates the row of each of its cards (what the authorization watches)', {
    skip: pgOnly(dialect.name),
  }, async (t) => {
    const h = await build(t, dialect);
    const { cardId, holderId } = await fundedCard(h, { topUp: 100 });
    const version = async () =>
      (await sql<{ v: string }>`select xmin::text as v from cards where id = ${cardId}`.execute(h.db.database.db)).rows[0]?.v;
    const before = await version();
    const set = await h.call('/api/network/cardControlsUpdate.html', {
      holderId,
      controls: { spendingLimits: [{ amount: 10, interval: 'daily' }] },
      randomStr: randomStr(),
    });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    assert.notEqual(await version(), before);
    const res = await h.call('/sandbox/network/authorize', { cardId, amount: 50, randomStr: randomStr() });
    assert.equal(res.body.detail?.declineReason, 'spending_limit', JSON.stringify(res.body));
  });
});
