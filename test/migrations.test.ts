import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Kysely } from 'kysely';
import { migrateToLatest } from '../src/db/migrate.js';
import { build, randomStr } from './helpers/app.js';
import { fundedCard } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';

eachDialect('migrations on data', (dialect) => {
  it('2026_11_23_0008_card_status_source: a card frozen before sources were recorded counts as frozen by the operator; an active one has none', async (t) => {
    const h = await build(t, dialect);
    const frozen = await fundedCard(h);
    const active = await fundedCard(h);
    // The database as it was before 0008: no source columns, a frozen card.
    const db = h.db.database.db as unknown as Kysely<any>;
    await db.schema.alterTable('cards').dropColumn('status_source').execute();
    await db.schema.alterTable('cards').dropColumn('status_reason').execute();
    await db.deleteFrom('cardprogram_migrations').where('name', '=', '2026_11_23_0008_card_status_source').execute();
    await db.updateTable('cards').set({ status: 'frozen' }).where('id', '=', frozen.cardId).execute();

    assert.deepEqual(await migrateToLatest(h.db.database), ['2026_11_23_0008_card_status_source']);
    const rows = await h.db.database.db
      .selectFrom('cards')
      .select(['id', 'status', 'status_source', 'status_reason'])
      .orderBy('id')
      .execute();
    assert.deepEqual(
      rows.map((r) => [r.id, r.status, r.status_source, r.status_reason]).sort(),
      [
        [frozen.cardId, 'frozen', 'operator', null],
        [active.cardId, 'active', null, null],
      ].sort(),
    );
    // Only the operator lifts it now: the merchant (or its cardholder) gets 2727.
    const r = await h.call('/api/network/cardUnfreeze.html', { cardId: frozen.cardId, randomStr: randomStr() });
    assert.deepEqual([r.status, r.body.code], [409, '2727']);
  });
});
