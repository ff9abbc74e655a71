// The database cannot answer: every AReq gets Erro 404 (the transient failure of decisions §14.1)
// at once, never an HTTP error or a hang, nothing is written, and the ACS answers again when it is back.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { buildApp } from '../../src/app.js';
import { openDatabase } from '../../src/db/index.js';
import { startAcs } from '../../src/three-ds/listener.js';
import { testConfig } from '../helpers/app.js';
import { behindProxy, PG_SKIP, SQLITE, SQLITE_SKIP } from '../helpers/db-faults.js';
import { testLogging } from '../helpers/log-audit.js';
import { acs, card } from './helpers/acs.js';
import { areq, erroProblems, send } from './helpers/ds.js';

describe('3-D Secure: the database down', () => {
  it('PostgreSQL goes away: Erro 404 within seconds, nothing written; back, the ACS answers again', { skip: PG_SKIP }, async (t) => {
    const { db, proxy, via } = await behindProxy(t);
    const database = openDatabase(via(db.url), { pgSchema: db.pgSchema as string, pgPoolWaitMs: 1000 });
    const threeDs = { ...testConfig('').threeDs, port: 0 };
    const app = await buildApp(testConfig(db.dataDir, { threeDs }), { database, ...testLogging() });
    const server = await startAcs(app.svc);
    assert.ok(server);
    t.after(async () => {
      await server.stop();
      await app.close();
      await database.close();
    });
    const url = `http://127.0.0.1:${server.port}/3ds/areq`;
    const before = await send(url, areq({ pan: '4242421111111111', expiry: '3012' }));
    assert.deepEqual([before.json?.messageType, before.json?.transStatusReason], ['ARes', '08']);

    await proxy.down();
    for (let i = 0; i < 3; i++) {
      const started = Date.now();
      const request = areq({ pan: '4242421111111111', expiry: '3012' });
      const res = await send(url, request);
      assert.equal(res.status, 200);
      const erro = res.json ?? {};
      assert.deepEqual(erroProblems(erro), []);
      assert.deepEqual([erro.errorCode, erro.errorComponent, erro.threeDSServerTransID], ['404', 'A', request.threeDSServerTransID]);
      assert.ok(Date.now() - started < 6000, `answered in ${Date.now() - started} ms`);
    }
    await proxy.up();
    const after = await send(url, areq({ pan: '4242421111111111', expiry: '3012' }));
    assert.deepEqual([after.json?.messageType, after.json?.transStatusReason], ['ARes', '08']);
    const rows = await app.svc.database.db.selectFrom('three_ds_authentications').select('acs_trans_id').execute();
    assert.equal(rows.length, 2, 'the two answered, nothing of the refused ones');
  });

  it('SQLite cannot write (read-only): Erro 404, nothing written; writable again, the ACS answers', { skip: SQLITE_SKIP }, async (t) => {
    const { h, url } = await acs(t, SQLITE as NonNullable<typeof SQLITE>);
    const c = await card(h);
    const db = h.db.database.db;
    await sql`pragma query_only = 1`.execute(db);
    const request = areq({ pan: c.pan, expiry: c.expiry, amount: '100' });
    const erro = (await send(url, request)).json ?? {};
    assert.deepEqual([erro.errorCode, erro.dsTransID], ['404', request.dsTransID]);
    assert.deepEqual(erroProblems(erro), []);
    await sql`pragma query_only = 0`.execute(db);
    assert.equal((await db.selectFrom('three_ds_authentications').select('acs_trans_id').execute()).length, 0);
    assert.equal((await db.selectFrom('three_ds_card_state').select('card_id').execute()).length, 0);
    const ares = (await send(url, areq({ pan: c.pan, expiry: c.expiry, amount: '100' }))).json ?? {};
    assert.equal(ares.transStatus, 'Y');
  });
});
