// A challenged purchase end to end in the sandbox (decisions §14.4–§14.6): the sandbox plays the
// directory server, so once a challenge ends Y its answers hand on what the RReq carries, the eci and
// the authentication value, and the authorization uses it once. In production the value reaches the
// merchant only through the DS and its 3DS Server: no merchant-facing answer carries it.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { openPayload } from '../../src/callbacks/outbox.js';
import { reviewHolder } from '../../src/holders/review.js';
import { updateMerchant } from '../../src/merchants/manage.js';
import { runVerb } from '../../src/runner.js';
import type { RReq } from '../../src/three-ds/emv-messages.js';
import { type Harness, holderBody, randomStr } from '../helpers/app.js';
import { eachDialect } from '../helpers/dialects.js';
import { acs, card, notifyTo } from './helpers/acs.js';
import { areq, send } from './helpers/ds.js';

/** The payloads of the merchant's callbacks of a type, opened. */
async function callbacks(h: Harness, type: string): Promise<string[]> {
  const events = await h.db.database.db.selectFrom('callback_events').selectAll().where('type', '=', type).execute();
  return events.map((e) => openPayload(h.app.svc.box, e));
}

/** The RReq the ACS sealed for the DS. */
async function rreqOf(h: Harness, acsTransId: string): Promise<RReq> {
  const row = await h.db.database.db
    .selectFrom('three_ds_results')
    .select('rreq_enc')
    .where('acs_trans_id', '=', acsTransId)
    .executeTakeFirstOrThrow();
  return JSON.parse(h.app.svc.box.open(row.rreq_enc, `three-ds-rreq:${acsTransId}`)) as RReq;
}

eachDialect('3-D Secure: the sandbox’s DS hands on the challenge’s authentication value (decisions §14.4, §14.6)', (dialect) => {
  it('a challenge completed Y answers eci and authenticationValue (those of the RReq); the value authorizes once, again 2732; a wrong code and an N carry none; the notification page shows them', async (t) => {
    const { h } = await acs(t, dialect);
    await notifyTo(t, h);
    const c = await card(h);
    const started = await h.call('/sandbox/3ds/authenticate', {
      cardId: c.cardId,
      amount: 9.9,
      merchantName: 'Fahrrad Haus',
      challengeInd: '04',
      randomStr: randomStr(),
    });
    assert.equal(started.body.model.ares.transStatus, 'C', JSON.stringify(started.body));
    const acsTransID = String(started.body.model.ares.acsTransID);
    const code = (await callbacks(h, 'threeDs.otp'))
      .map((p) => JSON.parse(p) as { acsTransID: string; code: string })
      .find((p) => p.acsTransID === acsTransID)?.code;
    assert.ok(code, 'the code went to the merchant');

    const wrong = await h.call('/sandbox/3ds/complete', { acsTransID, otp: '000000x', randomStr: randomStr() });
    assert.deepEqual([wrong.body.model.eci, wrong.body.model.authenticationValue], [null, null], 'nothing while it goes on');
    const done = await h.call('/sandbox/3ds/complete', { acsTransID, otp: code, randomStr: randomStr() });
    assert.equal(done.status, 200, JSON.stringify(done.body));
    const { eci, authenticationValue } = done.body.model;
    assert.equal(done.body.model.authentication.transStatus, 'Y');
    assert.equal(eci, '05', 'a Visa card authenticated');
    assert.match(String(authenticationValue), /^[A-Za-z0-9+/]{27}=$/);
    const rreq = await rreqOf(h, acsTransID);
    assert.deepEqual([rreq.eci, rreq.authenticationValue], [eci, authenticationValue], 'what the RReq carries to the DS');

    const authorize = (amount: number) =>
      h.call('/sandbox/network/authorize', {
        cardId: c.cardId,
        amount,
        channel: 'ecommerce',
        merchantName: 'Fahrrad Haus',
        eci,
        authenticationValue,
        randomStr: randomStr(),
      });
    const approved = await authorize(9.9);
    assert.equal(approved.body.code, '0', JSON.stringify(approved.body));
    const trade = await h.call('/api/network/tradeQuery.html', { tradeId: approved.body.model.tradeId, randomStr: randomStr() });
    assert.deepEqual(trade.body.model.authentication, { acsTransID, transStatus: 'Y', eci: '05', method: 'otp' });
    const again = await authorize(1);
    assert.equal(again.body.code, '2732', JSON.stringify(again.body));
    assert.equal(again.body.detail.declineReason, 'authentication_failed');

    // An out-of-band challenge declined ends N: the eci of N, no value.
    await h.call('/api/network/threeDsSettingsUpdate.html', { challengeMethod: 'oob', randomStr: randomStr() });
    const other = await h.call('/sandbox/3ds/authenticate', { cardId: c.cardId, amount: 9.9, challengeInd: '04', randomStr: randomStr() });
    const declined = await h.call('/sandbox/3ds/complete', {
      acsTransID: other.body.model.ares.acsTransID,
      result: 'declined',
      randomStr: randomStr(),
    });
    assert.deepEqual(
      [declined.body.model.authentication.transStatus, declined.body.model.eci, declined.body.model.authenticationValue],
      ['N', '07', null],
    );

    // The sandbox's 3DS Server page, where the challenge page posts the CRes: it shows what the DS handed on.
    const page = await h.app.inject({
      method: 'POST',
      url: '/sandbox/3ds/notification',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ cres: String(done.body.model.cres) }).toString(),
    });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /<strong id="trans-status">Y<\/strong>/);
    assert.match(page.body, /<code id="eci">05<\/code>/);
    assert.ok(page.body.includes(`<code id="authentication-value">${authenticationValue}</code>`), page.body);
  });

  it('production: the value goes to the DS in the RReq alone; no merchant-facing answer carries it (respond, query, threeDs.result; no sandbox complete)', async (t) => {
    const { h, url } = await acs(t, dialect, { env: 'production', publicUrl: 'https://cards.example.com' });
    await runVerb(h.app.svc, updateMerchant, {
      input: { appId: h.merchant.appId, notifyUrl: 'https://shop.example.com/hooks' },
      actor: 'test',
    });
    await h.call('/api/network/threeDsSettingsUpdate.html', { challengeMethod: 'oob', randomStr: randomStr() });
    // A card made through the API and the operator's review (no sandbox routes in production).
    const holder = await h.call('/api/network/holderCreate.html', holderBody());
    await runVerb(h.app.svc, reviewHolder, { input: { holderId: holder.body.holderId, auditStatus: 2 }, actor: 'test' });
    const applied = await h.call('/api/network/cardApply.html', {
      holderId: holder.body.holderId,
      currency: 'EUR',
      randomStr: randomStr(),
    });
    assert.equal(applied.status, 200, JSON.stringify(applied.body));
    const row = await h.db.database.db
      .selectFrom('cards')
      .selectAll()
      .where('id', '=', applied.body.model.cardId)
      .executeTakeFirstOrThrow();
    const pan = await h.app.svc.vault.decrypt(h.db.database.db, row.id, row.pan_enc, row.pan_key_id);
    const request = areq({
      pan,
      expiry: `${String(row.expiry_year % 100).padStart(2, '0')}${String(row.expiry_month).padStart(2, '0')}`,
      amount: '9900',
      challengeInd: '04',
      notificationURL: 'https://3dss.test.example/notify',
    });
    const ares = (await send(url, request)).json ?? {};
    assert.equal(ares.transStatus, 'C', JSON.stringify(ares));
    const acsTransID = String(ares.acsTransID);
    const complete = await h.call('/sandbox/3ds/complete', { acsTransID, result: 'approved', randomStr: randomStr() });
    assert.equal(complete.status, 404, 'no sandbox in production');
    const responded = await h.call('/api/network/threeDsChallengeRespond.html', { acsTransID, result: 'approved', randomStr: randomStr() });
    assert.equal(responded.body.model.transStatus, 'Y', JSON.stringify(responded.body));
    const value = String((await rreqOf(h, acsTransID)).authenticationValue);
    assert.match(value, /^[A-Za-z0-9+/]{27}=$/, 'the RReq carries it to the DS');
    const query = await h.call('/api/network/threeDsQuery.html', { acsTransID, randomStr: randomStr() });
    assert.equal(query.body.model.transStatus, 'Y');
    const results = await callbacks(h, 'threeDs.result');
    assert.equal(results.length, 1);
    for (const [what, text] of [
      ['threeDsChallengeRespond', JSON.stringify(responded.body)],
      ['threeDsQuery', JSON.stringify(query.body)],
      ['threeDs.result', results[0] as string],
    ]) {
      assert.ok(!String(text).includes(value), `${what} does not carry the value`);
      assert.ok(!String(text).includes('authenticationValue'), `${what} has no such field`);
    }
  });
});
