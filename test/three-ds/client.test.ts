import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { it } from 'node:test';
import { CardProgram, NotFoundError, type ThreeDsAuthentication } from '../../client/src/index.js';
import { eachDialect } from '../helpers/dialects.js';
import { acs, card, notifyTo } from './helpers/acs.js';

// The SDK's `threeDs` resource and `sandbox.authenticate` against the real service over loopback.

eachDialect('SDK: 3-D Secure', (dialect) => {
  it('sandbox.authenticate, threeDs.query, the list as an async iterator, settings; an unknown one is NotFoundError 2750', async (t) => {
    const { h } = await acs(t, dialect);
    await notifyTo(t, h);
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    const client = new CardProgram({
      baseUrl: `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`,
      appId: h.merchant.appId,
      secret: h.merchant.secret,
    });
    const c = await card(h);
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const { ares, challenge } = await client.sandbox.authenticate({ cardId: c.cardId, amount: 3 });
      assert.equal(challenge === null, ares.transStatus === 'Y');
      ids.push(ares.acsTransID);
    }
    const mandated = await client.sandbox.authenticate({ cardId: c.cardId, amount: 1, challengeInd: '04', merchantName: 'SDK Shop' });
    assert.equal(mandated.ares.transStatus, 'C');
    assert.equal(mandated.challenge?.acsURL, mandated.ares.acsURL);
    const one = await client.threeDs.query(mandated.ares.acsTransID);
    assert.deepEqual([one.transStatus, one.merchantName, one.challengeMethod, one.decidedBy], ['C', 'SDK Shop', 'otp', 'mandate']);
    const seen: ThreeDsAuthentication[] = [];
    for await (const a of client.threeDs.list({ cardId: c.cardId, pageSize: 3 })) seen.push(a);
    assert.deepEqual(
      seen.map((a) => a.acsTransID),
      [mandated.ares.acsTransID, ...ids.reverse()],
    );
    assert.deepEqual(
      seen.map((a) => a.transStatus),
      ['C', 'C', 'C', 'Y', 'Y', 'Y', 'Y', 'Y'],
    );
    assert.deepEqual(await client.threeDs.settingsQuery(), { decisionUrl: null, challengeMethod: 'otp' });
    assert.deepEqual(await client.threeDs.settingsUpdate({ challengeMethod: 'oob' }), { decisionUrl: null, challengeMethod: 'oob' });
    const missing = await client.threeDs.query('00000000-0000-4000-8000-000000000000').catch((e: unknown) => e);
    assert.ok(missing instanceof NotFoundError && missing.code === '2750');
  });
});
