import assert from 'node:assert/strict';
import { it } from 'node:test';
import { buildApp } from '../src/app.js';
import { build, sign, testConfig } from './helpers/app.js';
import { eachDialect } from './helpers/dialects.js';
import { testLogging } from './helpers/log-audit.js';
import { OPERATIONS, sandboxOnly } from './helpers/operations.js';
import { assertFailure, assertSuccess, assertUnchanged, snapshot } from './helpers/snapshots.js';
import { tenant } from './helpers/tenant.js';

/** Sandbox operations do not exist in production; every other signed operation does. */
const json = { 'content-type': 'application/json' };

eachDialect('sandbox operations in production', (dialect) => {
  it('sandbox operations answer 404 with the envelope in production and write nothing; the same signed request works in the sandbox', async (t) => {
    const h = await build(t, dialect);
    const a = await tenant(h, h.merchant);
    // The production service on the same database: the same merchant, keys and data.
    const prod = await buildApp(testConfig(h.db.dataDir, { env: 'production', masterKey: h.config.masterKey }), {
      database: h.db.database,
      ...testLogging(),
    });
    try {
      assert.deepEqual(
        prod.operations.map((o) => o.url).sort(),
        [...new Set(OPERATIONS.filter((o) => !sandboxOnly(o)).map((o) => o.path))].sort(),
        'production registers every operation but the sandbox ones',
      );
      const doc = (await prod.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, unknown> };
      assert.deepEqual(
        Object.keys(doc.paths).filter((p) => p.startsWith('/sandbox/')),
        [],
      );
      for (const op of OPERATIONS.filter(sandboxOnly)) {
        await t.test(op.operation, async () => {
          const payload = sign(await op.body(a), a.m);
          const before = await snapshot(h);
          const res = await prod.inject({ method: 'POST', url: op.path, payload, headers: json });
          assertFailure(
            { status: res.statusCode, body: res.json(), headers: res.headers },
            op.path,
            404,
            '1004',
            `POST ${op.path} is a sandbox operation, not served in production: card events arrive over the card network link there (docs/network.md), and reviews are decided in the console or by the cardprogram command`,
          );
          assertUnchanged(before, await snapshot(h), `${op.path} in production`);
          assertSuccess(await h.call(op.path, payload, { raw: true }), op.path);
        });
      }
    } finally {
      await prod.close();
    }
  });
});
