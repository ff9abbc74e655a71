import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Kysely } from 'kysely';
import { migrateToLatest } from '../../src/db/migrate.js';
import { build, type Harness, randomStr } from '../helpers/app.js';
import { fundedCard, ok, todaysTrades } from '../helpers/cards.js';
import { eachDialect } from '../helpers/dialects.js';

const N = '/sandbox/network';
const QUERY = '/api/network/tradeQuery.html';
const ACCEPTOR = { mcc: '5411', merchantName: 'Corner Grocery', merchantCity: 'Berlin', merchantCountry: 'DE', channel: 'pos' };

async function events(h: Harness, type: string) {
  const rows = await h.db.database.db
    .selectFrom('callback_events')
    .select('payload')
    .where('type', '=', type)
    .orderBy('created_at')
    .execute();
  return rows.map((r) => JSON.parse(r.payload));
}

async function listed(h: Harness, cardId: string) {
  return todaysTrades(h, cardId, { tradeStatusList: [1, 2, 3, 6, 7, 10] });
}

eachDialect('authorizations: the acceptor, the decision, tradeQuery', (dialect) => {
  it('an approved authorization keeps the acceptor: tradeQuery and the trade callback carry it, the 4.1 record keeps its 12 fields', async (t) => {
    const h = await build(t, dialect);
    await h.db.database.db.updateTable('merchants').set({ notify_url: 'http://127.0.0.1:9/hooks' }).execute();
    const { cardId, cardNo } = await fundedCard(h, { topUp: 50 });
    const auth = await ok(h, `${N}/authorize`, { cardId, amount: 4.2, remark: 'Groceries', ...ACCEPTOR });
    assert.equal(Object.keys(auth).length, 12, 'the answer is the 4.1 record');

    const q = await h.call(QUERY, { tradeId: auth.tradeId, randomStr: randomStr() });
    assert.equal(q.status, 200, JSON.stringify(q.body));
    assert.deepEqual(q.body.model.trade, auth);
    const a = q.body.model.authorization;
    assert.deepEqual(
      { ...a, createdAt: typeof a.createdAt },
      {
        id: auth.tradeId,
        cardId,
        cardNo,
        currency: 'EUR',
        amount: 4.2,
        currencyTxn: 'EUR',
        txnAmount: 4.2,
        merchant: { mcc: '5411', name: 'Corner Grocery', city: 'Berlin', country: 'DE' },
        channel: 'pos',
        decision: { approved: true, declineReason: null, code: null, message: 'Approved', endpoint: null },
        remark: 'Groceries',
        createdAt: 'string',
      },
    );
    assert.match(a.createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);

    const [event] = (await events(h, 'trade')).filter((e) => e.tradeId === auth.tradeId);
    assert.deepEqual(event.authorization, a, 'the trade callback carries the same authorization');
    const [listedAuth] = (await listed(h, cardId)).filter((r) => r.tradeId === auth.tradeId);
    assert.deepEqual(listedAuth, auth, 'the 4.1 list is unchanged: 12 fields, no acceptor');

    // The records the authorization settles into are plain records: no authorization of their own.
    const pay = await ok(h, `${N}/clear`, { tradeId: auth.tradeId });
    const qp = await h.call(QUERY, { tradeId: pay.tradeId, randomStr: randomStr() });
    assert.deepEqual(qp.body.model, { trade: pay, authorization: null, authentication: null, token: null, network: null });
    // Without acceptor data (the interface's sample body) every acceptor field is null.
    const bare = await ok(h, `${N}/authorize`, { cardId, amount: 1 });
    const qb = await h.call(QUERY, { tradeId: bare.tradeId, randomStr: randomStr() });
    assert.deepEqual(
      [qb.body.model.authorization.merchant, qb.body.model.authorization.channel],
      [{ mcc: null, name: null, city: null, country: null }, null],
    );
  });

  it('without a remark the record’s remark is the merchant’s name and city, as over the link; a remark sent is kept', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 50 });
    const auth = await ok(h, `${N}/authorize`, { cardId, amount: 4.2, ...ACCEPTOR });
    assert.equal(auth.remark, 'Corner Grocery, Berlin');
    const nameOnly = await ok(h, `${N}/authorize`, { cardId, amount: 1, merchantName: 'Kiosk' });
    assert.equal(nameOnly.remark, 'Kiosk');
    const given = await ok(h, `${N}/authorize`, { cardId, amount: 1, remark: 'Coffee', ...ACCEPTOR });
    assert.equal(given.remark, 'Coffee');
    const bare = await ok(h, `${N}/authorize`, { cardId, amount: 1 });
    assert.equal(bare.remark, '');
    const byId = new Map((await listed(h, cardId)).map((r) => [r.tradeId, r.remark]));
    assert.equal(byId.get(auth.tradeId), 'Corner Grocery, Berlin', 'the 4.1 list shows the merchant');
    const pay = await ok(h, `${N}/clear`, { tradeId: auth.tradeId });
    assert.equal(pay.remark, 'Corner Grocery, Berlin', 'its payment keeps it');
    const q = await h.call(QUERY, { tradeId: auth.tradeId, randomStr: randomStr() });
    assert.equal(q.body.model.authorization.remark, 'Corner Grocery, Berlin');
  });

  it('a declined authorization is readable by its id, sent as authorization.declined, and never listed', async (t) => {
    const h = await build(t, dialect);
    await h.db.database.db.updateTable('merchants').set({ notify_url: 'http://127.0.0.1:9/hooks' }).execute();
    const { cardId } = await fundedCard(h, { topUp: 10 });
    const cases = [
      { body: { amount: 10.01 }, code: '2725', reason: 'insufficient_funds' },
      { freeze: true, body: { amount: 1 }, code: '2724', reason: 'card_inactive' },
    ];
    for (const c of cases) {
      if (c.freeze) await h.db.database.db.updateTable('cards').set({ status: 'frozen' }).where('id', '=', cardId).execute();
      const body = { cardId, ...ACCEPTOR, ...c.body, randomStr: randomStr() };
      const res = await h.call(`${N}/authorize`, body);
      assert.deepEqual([res.status, res.body.code, res.body.detail?.declineReason], [409, c.code, c.reason]);
      const id = res.body.detail.tradeId as string;
      assert.match(id, /^dcl_/);

      const q = await h.call(QUERY, { tradeId: id, randomStr: randomStr() });
      assert.equal(q.status, 200, JSON.stringify(q.body));
      assert.equal(q.body.model.trade, null, 'a decline is not a listed trade');
      const a = q.body.model.authorization;
      assert.deepEqual(
        [a.id, a.cardId, a.amount, a.merchant.mcc, a.channel, a.decision.approved, a.decision.declineReason, a.decision.code],
        [id, cardId, c.body.amount, '5411', 'pos', false, c.reason, c.code],
      );
      assert.equal(a.decision.message, res.body.msg);

      const [event] = (await events(h, 'authorization.declined')).filter((e) => e.authorization.id === id);
      assert.deepEqual(event.authorization, a, 'the callback carries what tradeQuery reads');

      // A retry with the same randomStr is the same decline: same id, nothing recorded again.
      const again = await h.call(`${N}/authorize`, body);
      assert.deepEqual([again.body.code, again.body.detail, again.headers['x-idempotent-replay']], [c.code, res.body.detail, 'true']);
      // The same randomStr with another body is 1008 and tells nothing of the decline.
      const other = await h.call(`${N}/authorize`, { ...body, amount: 0.5 });
      assert.deepEqual([other.status, other.body.code, other.body.detail], [409, '1008', undefined]);
    }
    const declined = await h.db.database.db.selectFrom('authorizations').select('id').where('approved', '=', 0).execute();
    assert.equal(declined.length, 2);
    assert.equal((await events(h, 'authorization.declined')).length, 2);
    assert.deepEqual(
      (await listed(h, cardId)).map((r) => r.tradeType),
      [100],
      'only the top-up is listed',
    );
  });

  it('without a notify URL a decline is recorded but no callback is written', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 1 });
    const res = await h.call(`${N}/authorize`, { cardId, amount: 5, randomStr: randomStr() });
    assert.equal(res.body.code, '2725');
    assert.equal((await events(h, 'authorization.declined')).length, 0);
    const q = await h.call(QUERY, { tradeId: res.body.detail.tradeId, randomStr: randomStr() });
    assert.equal(q.body.model.authorization.decision.declineReason, 'insufficient_funds');
  });

  it('every bad acceptor field is 1002 naming it, and nothing is written', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 10 });
    const bad: Array<[string, unknown, RegExp]> = [
      ['mcc', '541', /^mcc: must be a merchant category code/],
      ['mcc', '54a1', /^mcc: /],
      ['mcc', 5411, /^mcc: /],
      ['merchantName', '', /^merchantName: must be 1 to 100 characters/],
      ['merchantName', 'x'.repeat(101), /^merchantName: /],
      ['merchantCity', 'y'.repeat(41), /^merchantCity: /],
      ['merchantCountry', 'de', /^merchantCountry: must be an ISO 3166-1 alpha-2/],
      ['merchantCountry', 'XX', /^merchantCountry: must be an ISO 3166-1 alpha-2/],
      ['channel', 'moto', /^channel: must be ecommerce, pos or atm/],
      ['channel', null, /^channel: /],
    ];
    const count = async () => (await h.db.database.db.selectFrom('authorizations').select('id').execute()).length;
    const before = await count();
    for (const [field, value, msg] of bad) {
      const res = await h.call(`${N}/authorize`, { cardId, amount: 1, [field]: value, randomStr: randomStr() });
      assert.deepEqual([res.status, res.body.code], [400, '1002'], `${field}=${JSON.stringify(value)}`);
      assert.match(res.body.msg, msg, `${field}=${JSON.stringify(value)}`);
    }
    assert.equal(await count(), before, 'a refused request records no authorization');
  });

  it('tradeQuery: another merchant’s authorization, approved or declined, is answered as an unknown id', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 5 });
    const auth = await ok(h, `${N}/authorize`, { cardId, amount: 1 });
    const declined = await h.call(`${N}/authorize`, { cardId, amount: 100, randomStr: randomStr() });
    const other = await h.newMerchant();
    for (const tradeId of [auth.tradeId, declined.body.detail.tradeId, 'trd_doesnotexist']) {
      const res = await h.call(QUERY, { tradeId, randomStr: randomStr() }, { merchant: other });
      assert.deepEqual([res.status, res.body.code, res.body.msg], [409, '2730', 'tradeId: transaction not found'], tradeId);
    }
  });

  it('migration 2026_11_24_0010_authorizations carries the recorded declines and the approvals over', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 5 });
    const auth = await ok(h, `${N}/authorize`, { cardId, amount: 1, remark: 'Kiosk' });
    // The database as it was before 0010: declines in auth_declines, approvals only as trades (and
    // nothing of the migrations after it).
    const db = h.db.database.db as unknown as Kysely<any>;
    await db.schema.dropTable('authorizations').execute();
    await db.schema.dropTable('spend_counters').execute();
    await db.schema.dropTable('authorization_requests').execute();
    for (const [table, column] of [
      ['cards', 'controls'],
      ['cardholders', 'controls'],
      ['merchants', 'authorization_url'],
      ['merchants', 'authorization_timeout_ms'],
      ['merchants', 'authorization_default'],
    ] as const) {
      await db.schema.alterTable(table).dropColumn(column).execute();
    }
    await db.deleteFrom('cardprogram_migrations').where('name', '=', '2026_11_24_0011_controls_and_endpoint').execute();
    await db.schema
      .createTable('auth_declines')
      .addColumn('id', 'varchar(40)', (c) => c.primaryKey())
      .addColumn('merchant_id', 'varchar(32)', (c) => c.notNull())
      .addColumn('card_id', 'varchar(40)', (c) => c.notNull())
      .addColumn('currency', 'varchar(8)', (c) => c.notNull())
      .addColumn('amount', 'bigint', (c) => c.notNull())
      .addColumn('currency_txn', 'varchar(8)', (c) => c.notNull())
      .addColumn('txn_amount', 'bigint', (c) => c.notNull())
      .addColumn('reason_code', 'varchar(8)', (c) => c.notNull())
      .addColumn('reason', 'text', (c) => c.notNull())
      .addColumn('remark', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db
      .insertInto('auth_declines')
      .values({
        id: 'dcl_old',
        merchant_id: h.merchant.appId,
        card_id: cardId,
        currency: 'EUR',
        amount: 900,
        currency_txn: 'EUR',
        txn_amount: 900,
        reason_code: '2725',
        reason: 'amount: more than the available balance',
        remark: 'Old shop',
        created_at: 1_700_000_000_000,
      })
      .execute();
    await db.deleteFrom('cardprogram_migrations').where('name', '=', '2026_11_24_0010_authorizations').execute();

    assert.deepEqual(await migrateToLatest(h.db.database), ['2026_11_24_0010_authorizations', '2026_11_24_0011_controls_and_endpoint']);
    const old = await h.call(QUERY, { tradeId: 'dcl_old', randomStr: randomStr() });
    assert.deepEqual(old.body.model.authorization.decision, {
      approved: false,
      declineReason: 'insufficient_funds',
      code: '2725',
      message: 'amount: more than the available balance',
      endpoint: null,
    });
    assert.deepEqual([old.body.model.authorization.amount, old.body.model.authorization.remark], [9, 'Old shop']);
    const oldRow = await h.db.database.db
      .selectFrom('authorizations')
      .select('business_date')
      .where('id', '=', 'dcl_old')
      .executeTakeFirstOrThrow();
    assert.equal(oldRow.business_date, '2023-11-14', 'listed on the UTC day it was declined');
    const approved = await h.call(QUERY, { tradeId: auth.tradeId, randomStr: randomStr() });
    assert.deepEqual(
      [
        approved.body.model.authorization.decision.approved,
        approved.body.model.authorization.merchant.mcc,
        approved.body.model.authorization.remark,
      ],
      [true, null, 'Kiosk'],
    );
  });
});
