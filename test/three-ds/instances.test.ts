// Two instances of the service on one database (each its own connections and its own ACS listener):
// they share the authentications and the cards' counters, as a DS spreading its AReqs over them sees.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { buildApp } from '../../src/app.js';
import { openDatabase } from '../../src/db/index.js';
import { startAcs } from '../../src/three-ds/listener.js';
import { randomStr, sign, testConfig } from '../helpers/app.js';
import { eachDialect } from '../helpers/dialects.js';
import { testLogging } from '../helpers/log-audit.js';
import { acs, card, notifyTo } from './helpers/acs.js';
import { areq, send } from './helpers/ds.js';

eachDialect('3-D Secure: two instances', (dialect) => {
  it('share authentications, the exemption’s counters and the hourly limit, AReqs at once on both included', async (t) => {
    const a = await acs(t, dialect);
    await notifyTo(t, a.h);
    const database = openDatabase(a.h.db.url, a.h.db.pgSchema ? { pgSchema: a.h.db.pgSchema } : {});
    const config = testConfig(a.h.db.dataDir, { masterKey: a.h.config.masterKey, threeDs: { ...a.h.config.threeDs, port: 0 } });
    const appB = await buildApp(config, { database, ...testLogging() });
    const serverB = await startAcs(appB.svc);
    assert.ok(serverB);
    t.after(async () => {
      await serverB.stop();
      await appB.close();
      await database.close();
    });
    const urlB = `http://127.0.0.1:${serverB.port}/3ds/areq`;
    const buy = async (url: string, c: { pan: string; expiry: string }) =>
      String((await send(url, areq({ pan: c.pan, expiry: c.expiry, amount: '100' }))).json?.transStatus);

    // An authentication made on A is read on B.
    const c = await card(a.h);
    const first = (await send(a.url, areq({ pan: c.pan, expiry: c.expiry, amount: '100' }))).json ?? {};
    const body = sign({ acsTransID: first.acsTransID, randomStr: randomStr() }, a.h.merchant);
    const readOnB = await appB.inject({ method: 'POST', url: '/api/network/threeDsQuery.html', payload: body });
    assert.equal(readOnB.statusCode, 200, readOnB.body);
    assert.equal(readOnB.json().model.transStatus, 'Y');

    // The exemption counted across both: 1 (above) + 2 on B + 2 on A = 5, then a challenge on B.
    assert.deepEqual(
      [await buy(urlB, c), await buy(urlB, c), await buy(a.url, c), await buy(a.url, c), await buy(urlB, c)],
      ['Y', 'Y', 'Y', 'Y', 'C'],
    );

    // At once on both: one card's fifth slot is taken once.
    for (let round = 0; round < 3; round++) {
      const d = await card(a.h);
      const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => buy(i % 2 ? urlB : a.url, d)));
      assert.equal(answers.filter((s) => s === 'Y').length, 5, answers.join(''));
    }
  });
});
