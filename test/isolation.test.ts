import assert from 'node:assert/strict';
import { it } from 'node:test';
import { build } from './helpers/app.js';
import { eachDialect } from './helpers/dialects.js';
import { OPERATIONS } from './helpers/operations.js';
import { assertUnchanged, comparable, snapshot } from './helpers/snapshots.js';
import { lookalike, tenant } from './helpers/tenant.js';

/**
 * Tenant isolation, applied to every signed operation from one table (test/helpers/operations.ts):
 * another merchant's identifier is answered exactly like one that never existed, and changes nothing.
 * The page: test/isolation.page.test.ts; authentication: test/isolation.auth.test.ts; sandbox
 * operations in production: test/isolation.sandbox.test.ts.
 */

eachDialect('tenant isolation of every signed operation', (dialect) => {
  it('the table below holds every signed operation the app registers and documents, no more', async (t) => {
    const h = await build(t, dialect);
    const registered = h.app.operations.map((o) => `${o.operation} ${o.url}`).sort();
    // An operation may stand in the table more than once, once per way of naming what it acts on.
    const table = (f: (o: (typeof OPERATIONS)[number]) => string) => [...new Set(OPERATIONS.map(f))].sort();
    assert.deepEqual(
      table((o) => `${o.operation} ${o.path}`),
      registered,
    );
    const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, { post?: unknown }> };
    const documented = Object.entries(doc.paths)
      .filter(([, p]) => p.post)
      .map(([path]) => path)
      .sort();
    assert.deepEqual(
      table((o) => o.path),
      documented,
    );
  });

  it('another merchant’s identifier is answered exactly as an unknown one, and nothing of the other merchant changes', async (t) => {
    const h = await build(t, dialect);
    const a = await tenant(h, h.merchant);
    for (const op of OPERATIONS) {
      for (const [field, id] of Object.entries(op.ids)) {
        await t.test(`${op.operation}: ${field}`, async () => {
          // A merchant of its own for each case: what one case creates cannot answer another.
          const b = await tenant(h, await h.newMerchant());
          const theirs = id.of(a);
          const unknown = lookalike(theirs);
          const bodies = [await op.body(b), await op.body(b)];
          const before = await snapshot(h, b.m.appId);
          const foreign = await h.call(op.path, { ...bodies[0], [field]: theirs }, { merchant: b.m });
          const fresh = await h.call(op.path, { ...bodies[1], [field]: unknown }, { merchant: b.m });
          // The unknown value reached the lookup (not a validation error): the comparison means something.
          assert.deepEqual([fresh.status, fresh.body.code], id.unknown, JSON.stringify(fresh.body));
          assert.deepEqual(comparable(foreign, theirs, op.volatile), comparable(fresh, unknown, op.volatile));
          assertUnchanged(before, await snapshot(h, b.m.appId), `${op.path} with another merchant’s ${field}`);
        });
      }
    }
  });
});
