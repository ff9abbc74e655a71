import assert from 'node:assert/strict';
import { it } from 'node:test';
import { type Harness, randomStr } from '../helpers/app.js';
import { eachDialect } from '../helpers/dialects.js';
import { acs, card, notifyTo, stored } from './helpers/acs.js';
import { type AReqOptions, areq, aresProblems, send } from './helpers/ds.js';

/** The ARes to an AReq for the card (a 200.00 EUR purchase unless told), checked against EMVCo's formats. */
async function ask(url: string, o: AReqOptions) {
  const request = areq({ amount: '20000', ...o });
  const res = await send(url, request);
  assert.equal(res.status, 200);
  const ares = res.json ?? {};
  assert.deepEqual(aresProblems(ares, request), []);
  return ares;
}

const refusal = (ares: Record<string, unknown>) => [ares.transStatus, ares.transStatusReason];

async function controls(h: Harness, cardId: string, set: Record<string, unknown>) {
  const res = await h.call('/api/network/cardControlsUpdate.html', { cardId, controls: set, randomStr: randomStr() });
  assert.equal(res.status, 200, JSON.stringify(res.body));
}

eachDialect('3-D Secure: every refusal of decisions §14.3, with its transStatusReason', (dialect) => {
  it('no card for the number: N/08, stored without a card (no merchant sees it)', async (t) => {
    const { h, url } = await acs(t, dialect);
    const ares = await ask(url, { pan: '4242429999999999', expiry: '3012' });
    assert.deepEqual(refusal(ares), ['N', '08']);
    assert.equal(ares.eci, '07');
    const row = await stored(h, String(ares.acsTransID));
    assert.deepEqual([row.card_id, row.merchant_id, row.pan_masked], [null, null, '424242******9999']);
    const q = await h.call('/api/network/threeDsQuery.html', { acsTransID: ares.acsTransID, randomStr: randomStr() });
    assert.deepEqual([q.status, q.body.code], [404, '2750']);
  });

  it('an expiry other than the card’s: N/01, recorded as a refused authentication in threeDsList; a missing expiry is no mismatch', async (t) => {
    const { h, url } = await acs(t, dialect);
    await notifyTo(t, h);
    const c = await card(h);
    const wrong = await ask(url, { pan: c.pan, expiry: c.expiry === '3012' ? '3011' : '3012' });
    assert.deepEqual(refusal(wrong), ['N', '01']);
    const list = await h.call('/api/network/threeDsList.html', { cardId: c.cardId, start: 0, randomStr: randomStr() });
    assert.equal(list.body.model.total, 1);
    assert.deepEqual(
      [list.body.model.authentications[0].acsTransID, list.body.model.authentications[0].transStatusReason],
      [wrong.acsTransID, '01'],
    );
    // Without cardExpiryDate (2.2.0 allows it) the card data are not checked, so no exemption: a challenge.
    const none = await ask(url, { pan: c.pan, expiry: null, amount: '500' });
    assert.equal(none.transStatus, 'C');
  });

  it('a closed card: N/08; a frozen card: N/12; a cardholder no longer approved: N/12', async (t) => {
    const { h, url } = await acs(t, dialect);
    const closed = await card(h);
    assert.equal((await h.call('/api/network/cardClose.html', { cardId: closed.cardId, randomStr: randomStr() })).status, 200);
    assert.deepEqual(refusal(await ask(url, { pan: closed.pan, expiry: closed.expiry })), ['N', '08']);
    const frozen = await card(h);
    assert.equal((await h.call('/api/network/cardFreeze.html', { cardId: frozen.cardId, randomStr: randomStr() })).status, 200);
    assert.deepEqual(refusal(await ask(url, { pan: frozen.pan, expiry: frozen.expiry })), ['N', '12']);
    // The cardholder's status alone (the card still active): data to be completed.
    const held = await card(h);
    await h.db.database.db.updateTable('cardholders').set({ audit_status: 4 }).where('id', '=', held.holderId).execute();
    assert.deepEqual(refusal(await ask(url, { pan: held.pan, expiry: held.expiry })), ['N', '12']);
  });

  it('a card past its expiry: N/05', async (t) => {
    let now = Date.now();
    const { h, url } = await acs(t, dialect, {}, { clock: () => now });
    const c = await card(h);
    now += 6 * 366 * 86_400_000;
    assert.deepEqual(refusal(await ask(url, { pan: c.pan, expiry: c.expiry })), ['N', '05']);
  });

  it('the card’s controls would decline the purchase (category, country, channel, amount limit): N/12, and nothing is held', async (t) => {
    const { h, url } = await acs(t, dialect);
    const c = await card(h);
    await controls(h, c.cardId, { blockedMccs: ['5732'] });
    assert.deepEqual(refusal(await ask(url, { pan: c.pan, expiry: c.expiry, mcc: '5732' })), ['N', '12']);
    await controls(h, c.cardId, { allowedCountries: ['FR'] });
    assert.deepEqual(refusal(await ask(url, { pan: c.pan, expiry: c.expiry, merchantCountryCode: '276' })), ['N', '12']);
    assert.notDeepEqual(refusal(await ask(url, { pan: c.pan, expiry: c.expiry, merchantCountryCode: '250', amount: '100' })), ['N', '12']);
    await controls(h, c.cardId, { channels: ['pos'] });
    assert.deepEqual(refusal(await ask(url, { pan: c.pan, expiry: c.expiry })), ['N', '12']);
    await controls(h, c.cardId, { spendingLimits: [{ amount: 50, interval: 'per_authorization' }] });
    assert.deepEqual(refusal(await ask(url, { pan: c.pan, expiry: c.expiry, amount: '5001' })), ['N', '12']);
    assert.equal((await ask(url, { pan: c.pan, expiry: c.expiry, amount: '2000' })).transStatus, 'Y');
    // A purchase in another currency is compared with the limit at the program's rates: 60 GBP ≈ 70.59 EUR.
    assert.deepEqual(refusal(await ask(url, { pan: c.pan, expiry: c.expiry, amount: '6000', currency: '826' })), ['N', '12']);
    const q = await h.call('/api/network/cardQuery.html', { cardId: c.cardId, randomStr: randomStr() });
    assert.equal(q.body.model.availableBalance, 500, 'authentication holds no money');
  });

  it('requestor-initiated (device channel 03): N/21', async (t) => {
    const { h, url } = await acs(t, dialect);
    const c = await card(h);
    assert.deepEqual(refusal(await ask(url, { pan: c.pan, expiry: c.expiry, deviceChannel: '03' })), ['N', '21']);
  });

  it('a challenge needs a way to the cardholder: N/13 for a merchant without a notify URL; an app’s challenge is not supported yet: U/03', async (t) => {
    const { h, url } = await acs(t, dialect);
    const c = await card(h);
    assert.deepEqual(refusal(await ask(url, { pan: c.pan, expiry: c.expiry })), ['N', '13']);
    await notifyTo(t, h);
    assert.deepEqual(refusal(await ask(url, { pan: c.pan, expiry: c.expiry, deviceChannel: '01' })), ['U', '03']);
    // An app purchase under the exemption needs no challenge: frictionless.
    const small = await ask(url, { pan: c.pan, expiry: c.expiry, deviceChannel: '01', amount: '900' });
    assert.equal(small.transStatus, 'Y');
    assert.equal(typeof small.sdkTransID, 'string');
  });

  it('more than 30 AReqs of a card in an hour: N/04, refused ones counted; an hour later it answers again', async (t) => {
    let now = Date.now();
    const { h, url } = await acs(t, dialect, {}, { clock: () => now });
    const c = await card(h);
    for (let i = 0; i < 30; i++) {
      const ares = await ask(url, { pan: c.pan, expiry: i % 2 ? c.expiry : '0101', amount: '100' });
      assert.notEqual(ares.transStatusReason, '04', `AReq ${i + 1}`);
    }
    const over = await ask(url, { pan: c.pan, expiry: c.expiry, amount: '100' });
    assert.deepEqual(refusal(over), ['N', '04']);
    assert.equal((await stored(h, String(over.acsTransID))).decided_by, 'refused');
    // Another card is not limited by this one.
    const other = await card(h);
    assert.equal((await ask(url, { pan: other.pan, expiry: other.expiry, amount: '100' })).transStatus, 'Y');
    now += 3_600_001;
    assert.notEqual((await ask(url, { pan: c.pan, expiry: c.expiry, amount: '100' })).transStatusReason, '04');
  });
});
