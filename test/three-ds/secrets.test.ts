// The one-time code exists in clear in one place: the sealed threeDs.otp callback on its way to the
// merchant. Not in the authentication, not in a stored payload, not on the operators' console, not in
// a log (the suite's secrets audit looks for every code a test received: test/helpers/log-audit.ts).
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Kysely } from 'kysely';
import { openPayload } from '../../src/callbacks/outbox.js';
import { callbackDetail } from '../../src/console/queries.js';
import { ownTables } from '../helpers/db.js';
import { eachDialect } from '../helpers/dialects.js';
import { acs, card, notifyTo } from './helpers/acs.js';
import { areq, send } from './helpers/ds.js';

eachDialect('3-D Secure: the one-time code is never kept in clear', (dialect) => {
  it('no row of any table holds it; the console shows the callback without it', async (t) => {
    const { h, url } = await acs(t, dialect);
    await notifyTo(t, h);
    const c = await card(h);
    const ares = (await send(url, areq({ pan: c.pan, expiry: c.expiry, amount: '9000' }))).json ?? {};
    assert.equal(ares.transStatus, 'C');
    const db = h.db.database.db;
    const event = await db.selectFrom('callback_events').selectAll().where('type', '=', 'threeDs.otp').executeTakeFirstOrThrow();
    const code = JSON.parse(openPayload(h.app.svc.box, event)).code as string;
    assert.match(code, /^\d{6}$/);
    // Every table, every row, every value: the code stands alone in none (the sealed payload is not the code).
    const alone = new RegExp(`(?<![0-9A-Za-z])${code}(?![0-9A-Za-z])`);
    for (const table of await ownTables(h.db)) {
      const rows = await (db as unknown as Kysely<any>).selectFrom(table.name).selectAll().execute();
      for (const row of rows) {
        for (const [column, value] of Object.entries(row)) {
          assert.ok(!(typeof value === 'string' && alone.test(value)), `${table.name}.${column} holds the code`);
        }
      }
    }
    const shown = await callbackDetail(h.app.svc, event.id);
    assert.ok(shown);
    assert.equal(JSON.parse(shown.event.payload).code, '[one-time code: not shown]');
    assert.equal(JSON.parse(shown.event.payload).acsTransID, ares.acsTransID);
  });
});
