// The one-time code exists in clear in one place: the sealed threeDs.otp callback on its way to the
// merchant. Not in the authentication, not in a stored payload, not on the operators' console, not in
// a log (the suite's secrets audit looks for every code a test received: test/helpers/log-audit.ts).
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Kysely } from 'kysely';
import { listCallbacks } from '../../src/callbacks/manage.js';
import { openPayload } from '../../src/callbacks/outbox.js';
import { REDACTED } from '../../src/callbacks/shown-payload.js';
import { callbackDetail } from '../../src/console/queries.js';
import { consoleGet, login, makeOperator } from '../helpers/console.js';
import { ownTables } from '../helpers/db.js';
import { eachDialect } from '../helpers/dialects.js';
import { acs, card, notifyTo } from './helpers/acs.js';
import { areq, send } from './helpers/ds.js';

eachDialect('3-D Secure: the one-time code is never kept in clear', (dialect) => {
  it('no row of any table holds it; the console and callbacks list show the callback without it', async (t) => {
    const now = { ms: Date.now() };
    const { h, url } = await acs(t, dialect, { console: true }, { clock: () => now.ms });
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
    // Operators' screens show payloads through the one function (src/callbacks/shown-payload.ts): the code redacted.
    const shown = await callbackDetail(h.app.svc, event.id);
    assert.ok(shown);
    assert.equal(JSON.parse(shown.event.payload).code, REDACTED);
    assert.equal(JSON.parse(shown.event.payload).acsTransID, ares.acsTransID);
    const listed = (await listCallbacks(db, {}, h.app.svc.box)).find((e) => e.eventId === event.id);
    assert.deepEqual([(listed?.payload as Record<string, unknown>)?.code, listed?.type], [REDACTED, 'threeDs.otp']);
    // The console's callback page, as an operator's browser gets it.
    const ch = { ...h, now, advance: (ms = 30_000) => (now.ms += ms) };
    const support = await login(ch, await makeOperator(ch, 'sam@example.com', 'support'));
    const page = await consoleGet(ch, support, `/console/callbacks/${event.id}`);
    assert.equal(page.statusCode, 200);
    assert.ok(page.body.includes(String(ares.acsTransID)), 'the event is on the page');
    assert.ok(page.body.includes(REDACTED));
    assert.ok(!alone.test(page.body), 'the page does not show the code');
  });
});
