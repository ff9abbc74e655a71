// The wallet tokens' records kept 30 days (src/tokens/purge.ts): provisioning requests and TSP
// notifications older than that are deleted by the hourly reaper's pass; newer ones and the tokens
// themselves stay, and a repeat within the 30 days is still answered from its record.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { reapTokenRecords } from '../../src/tokens/purge.js';
import { eachDialect } from '../helpers/dialects.js';
import { card } from '../three-ds/helpers/acs.js';
import { provisionBody, tspService } from './helpers/tsp.js';

const DAY = 86_400_000;

eachDialect('tokens: records kept 30 days', (dialect) => {
  it('requests and notifications older than 30 days are reaped; newer ones and the tokens stay', async (t) => {
    const { h, tsp, clock } = await tspService(t, dialect);
    const c = await card(h);
    const old = provisionBody(c);
    const made = await tsp.provision(old);
    assert.equal(made.json.decision, 'approve');
    assert.equal(
      (await tsp.notify({ tokenReferenceId: old.tokenReferenceId, event: 'created', at: new Date().toISOString() })).status,
      200,
    );
    clock.now += 20 * DAY;
    const recent = provisionBody(c);
    assert.equal((await tsp.provision(recent)).json.decision, 'approve');
    const deps = { database: h.app.svc.database, clock: h.app.svc.clock, metrics: h.app.svc.metrics, log: h.app.svc.log };
    assert.equal(await reapTokenRecords(deps, clock.now), 0, '20 days: nothing yet');
    assert.deepEqual((await tsp.provision(old)).json, made.json, 'a repeat within the 30 days: the same answer');
    clock.now += 11 * DAY;
    assert.equal(await reapTokenRecords(deps, clock.now), 2, 'the first request and its notification');
    const requests = await h.db.database.db.selectFrom('token_provision_requests').select('request_id').execute();
    assert.deepEqual(
      requests.map((r) => r.request_id),
      [recent.requestId],
    );
    assert.equal((await h.db.database.db.selectFrom('token_notifications').selectAll().execute()).length, 0);
    assert.equal((await h.db.database.db.selectFrom('tokens').selectAll().execute()).length, 2, 'the tokens stay');
  });
});
