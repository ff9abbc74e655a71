import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { it } from 'node:test';
import { randomStr } from '../helpers/app.js';
import { eachDialect } from '../helpers/dialects.js';
import { receiver } from '../helpers/receiver.js';
import { acs, card, notifyTo, stored } from './helpers/acs.js';
import { areq, aresProblems, send } from './helpers/ds.js';

const answer =
  (body: unknown, status = 200) =>
  (res: ServerResponse) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(typeof body === 'string' ? body : JSON.stringify(body));

eachDialect('3-D Secure: the merchant’s decision endpoint (decisions §14.3.4)', (dialect) => {
  it('frictionless, challenge, decline as the endpoint answers; each ask a signed threeDs.decision event; the exemption not counted', async (t) => {
    const { h, url } = await acs(t, dialect);
    await notifyTo(t, h);
    const endpoint = await receiver(t, h.merchant.webhookSecret);
    const set = await h.call('/api/network/threeDsSettingsUpdate.html', { decisionUrl: endpoint.url, randomStr: randomStr() });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    assert.deepEqual(set.body.model, { decisionUrl: endpoint.url, challengeMethod: 'otp' });
    const c = await card(h);

    endpoint.respond(answer({ decision: 'frictionless' }));
    const request = areq({ pan: c.pan, expiry: c.expiry, amount: '25000', merchantName: 'Möbel Haus' });
    const y = (await send(url, request)).json ?? {};
    assert.deepEqual(aresProblems(y, request), []);
    assert.deepEqual([y.transStatus, y.eci], ['Y', '05'], '250.00 EUR frictionless: the merchant decided');
    const asked = endpoint.received[0];
    assert.ok(asked?.verified, 'signed as callbacks are');
    assert.equal(asked?.headers['webhook-id'], y.acsTransID);
    assert.deepEqual(
      [
        asked?.body.type,
        asked?.body.acsTransID,
        asked?.body.cardId,
        asked?.body.holderId,
        asked?.body.amount,
        asked?.body.currency,
        asked?.body.merchantName,
      ],
      ['threeDs.decision', y.acsTransID, c.cardId, c.holderId, 250, 'EUR', 'Möbel Haus'],
    );
    assert.equal(asked?.body.acctNumber, undefined, 'never the card number');
    const row = await stored(h, String(y.acsTransID));
    assert.deepEqual([row.decided_by, row.endpoint_outcome, row.exempt_eur], ['endpoint', 'frictionless', null]);

    endpoint.respond(answer({ decision: 'challenge' }));
    assert.equal((await send(url, areq({ pan: c.pan, expiry: c.expiry, amount: '100' }))).json?.transStatus, 'C');
    endpoint.respond(answer({ decision: 'decline' }));
    const n = (await send(url, areq({ pan: c.pan, expiry: c.expiry, amount: '100' }))).json ?? {};
    assert.deepEqual([n.transStatus, n.transStatusReason], ['N', '11']);
    const state = await h.db.database.db
      .selectFrom('three_ds_card_state')
      .selectAll()
      .where('card_id', '=', c.cardId)
      .executeTakeFirstOrThrow();
    assert.equal(Number(state.exempt_count), 0, 'the merchant’s decisions use none of the exemption');
  });

  it('no answer within 1 s, or none readable: challenge', async (t) => {
    const { h, url } = await acs(t, dialect);
    await notifyTo(t, h);
    const endpoint = await receiver(t, h.merchant.webhookSecret);
    await h.call('/api/network/threeDsSettingsUpdate.html', { decisionUrl: endpoint.url, randomStr: randomStr() });
    const c = await card(h);
    endpoint.respond(() => undefined);
    const started = Date.now();
    const late = (await send(url, areq({ pan: c.pan, expiry: c.expiry, amount: '100' }))).json ?? {};
    const took = Date.now() - started;
    assert.equal(late.transStatus, 'C');
    assert.ok(took >= 900 && took < 3000, `answered after the 1 s deadline (${took} ms)`);
    assert.deepEqual([(await stored(h, String(late.acsTransID))).decided_by], ['endpoint_timeout']);
    for (const bad of [answer({ decision: 'yes' }), answer('not json'), answer({ decision: 'frictionless' }, 500)]) {
      endpoint.respond(bad);
      const ares = (await send(url, areq({ pan: c.pan, expiry: c.expiry, amount: '100' }))).json ?? {};
      assert.equal(ares.transStatus, 'C');
      assert.equal((await stored(h, String(ares.acsTransID))).decided_by, 'endpoint_error');
    }
  });

  it('not asked when the program refuses first (a frozen card, the controls); asked no more once removed', async (t) => {
    const { h, url } = await acs(t, dialect);
    const endpoint = await receiver(t, h.merchant.webhookSecret);
    await h.call('/api/network/threeDsSettingsUpdate.html', { decisionUrl: endpoint.url, randomStr: randomStr() });
    const c = await card(h);
    await h.call('/api/network/cardFreeze.html', { cardId: c.cardId, randomStr: randomStr() });
    const n = (await send(url, areq({ pan: c.pan, expiry: c.expiry }))).json ?? {};
    assert.deepEqual([n.transStatus, n.transStatusReason], ['N', '12']);
    const other = await card(h);
    await h.call('/api/network/cardControlsUpdate.html', {
      cardId: other.cardId,
      controls: { blockedMccs: ['5732'] },
      randomStr: randomStr(),
    });
    assert.equal((await send(url, areq({ pan: other.pan, expiry: other.expiry }))).json?.transStatusReason, '12');
    assert.equal(endpoint.received.length, 0);
    const removed = await h.call('/api/network/threeDsSettingsUpdate.html', { decisionUrl: null, randomStr: randomStr() });
    assert.equal(removed.body.model.decisionUrl, null);
    const third = await card(h);
    assert.equal((await send(url, areq({ pan: third.pan, expiry: third.expiry, amount: '100' }))).json?.transStatus, 'Y');
    assert.equal(endpoint.received.length, 0);
  });
});
