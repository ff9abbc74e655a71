import assert from 'node:assert/strict';
import { it } from 'node:test';
import { buildApp } from '../src/app.js';
import { createMerchant } from '../src/merchants/create.js';
import { runVerb } from '../src/runner.js';
import { holderBody, randomStr, sign, testConfig } from './helpers/app.js';
import { childDatabaseUrl } from './helpers/cli.js';
import { isolatedDatabase } from './helpers/db.js';
import { eachDialect } from './helpers/dialects.js';
import { testLogging } from './helpers/log-audit.js';

eachDialect('shutdown', (dialect) => {
  it('closing while requests are in their handlers lets them finish before the database closes', async (t) => {
    const db = await isolatedDatabase(dialect);
    t.after(() => db.cleanup());
    // The app opens (and so closes) its own database, as in production.
    const app = await buildApp(testConfig(db.dataDir, { databaseUrl: childDatabaseUrl(db) }), { ...testLogging() });
    const m = await runVerb(app.svc, createMerchant, { input: { name: 'Shutdown', signType: 'HMAC-SHA256' }, actor: 'test' });
    const merchant = { appId: m.appId, secret: m.secret ?? '', webhookSecret: m.webhookSecret };
    const pending = Array.from({ length: 40 }, (_, i) =>
      app.inject({
        method: 'POST',
        url: '/api/network/holderCreate.html',
        payload: sign(holderBody({ idno: `SD${String(i).padStart(6, '0')}`, randomStr: randomStr() }), merchant),
        headers: { 'content-type': 'application/json' },
      }),
    );
    // Let them reach their handlers, then close under them.
    await new Promise((r) => setImmediate(r));
    await app.close();
    const replies = await Promise.all(pending);
    const statuses = replies.map((r) => r.statusCode);
    assert.ok(
      statuses.every((s) => s === 200 || s === 503),
      `no request fails because the database closed under it: ${statuses.join(',')} ${replies.find((r) => r.statusCode >= 500 && r.statusCode !== 503)?.body}`,
    );
    assert.ok(statuses.includes(200), 'the requests already running finished');
  });
});
