// The TSP's notifications (decisions §15.2, §15.4): idempotent by (tokenReferenceId, event, at), in
// any order: `deleted` is final, an `activated` activates a pending token, a stale event changes
// nothing, and a suspension the card, the merchant or the operator made is not lifted by the TSP.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { VerbCtx } from '../../src/context.js';
import { runVerb } from '../../src/runner.js';
import { changeTokenStatus } from '../../src/tokens/lifecycle.js';
import { eachDialect } from '../helpers/dialects.js';
import { card, notifyTo } from '../three-ds/helpers/acs.js';
import { delivered, provisionBody, tspService } from './helpers/tsp.js';

const iso = (ms: number) => new Date(ms).toISOString();

eachDialect('tokens: the TSP’s notifications (decisions §15.2)', (dialect) => {
  it('suspended, resumed, deleted applied with history (source tsp) and a token.updated each; a repeat changes nothing; deleted is final; nothing told back to the TSP', async (t) => {
    const { h, tsp } = await tspService(t, dialect);
    const rx = await notifyTo(t, h);
    const c = await card(h);
    const body = provisionBody(c);
    const tokenId = (await tsp.provision(body)).json.tokenId as string;
    const ref = body.tokenReferenceId as string;
    const t0 = Date.now();
    assert.deepEqual((await tsp.notify({ tokenReferenceId: ref, event: 'created', at: iso(t0) })).json, { tokenId, status: 'active' });
    const suspend = { tokenReferenceId: ref, event: 'suspended', at: iso(t0 + 1000), reason: 'device reported lost' };
    const s1 = await tsp.notify(suspend);
    assert.deepEqual([s1.status, s1.json], [200, { tokenId, status: 'suspended' }]);
    const s2 = await tsp.notify(suspend);
    assert.deepEqual([s2.status, s2.json], [200, { tokenId, status: 'suspended' }], 'the repeat: the same answer');
    const updated = await delivered(h, rx, 'token.updated', (b) => b.token.status === 'suspended');
    assert.equal(updated.body.token.history.at(-1).reason, 'device reported lost');
    assert.deepEqual((await tsp.notify({ tokenReferenceId: ref, event: 'resumed', at: iso(t0 + 2000) })).json.status, 'active');
    // The suspension again, 1 ms apart: another notification (its own `at`), but older than the resume: stale.
    assert.deepEqual((await tsp.notify({ ...suspend, at: iso(t0 + 1001) })).json.status, 'active', 'a stale event changes nothing');
    assert.deepEqual((await tsp.notify({ tokenReferenceId: ref, event: 'deleted', at: iso(t0 + 3000) })).json.status, 'deleted');
    assert.deepEqual((await tsp.notify({ tokenReferenceId: ref, event: 'activated', at: iso(t0 + 4000) })).json.status, 'deleted', 'final');
    assert.deepEqual((await tsp.notify({ tokenReferenceId: ref, event: 'resumed', at: iso(t0 + 5000) })).json.status, 'deleted');
    const history = await h.db.database.db.selectFrom('token_history').selectAll().where('token_id', '=', tokenId).orderBy('seq').execute();
    assert.deepEqual(
      history.map((e) => [e.status, e.source]),
      [
        ['active', 'tsp'],
        ['suspended', 'tsp'],
        ['active', 'tsp'],
        ['deleted', 'tsp'],
      ],
    );
    assert.equal(
      (await h.db.database.db.selectFrom('tsp_calls').selectAll().execute()).length,
      0,
      'the TSP’s own changes are not told back',
    );
    const kept = await h.db.database.db.selectFrom('token_notifications').select(['event', 'outcome']).orderBy('at').execute();
    assert.deepEqual(
      kept.map((n) => [n.event, n.outcome]),
      [
        ['created', 'unchanged'],
        ['suspended', 'applied'],
        ['suspended', 'ignored_stale'],
        ['resumed', 'applied'],
        ['deleted', 'applied'],
        ['activated', 'ignored_final'],
        ['resumed', 'ignored_final'],
      ],
    );
  });

  it('an activated before the code is verified activates a pending token; a resume does not lift a suspension the merchant made; device_changed updates the device', async (t) => {
    const { h, tsp } = await tspService(t, dialect);
    await notifyTo(t, h);
    const c = await card(h);
    const body = provisionBody(c, { walletRiskScore: 5 });
    const p = await tsp.provision(body);
    assert.equal(p.json.decision, 'require_authentication');
    const ref = body.tokenReferenceId as string;
    const t0 = Date.now() + 1000;
    assert.deepEqual(
      (await tsp.notify({ tokenReferenceId: ref, event: 'suspended', at: iso(t0) })).json.status,
      'pending',
      'a pending token is not suspended',
    );
    assert.deepEqual((await tsp.notify({ tokenReferenceId: ref, event: 'activated', at: iso(t0 + 1) })).json.status, 'active');
    // The merchant suspends it (as tokenSuspend will): the TSP is told; its resume does not lift it.
    await runVerb(
      h.app.svc,
      ({ ctx }: { ctx: VerbCtx }) =>
        changeTokenStatus(ctx, { token: { tokenReferenceId: ref }, to: 'suspended', source: 'merchant', reason: 'fraud check' }),
      {
        input: {},
        actor: 'test',
      },
    );
    const calls = await h.db.database.db.selectFrom('tsp_calls').select(['action', 'reason']).execute();
    assert.deepEqual(calls, [{ action: 'suspend', reason: 'fraud check' }]);
    assert.deepEqual(
      (await tsp.notify({ tokenReferenceId: ref, event: 'resumed', at: iso(Date.now() + 60_000) })).json.status,
      'suspended',
    );
    const changed = await tsp.notify({
      tokenReferenceId: ref,
      event: 'device_changed',
      at: iso(Date.now() + 61_000),
      device: { type: 'watch', name: 'Anna’s Watch', locale: 'de-AT' },
    });
    assert.equal(changed.status, 200, changed.text);
    const tok = await h.db.database.db.selectFrom('tokens').selectAll().where('token_reference_id', '=', ref).executeTakeFirstOrThrow();
    assert.deepEqual([tok.device_type, tok.device_name, tok.device_locale, tok.status], ['watch', 'Anna’s Watch', 'de-AT', 'suspended']);
    const missing = await tsp.notify({ tokenReferenceId: 'NOPE123', event: 'deleted', at: iso(t0) });
    assert.deepEqual([missing.status, missing.json.error], [404, 'not_found']);
    const badDate = await tsp.notify({ tokenReferenceId: ref, event: 'deleted', at: '2026-02-31T25:00:00Z' });
    assert.deepEqual([badDate.status, badDate.json.error], [400, 'invalid_request']);
    assert.match(badDate.json.detail, /^at: /);
  });

  it('the same notifications in any order and each twice: the token ends deleted, with no change after it and no error', async (t) => {
    const { h, tsp } = await tspService(t, dialect);
    const c = await card(h);
    for (let round = 0; round < 4; round++) {
      const body = provisionBody(c, { walletRiskScore: round % 2 === 0 ? 0 : 5 });
      const made = await tsp.provision(body);
      if (made.json.decision === 'decline') break; // the card's daily limit of requests
      const t0 = Date.now() + 10_000;
      const events = ['created', 'activated', 'suspended', 'resumed', 'deleted'].map((event, i) => ({
        tokenReferenceId: body.tokenReferenceId,
        event,
        at: iso(t0 + i * 1000),
      }));
      const order = [...events, ...events].sort(() => Math.random() - 0.5);
      for (const n of order) {
        const r = await tsp.notify(n);
        assert.equal(r.status, 200, `${JSON.stringify(n)} → ${r.text}`);
      }
      const tok = await h.db.database.db.selectFrom('tokens').selectAll().where('id', '=', made.json.tokenId).executeTakeFirstOrThrow();
      assert.equal(tok.status, 'deleted', `order ${order.map((n) => n.event).join(', ')}`);
      const history = await h.db.database.db
        .selectFrom('token_history')
        .selectAll()
        .where('token_id', '=', tok.id)
        .orderBy('seq')
        .execute();
      assert.equal(history.at(-1)?.status, 'deleted');
      assert.equal(history.filter((e) => e.status === 'deleted').length, 1, 'deleted once');
      const kept = await h.db.database.db
        .selectFrom('token_notifications')
        .selectAll()
        .where('token_reference_id', '=', body.tokenReferenceId)
        .execute();
      assert.equal(kept.length, 5, 'each notification recorded once');
    }
  });
});
