import assert from 'node:assert/strict';
import { it } from 'node:test';
import { CallbackWorker } from '../../src/callbacks/worker.js';
import { type Harness, randomStr } from '../helpers/app.js';
import { eachDialect } from '../helpers/dialects.js';
import { noteSecret } from '../helpers/log-audit.js';
import { eventually, type Received } from '../helpers/receiver.js';
import { acs, card, notifyTo, stored } from './helpers/acs.js';
import { areq, aresProblems, send } from './helpers/ds.js';

/** Delivers callbacks until one of `type` arrived, and gives it. */
async function delivered(h: Harness, rx: { received: Received[] }, type: string): Promise<Received> {
  const worker = new CallbackWorker(h.app.svc);
  const find = () => rx.received.find((r) => r.body.type === type);
  await eventually(
    async () => {
      await worker.pass();
      return find() !== undefined;
    },
    10_000,
    `a ${type} callback`,
  );
  return find() as Received;
}

eachDialect('3-D Secure: the ACS answers a DS', (dialect) => {
  it('frictionless under the low-value exemption: Y with ECI 05 (Visa) and a 28-character authentication value; the AReq kept with the PAN masked', async (t) => {
    const { h, url } = await acs(t, dialect);
    const c = await card(h);
    const request = areq({ pan: c.pan, expiry: c.expiry, amount: '2500' });
    const res = await send(url, request);
    assert.equal(res.status, 200);
    assert.match(String(res.text), /^\{/);
    const ares = res.json ?? {};
    assert.deepEqual(aresProblems(ares, request), []);
    assert.equal(ares.transStatus, 'Y');
    assert.equal(ares.eci, '05');
    assert.equal(String(ares.authenticationValue).length, 28);
    assert.equal(Buffer.from(String(ares.authenticationValue), 'base64').length, 20);
    assert.equal(ares.acsURL, undefined);
    const row = await stored(h, String(ares.acsTransID));
    assert.equal(row.card_id, c.cardId);
    assert.equal(row.pan_masked, `${c.pan.slice(0, 6)}${'*'.repeat(c.pan.length - 10)}${c.pan.slice(-4)}`);
    assert.equal(row.decided_by, 'exemption');
    assert.equal(Number(row.amount), 2500);
    assert.equal(row.currency, 'EUR');
    // The number is nowhere in the row; the browser's data is kept apart (dropped after 30 days).
    assert.ok(!JSON.stringify(row).includes(c.pan), 'no PAN in the stored authentication');
    assert.ok(!JSON.stringify(row).includes(c.expiry) || !row.areq.includes('cardExpiryDate'), 'no expiry in the stored AReq');
    assert.equal(JSON.parse(row.areq).acctNumber, row.pan_masked);
    assert.equal(JSON.parse(row.areq).browserUserAgent, undefined);
    assert.equal(JSON.parse(row.browser ?? '{}').browserUserAgent, request.browserUserAgent);
    assert.equal(row.av_hash?.length, 64);
    assert.ok(!JSON.stringify(row).includes(String(ares.authenticationValue)), 'the value itself is not stored');
  });

  it('a Mastercard BIN (535353, the USDT cards) gets ECI 02 when authenticated, 00 when not; 2.1.0 is answered in 2.1.0', async (t) => {
    const { h, url } = await acs(t, dialect);
    const c = await card(h, { currency: 'USDT' });
    const request = areq({ pan: c.pan, expiry: c.expiry, amount: '1000', currency: '840', version: '2.1.0' });
    const ares = (await send(url, request)).json ?? {};
    assert.deepEqual(aresProblems(ares, request), []);
    assert.deepEqual([ares.messageVersion, ares.transStatus, ares.eci], ['2.1.0', 'Y', '02']);
    const refused = areq({ pan: c.pan, expiry: '0101', amount: '1000', currency: '840' });
    const n = (await send(url, refused)).json ?? {};
    assert.deepEqual([n.transStatus, n.transStatusReason, n.eci], ['N', '01', '00']);
  });

  it('challenge by one-time code: C with acsURL and authenticationType 02, and a signed threeDs.otp callback with the code; only its keyed hash is stored', async (t) => {
    const { h, url } = await acs(t, dialect);
    const rx = await notifyTo(t, h);
    const c = await card(h);
    const request = areq({ pan: c.pan, expiry: c.expiry, amount: '12000', merchantName: 'Fahrrad Haus' });
    const ares = (await send(url, request)).json ?? {};
    assert.deepEqual(aresProblems(ares, request), []);
    assert.deepEqual(
      [ares.transStatus, ares.acsURL, ares.acsChallengeMandated, ares.authenticationType, ares.eci, ares.authenticationValue],
      ['C', `${h.config.publicUrl}/3ds/challenge`, 'Y', '02', undefined, undefined],
    );
    const otp = await delivered(h, rx, 'threeDs.otp');
    assert.ok(otp.verified, 'signed as every callback (Standard Webhooks)');
    const body = otp.body;
    noteSecret('otp', body.code);
    assert.equal(body.type, 'threeDs.otp');
    assert.equal(body.acsTransID, ares.acsTransID);
    assert.deepEqual(
      [body.cardId, body.holderId, body.merchantName, body.amount, body.currency],
      [c.cardId, c.holderId, 'Fahrrad Haus', 120, 'EUR'],
    );
    assert.match(String(body.code), /^\d{6}$/);
    const expiresIn = Date.parse(String(body.expiresAt)) - Date.parse(String(body.occurredAt));
    assert.equal(expiresIn, 5 * 60_000, 'valid 5 minutes');
    const row = await stored(h, String(ares.acsTransID));
    assert.deepEqual(
      [row.trans_status, row.challenge_method, row.challenge_state, row.otp_sent, row.decided_by],
      ['C', 'otp', 'pending', 1, 'risk'],
    );
    assert.equal(row.completed_at, null);
    assert.equal(row.otp_hash?.length, 64);
    assert.ok(!JSON.stringify(row).includes(String(body.code)), 'the code is not in the authentication');
    const events = await h.db.database.db.selectFrom('callback_events').select('payload').where('type', '=', 'threeDs.otp').execute();
    assert.equal(events.length, 1);
    assert.match(events[0]?.payload ?? '', /^v1\./, 'the callback is stored sealed');
  });

  it('challenge out of band (the merchant’s challengeMethod oob): authenticationType 03 and a threeDs.challenge callback, no code', async (t) => {
    const { h, url } = await acs(t, dialect);
    const rx = await notifyTo(t, h);
    const set = await h.call('/api/network/threeDsSettingsUpdate.html', { challengeMethod: 'oob', randomStr: randomStr() });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    const c = await card(h);
    const request = areq({ pan: c.pan, expiry: c.expiry, amount: '500', challengeInd: '04' });
    const ares = (await send(url, request)).json ?? {};
    assert.deepEqual(aresProblems(ares, request), []);
    assert.deepEqual([ares.transStatus, ares.authenticationType], ['C', '03']);
    const { body } = await delivered(h, rx, 'threeDs.challenge');
    assert.equal(body.type, 'threeDs.challenge');
    assert.deepEqual([body.acsTransID, body.cardId, body.amount], [ares.acsTransID, c.cardId, 5]);
    assert.equal(body.code, undefined);
    const row = await stored(h, String(ares.acsTransID));
    assert.deepEqual([row.challenge_method, row.decided_by, row.otp_hash], ['oob', 'mandate', null]);
  });

  it('acsTransID is a fresh random UUID (v4) every time', async (t) => {
    const { h, url } = await acs(t, dialect);
    const c = await card(h);
    const ids = new Set<string>();
    for (let i = 0; i < 5; i++) {
      const ares = (await send(url, areq({ pan: c.pan, expiry: c.expiry, amount: '100' }))).json ?? {};
      assert.match(String(ares.acsTransID), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      ids.add(String(ares.acsTransID));
    }
    assert.equal(ids.size, 5);
  });

  it('the sandbox’s authenticate plays the DS: the same ACS, and for a challenge the form that opens it', async (t) => {
    const { h } = await acs(t, dialect);
    await notifyTo(t, h);
    const c = await card(h);
    const y = await h.call('/sandbox/3ds/authenticate', { cardId: c.cardId, amount: 12.5, randomStr: randomStr() });
    assert.equal(y.status, 200, JSON.stringify(y.body));
    assert.deepEqual([y.body.model.ares.transStatus, y.body.model.ares.eci, y.body.model.challenge], ['Y', '05', null]);
    const cr = await h.call('/sandbox/3ds/authenticate', {
      cardId: c.cardId,
      amount: 5,
      merchantName: 'Bäckerei',
      challengeInd: '04',
      randomStr: randomStr(),
    });
    const { ares, challenge } = cr.body.model;
    assert.equal(ares.transStatus, 'C');
    assert.equal(challenge.acsURL, ares.acsURL);
    assert.equal(challenge.method, 'POST');
    const creq = JSON.parse(Buffer.from(challenge.creq, 'base64url').toString('utf8'));
    assert.deepEqual(creq, {
      threeDSServerTransID: ares.threeDSServerTransID,
      acsTransID: ares.acsTransID,
      messageType: 'CReq',
      messageVersion: '2.2.0',
      challengeWindowSize: '05',
    });
    const row = await stored(h, ares.acsTransID);
    assert.equal(row.merchant_name, 'Bäckerei');
    // Another merchant's card is 2648, as an unknown one.
    const other = await h.newMerchant();
    const foreign = await h.call('/sandbox/3ds/authenticate', { cardId: c.cardId, amount: 5, randomStr: randomStr() }, { merchant: other });
    assert.deepEqual([foreign.status, foreign.body.code], [404, '2648']);
  });
});
