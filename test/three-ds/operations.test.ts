import assert from 'node:assert/strict';
import { it } from 'node:test';
import { BROWSER_DATA_PURGE, purgeBrowserData } from '../../src/three-ds/purge.js';
import { randomStr } from '../helpers/app.js';
import { eachDialect } from '../helpers/dialects.js';
import { acs, card, notifyTo } from './helpers/acs.js';
import { areq, send } from './helpers/ds.js';

eachDialect('3-D Secure: the merchant’s operations (decisions §14.6)', (dialect) => {
  it('threeDsQuery and threeDsList answer the merchant’s authentications, newest first, by card and day, paged', async (t) => {
    const { h, url } = await acs(t, dialect);
    await notifyTo(t, h);
    const c = await card(h);
    const d = await card(h);
    const y = (await send(url, areq({ pan: c.pan, expiry: c.expiry, amount: '1234', merchantName: 'Buchladen' }))).json ?? {};
    const ch = (await send(url, areq({ pan: c.pan, expiry: c.expiry, amount: '9900' }))).json ?? {};
    const other = (await send(url, areq({ pan: d.pan, expiry: d.expiry, amount: '100' }))).json ?? {};
    const q = await h.call('/api/network/threeDsQuery.html', { acsTransID: y.acsTransID, randomStr: randomStr() });
    assert.equal(q.status, 200, JSON.stringify(q.body));
    const m = q.body.model;
    assert.deepEqual(
      {
        acsTransID: m.acsTransID,
        cardId: m.cardId,
        transStatus: m.transStatus,
        transStatusReason: m.transStatusReason,
        eci: m.eci,
        authenticationType: m.authenticationType,
        challengeMethod: m.challengeMethod,
        decidedBy: m.decidedBy,
        merchantName: m.merchantName,
        amount: m.amount,
        currency: m.currency,
        deviceChannel: m.deviceChannel,
        messageCategory: m.messageCategory,
        tradeIds: m.tradeIds,
      },
      {
        acsTransID: y.acsTransID,
        cardId: c.cardId,
        transStatus: 'Y',
        transStatusReason: null,
        eci: '05',
        authenticationType: null,
        challengeMethod: null,
        decidedBy: 'exemption',
        merchantName: 'Buchladen',
        amount: 12.34,
        currency: 'EUR',
        deviceChannel: '02',
        messageCategory: '01',
        tradeIds: [],
      },
    );
    assert.match(m.cardNo, /^424242\*+\d{4}$/);
    assert.equal(m.createdAt, m.completedAt);
    const challenged = (await h.call('/api/network/threeDsQuery.html', { acsTransID: ch.acsTransID, randomStr: randomStr() })).body.model;
    assert.deepEqual(
      [challenged.transStatus, challenged.authenticationType, challenged.challengeMethod, challenged.completedAt],
      ['C', '02', 'otp', null],
    );

    const all = await h.call('/api/network/threeDsList.html', { start: 0, randomStr: randomStr() });
    assert.equal(all.body.model.total, 3);
    assert.deepEqual(
      all.body.model.authentications.map((a: { acsTransID: string }) => a.acsTransID),
      [other.acsTransID, ch.acsTransID, y.acsTransID],
    );
    const mine = await h.call('/api/network/threeDsList.html', { cardId: c.cardId, start: 1, limit: 1, randomStr: randomStr() });
    assert.deepEqual([mine.body.model.total, mine.body.model.authentications[0].acsTransID], [2, y.acsTransID]);
    const today = new Date().toISOString().slice(0, 10);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    assert.equal(
      (await h.call('/api/network/threeDsList.html', { from: today, to: today, start: 0, randomStr: randomStr() })).body.model.total,
      3,
    );
    assert.equal((await h.call('/api/network/threeDsList.html', { from: tomorrow, start: 0, randomStr: randomStr() })).body.model.total, 0);
    const bad = await h.call('/api/network/threeDsList.html', { from: tomorrow, to: today, start: 0, randomStr: randomStr() });
    assert.deepEqual([bad.status, bad.body.code], [400, '1002']);
    const unknown = await h.call('/api/network/threeDsQuery.html', {
      acsTransID: '00000000-0000-4000-8000-000000000000',
      randomStr: randomStr(),
    });
    assert.deepEqual([unknown.status, unknown.body.code], [404, '2750']);
  });

  it('another merchant can neither read an authentication (query, list) nor change this one’s settings', async (t) => {
    const { h, url } = await acs(t, dialect);
    const c = await card(h);
    const y = (await send(url, areq({ pan: c.pan, expiry: c.expiry, amount: '100' }))).json ?? {};
    const stranger = await h.newMerchant();
    const q = await h.call('/api/network/threeDsQuery.html', { acsTransID: y.acsTransID, randomStr: randomStr() }, { merchant: stranger });
    assert.deepEqual([q.status, q.body.code, q.body.model], [404, '2750', null]);
    const list = await h.call(
      '/api/network/threeDsList.html',
      { cardId: c.cardId, start: 0, randomStr: randomStr() },
      { merchant: stranger },
    );
    assert.deepEqual([list.status, list.body.model.total, list.body.model.authentications], [200, 0, []]);
    const all = await h.call('/api/network/threeDsList.html', { start: 0, randomStr: randomStr() }, { merchant: stranger });
    assert.equal(all.body.model.total, 0);
    // Settings are the signer's own: a change by another merchant changes its own, never this one's.
    const changed = await h.call(
      '/api/network/threeDsSettingsUpdate.html',
      { challengeMethod: 'oob', decisionUrl: 'http://127.0.0.1:9/x', randomStr: randomStr() },
      { merchant: stranger },
    );
    assert.equal(changed.status, 200);
    const mine = await h.call('/api/network/threeDsSettingsQuery.html', { randomStr: randomStr() });
    assert.deepEqual(mine.body.model, { decisionUrl: null, challengeMethod: 'otp' });
    // An unsigned or wrongly signed change is refused and writes nothing.
    const forged = await h.call(
      '/api/network/threeDsSettingsUpdate.html',
      { appId: h.merchant.appId, challengeMethod: 'oob', randomStr: randomStr(), sign: 'f'.repeat(64) },
      { raw: true },
    );
    assert.deepEqual([forged.status, forged.body.code], [401, '1006']);
    assert.deepEqual((await h.call('/api/network/threeDsSettingsQuery.html', { randomStr: randomStr() })).body.model, {
      decisionUrl: null,
      challengeMethod: 'otp',
    });
  });

  it('settings: only the fields sent change; the decision URL follows the rules of callback URLs', async (t) => {
    const { h } = await acs(t, dialect);
    const set = (body: Record<string, unknown>) => h.call('/api/network/threeDsSettingsUpdate.html', { ...body, randomStr: randomStr() });
    assert.deepEqual((await set({ decisionUrl: 'https://merchant.example/3ds' })).body.model, {
      decisionUrl: 'https://merchant.example/3ds',
      challengeMethod: 'otp',
    });
    assert.deepEqual((await set({ challengeMethod: 'oob' })).body.model, {
      decisionUrl: 'https://merchant.example/3ds',
      challengeMethod: 'oob',
    });
    for (const bad of ['javascript:alert(1)', 'ftp://merchant.example/', 'https://user:pass@merchant.example/', 'not a url']) {
      const res = await set({ decisionUrl: bad });
      assert.deepEqual([res.status, res.body.code], [400, '1002'], bad);
      assert.match(res.body.msg, /decisionUrl/);
    }
    const method = await set({ challengeMethod: 'sms' });
    assert.deepEqual([method.status, method.body.code], [400, '1002']);
    assert.deepEqual((await set({})).body.model, { decisionUrl: 'https://merchant.example/3ds', challengeMethod: 'oob' });
  });

  it('production refuses a decision URL on plain http or a private address (the SSRF guard)', async (t) => {
    const { h } = await acs(t, dialect, { env: 'production' });
    for (const bad of ['http://merchant.example/3ds', 'https://127.0.0.1/3ds', 'https://10.0.0.8/3ds', 'https://169.254.169.254/latest']) {
      const res = await h.call('/api/network/threeDsSettingsUpdate.html', { decisionUrl: bad, randomStr: randomStr() });
      assert.deepEqual([res.status, res.body.code], [400, '1002'], bad);
    }
    const sandboxOnly = await h.call('/sandbox/3ds/authenticate', { cardId: 'card_x', amount: 1, randomStr: randomStr() });
    assert.equal(sandboxOnly.status, 404);
  });
});

eachDialect('3-D Secure: what is kept', (dialect) => {
  it('the browser’s data is dropped after 30 days by the hourly pass; the rest of the authentication stays; the metrics count outcomes', async (t) => {
    let now = Date.now();
    const { h, url } = await acs(t, dialect, {}, { clock: () => now });
    const c = await card(h);
    const old = (await send(url, areq({ pan: c.pan, expiry: c.expiry, amount: '100' }))).json ?? {};
    now += 29 * 86_400_000;
    const recent = (await send(url, areq({ pan: c.pan, expiry: c.expiry, amount: '100' }))).json ?? {};
    const row = (id: unknown) =>
      h.db.database.db.selectFrom('three_ds_authentications').selectAll().where('acs_trans_id', '=', String(id)).executeTakeFirstOrThrow();
    assert.notEqual((await row(old.acsTransID)).browser, null);
    assert.equal(await purgeBrowserData(h.app.svc, now), 0, 'nothing is 30 days old yet');
    now += 2 * 86_400_000;
    assert.equal(await purgeBrowserData(h.app.svc, now), 1);
    const purged = await row(old.acsTransID);
    assert.deepEqual([purged.browser, purged.trans_status, purged.pan_masked.slice(0, 6)], [null, 'Y', c.pan.slice(0, 6)]);
    assert.notEqual((await row(recent.acsTransID)).browser, null);
    const metrics = await h.app.svc.metrics.text();
    assert.match(metrics, /cardprogram_3ds_authentications_total\{status="Y",reason=""\} 2/);
    assert.match(metrics, /cardprogram_3ds_areq_duration_seconds_count 2/);
    await send(url, { messageType: 'AReq', messageVersion: '9.9.9' });
    assert.match(await h.app.svc.metrics.text(), /cardprogram_3ds_errors_total\{code="102"\} 1/);
  });

  it('the purge is a periodic pass in pages (src/db/sweep.ts): 2,500 authentications past 30 days in three pages, a younger one kept', async (t) => {
    let now = Date.now();
    const { h, url } = await acs(t, dialect, {}, { clock: () => now });
    const c = await card(h);
    const first = (await send(url, areq({ pan: c.pan, expiry: c.expiry, amount: '100' }))).json ?? {};
    const db = h.db.database.db;
    const model = await db
      .selectFrom('three_ds_authentications')
      .selectAll()
      .where('acs_trans_id', '=', String(first.acsTransID))
      .executeTakeFirstOrThrow();
    // Copies of the one authentication, older by a millisecond each (the pages' order is created_at, then the id).
    await h.db.database.withTx(async (tx) => {
      for (let i = 0; i < 2500; i++)
        await tx
          .insertInto('three_ds_authentications')
          .values({
            ...model,
            acs_trans_id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
            av_hash: null,
            created_at: Number(model.created_at) - (i % 7),
          })
          .execute();
    });
    now += 20 * 86_400_000;
    const young = (await send(url, areq({ pan: c.pan, expiry: c.expiry, amount: '100' }))).json ?? {};
    now += 11 * 86_400_000;
    assert.equal(await purgeBrowserData(h.app.svc, now), 2501);
    const kept = await db.selectFrom('three_ds_authentications').select(['acs_trans_id']).where('browser', 'is not', null).execute();
    assert.deepEqual(
      kept.map((r) => r.acs_trans_id),
      [young.acsTransID],
    );
    assert.equal(await purgeBrowserData(h.app.svc, now), 0, 'again: nothing left to drop');
    assert.deepEqual(await db.selectFrom('sweep_failures').selectAll().where('job', '=', BROWSER_DATA_PURGE).execute(), []);
  });
});
