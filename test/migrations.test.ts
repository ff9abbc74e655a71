import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Kysely } from 'kysely';
import { migrateToLatest } from '../src/db/migrate.js';
import { checkLedger } from '../src/ledger/check.js';
import { fundMerchant } from '../src/ledger/funding.js';
import { runVerb } from '../src/runner.js';
import { build, randomStr } from './helpers/app.js';
import { fundedCard, ok } from './helpers/cards.js';
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

  it('2026_11_25_0017_money_accounted: the statement of every movement before it is written from the journal; the codes used are claimed', async (t) => {
    const h = await build(t, dialect);
    await runVerb(h.app.svc, fundMerchant, {
      input: { appId: h.merchant.appId, currency: 'EUR', amount: '-5', reference: 'correction' },
      actor: 'alice',
    });
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const auth = await ok(h, '/sandbox/network/authorize', { cardId, amount: 30 });
    await ok(h, '/api/network/cardClose.html', { cardId });
    await ok(h, '/sandbox/network/reverse', { tradeId: auth.tradeId });
    const statement = async () =>
      (await h.call('/api/network/merchantFundingList.html', { currency: 'EUR', randomStr: randomStr() })).body.model.movements;
    const live = await statement();
    assert.deepEqual(
      live.map((l: { kind: string }) => l.kind),
      ['credit', 'debit', 'topUp', 'cardClose', 'release'],
    );
    // The database as it was before 0017.
    const db = h.db.database.db as unknown as Kysely<any>;
    await db.schema.dropTable('funding_movements').execute();
    await db.schema.dropTable('trade_auth_codes').execute();
    await db.schema.dropIndex('funding_credits_key').execute();
    await db.schema.dropIndex('funding_credits_repeat').execute();
    await db.schema.alterTable('funding_credits').dropColumn('idempotency_key').execute();
    await db.schema.alterTable('merchant_balances').dropColumn('seq').execute();
    await db.deleteFrom('cardprogram_migrations').where('name', '=', '2026_11_25_0017_money_accounted').execute();

    assert.deepEqual(await migrateToLatest(h.db.database), ['2026_11_25_0017_money_accounted']);
    assert.deepEqual(await statement(), live, 'the same lines, numbers and balances as those written as it happened');
    const codes = await h.db.database.db.selectFrom('trade_auth_codes').select(['auth_code']).where('card_id', '=', cardId).execute();
    assert.equal(codes.length, 3, 'the top-up’s, the authorization’s (shared by its reversal), the close’s');
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
    // And on from there: the next movement is line 6.
    await fundedCard(h, { topUp: 1 });
    assert.equal((await statement()).at(-1).seq, 6);
  });
});
