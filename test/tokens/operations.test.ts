import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { it } from 'node:test';
import { runVerb } from '../../src/runner.js';
import { suspendToken } from '../../src/tokens/actions.js';
import { build, type Harness, randomStr, type TestMerchant } from '../helpers/app.js';
import { fundedCard, ok } from '../helpers/cards.js';
import type { TestDialect } from '../helpers/db.js';
import { eachDialect } from '../helpers/dialects.js';
import { seedToken } from '../helpers/tokens.js';

/*
 * The merchant's token operations (decisions §15.6) through the real app: the happy paths, each
 * refusal with its code, and a merchant that names another merchant's token refused with nothing
 * written (no history, no callback, no call to the TSP).
 */

const path = (op: string) => `/api/network/${op}.html`;

async function setUp(t: TestContext, dialect: TestDialect) {
  const h = await build(t, dialect);
  await h.db.database.db.updateTable('merchants').set({ notify_url: 'http://127.0.0.1:9/hooks' }).execute();
  const { cardId } = await fundedCard(h, { topUp: 10 });
  return { h, cardId };
}

async function refused(h: Harness, op: string, body: Record<string, unknown>, status: number, code: string, merchant?: TestMerchant) {
  const res = await h.call(path(op), { ...body, randomStr: randomStr() }, merchant ? { merchant } : {});
  assert.equal(res.status, status, `${op} ${JSON.stringify(res.body)}`);
  assert.equal(res.body.code, code, `${op} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** What a token's change writes: its history, the callbacks, the calls to the TSP, the audit records. */
async function written(h: Harness) {
  const db = h.db.database.db;
  const count = async (table: 'token_history' | 'callback_events' | 'tsp_calls' | 'audit_events') =>
    Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const statuses = await db.selectFrom('tokens').select(['id', 'status', 'suspended_by']).orderBy('id').execute();
  return {
    history: await count('token_history'),
    events: await count('callback_events'),
    calls: await count('tsp_calls'),
    audit: await count('audit_events'),
    statuses,
  };
}

eachDialect('token operations', (dialect) => {
  it('list, query, suspend, resume, delete: each change in the history, told to the merchant and queued for the TSP', async (t) => {
    const { h, cardId } = await setUp(t, dialect);
    const other = await fundedCard(h);
    const a = await seedToken(h.app.svc, { cardId });
    const b = await seedToken(h.app.svc, { cardId, walletProvider: 'card_on_file' });
    await seedToken(h.app.svc, { cardId: other.cardId });

    const page = await ok(h, path('tokenList'), { cardId, start: 0 });
    assert.equal(page.total, 2);
    assert.deepEqual(page.tokens.map((x: { tokenId: string }) => x.tokenId).sort(), [a.tokenId, b.tokenId].sort());
    assert.equal((await ok(h, path('tokenList'), { start: 0, limit: 1 })).tokens.length, 1);
    assert.equal((await ok(h, path('tokenList'), { start: 0, status: 'suspended' })).total, 0);

    const q = await ok(h, path('tokenQuery'), { tokenId: a.tokenId });
    assert.equal(q.status, 'active');
    assert.equal(q.cardId, cardId);
    assert.deepEqual(q.device, { type: 'phone', name: 'Erika’s iPhone' });
    assert.equal(JSON.stringify(q).includes(a.tokenReferenceId), false, 'the TSP’s reference is not the merchant’s to see');

    const s = await ok(h, path('tokenSuspend'), { tokenId: a.tokenId, reason: 'phone lost' });
    assert.equal(s.status, 'suspended');
    assert.deepEqual(s.history.at(-1), { status: 'suspended', source: 'merchant', at: s.history.at(-1).at, reason: 'phone lost' });
    // Again: answered as it is, nothing more written.
    const before = await written(h);
    assert.equal((await ok(h, path('tokenSuspend'), { tokenId: a.tokenId })).history.length, 2);
    assert.deepEqual(await written(h), before);

    assert.equal((await ok(h, path('tokenResume'), { tokenId: a.tokenId, reason: 'found it' })).status, 'active');
    const d = await ok(h, path('tokenDelete'), { tokenId: b.tokenId, reason: 'removed from the wallet' });
    assert.equal(d.status, 'deleted');
    assert.equal((await ok(h, path('tokenDelete'), { tokenId: b.tokenId })).status, 'deleted', 'a deleted token is answered as it is');

    const calls = await h.db.database.db
      .selectFrom('tsp_calls')
      .select(['token_id', 'action', 'reason', 'status'])
      .orderBy('created_at')
      .execute();
    assert.deepEqual(
      calls.map((c) => [c.token_id, c.action, c.reason, c.status]),
      [
        [a.tokenId, 'suspend', 'phone lost', 'pending'],
        [a.tokenId, 'resume', 'found it', 'pending'],
        [b.tokenId, 'delete', 'removed from the wallet', 'pending'],
      ],
    );
    const events = await h.db.database.db
      .selectFrom('callback_events')
      .select(['payload'])
      .where('type', '=', 'token.updated')
      .orderBy('created_at')
      .orderBy('sequence')
      .execute();
    assert.deepEqual(
      events.map((e) => {
        const token = JSON.parse(e.payload).token;
        return [token.tokenId, token.status];
      }),
      [
        [a.tokenId, 'suspended'],
        [a.tokenId, 'active'],
        [b.tokenId, 'deleted'],
      ],
    );
  });

  it('refusals: unknown token 2760; pending or deleted 2761; resume of a frozen card’s token 2724; the operator’s suspension is the operator’s to lift', async (t) => {
    const { h, cardId } = await setUp(t, dialect);
    await refused(h, 'tokenQuery', { tokenId: 'tok_nosuchtoken' }, 404, '2760');
    await refused(h, 'tokenSuspend', { tokenId: 'tok_nosuchtoken' }, 404, '2760');
    const pending = await seedToken(h.app.svc, { cardId, status: 'pending', methods: ['otp_sms'] });
    const body = await refused(h, 'tokenSuspend', { tokenId: pending.tokenId }, 409, '2761');
    assert.match(body.errMsg ?? body.msg ?? JSON.stringify(body), /pending/);
    await refused(h, 'tokenResume', { tokenId: pending.tokenId }, 409, '2761');
    // Its step-up offered codes only: the merchant's app cannot confirm it.
    await refused(h, 'tokenActivate', { tokenId: pending.tokenId }, 409, '2761');
    await ok(h, path('tokenDelete'), { tokenId: pending.tokenId });
    await refused(h, 'tokenSuspend', { tokenId: pending.tokenId }, 409, '2761');
    await refused(h, 'tokenResume', { tokenId: pending.tokenId }, 409, '2761');

    // The operator's suspension (a fraud hold): the merchant may not resume it.
    const held = await seedToken(h.app.svc, { cardId });
    await runVerb(h.app.svc, suspendToken, { input: { tokenId: held.tokenId, reason: 'fraud hold' }, actor: 'cli' });
    const before = await written(h);
    await refused(h, 'tokenResume', { tokenId: held.tokenId }, 409, '2761');
    // Nor take it over: a merchant's suspension ranks below the operator's.
    assert.equal((await ok(h, path('tokenSuspend'), { tokenId: held.tokenId })).history.at(-1).source, 'operator');
    assert.deepEqual(await written(h), before);

    // A frozen card's token comes back with the card, not by itself.
    const tok = await seedToken(h.app.svc, { cardId });
    await ok(h, path('tokenSuspend'), { tokenId: tok.tokenId });
    await ok(h, '/api/network/cardFreeze.html', { cardId });
    await refused(h, 'tokenResume', { tokenId: tok.tokenId }, 409, '2724');
  });

  it('tokenActivate: a pending token offered the app method becomes active and the TSP is told activate; not on a frozen card', async (t) => {
    const { h, cardId } = await setUp(t, dialect);
    const p = await seedToken(h.app.svc, { cardId, status: 'pending', methods: ['otp_sms', 'app'] });
    const active = await ok(h, path('tokenActivate'), { tokenId: p.tokenId });
    assert.equal(active.status, 'active');
    assert.deepEqual(active.history.at(-1), {
      status: 'active',
      source: 'merchant',
      at: active.history.at(-1).at,
      reason: 'app_confirmed',
    });
    assert.equal((await ok(h, path('tokenActivate'), { tokenId: p.tokenId })).status, 'active', 'an active token is answered as it is');
    const calls = await h.db.database.db.selectFrom('tsp_calls').select(['action']).where('token_id', '=', p.tokenId).execute();
    assert.deepEqual(calls, [{ action: 'activate' }]);

    const q = await seedToken(h.app.svc, { cardId, status: 'pending' });
    await ok(h, '/api/network/cardFreeze.html', { cardId });
    await refused(h, 'tokenActivate', { tokenId: q.tokenId }, 409, '2724');
    assert.equal((await ok(h, path('tokenQuery'), { tokenId: q.tokenId })).status, 'pending');
  });

  it('another merchant can neither see nor act on a token: 2760 as an unknown one, and nothing written', async (t) => {
    const { h, cardId } = await setUp(t, dialect);
    const mallory = await h.newMerchant();
    const active = await seedToken(h.app.svc, { cardId });
    const suspended = await seedToken(h.app.svc, { cardId });
    await ok(h, path('tokenSuspend'), { tokenId: suspended.tokenId });
    const pending = await seedToken(h.app.svc, { cardId, status: 'pending' });
    const before = await written(h);
    for (const [op, tokenId] of [
      ['tokenQuery', active.tokenId],
      ['tokenSuspend', active.tokenId],
      ['tokenDelete', active.tokenId],
      ['tokenResume', suspended.tokenId],
      ['tokenDelete', suspended.tokenId],
      ['tokenActivate', pending.tokenId],
    ] as const) {
      const body = op === 'tokenQuery' || op === 'tokenActivate' ? { tokenId } : { tokenId, reason: 'mine now' };
      const res = await refused(h, op, body, 404, '2760', mallory);
      assert.equal(JSON.stringify(res).includes(cardId), false);
    }
    // Its list names the victim's card and gets nothing.
    const list = await ok(h, path('tokenList'), { cardId, start: 0 }, mallory);
    assert.deepEqual(list, { total: 0, tokens: [] });
    const after = await written(h);
    // Only idempotency keys and nonces may differ: no token, history, callback, call or audit record.
    assert.deepEqual(after, before);
  });

  it('settings: default, update of the fields given, null restores, bad values refused 1002', async (t) => {
    const { h } = await setUp(t, dialect);
    assert.deepEqual(await ok(h, path('tokenSettingsQuery'), {}), { decisionUrl: null, methods: null });
    assert.deepEqual(await ok(h, path('tokenSettingsUpdate'), { methods: ['app', 'otp_sms'] }), {
      decisionUrl: null,
      methods: ['app', 'otp_sms'],
    });
    assert.deepEqual(await ok(h, path('tokenSettingsUpdate'), { decisionUrl: 'http://127.0.0.1:9/token-decision' }), {
      decisionUrl: 'http://127.0.0.1:9/token-decision',
      methods: ['app', 'otp_sms'],
    });
    assert.deepEqual(await ok(h, path('tokenSettingsQuery'), {}), {
      decisionUrl: 'http://127.0.0.1:9/token-decision',
      methods: ['app', 'otp_sms'],
    });
    assert.deepEqual(await ok(h, path('tokenSettingsUpdate'), { methods: null, decisionUrl: null }), { decisionUrl: null, methods: null });
    await refused(h, 'tokenSettingsUpdate', { methods: ['app', 'app'] }, 400, '1002');
    await refused(h, 'tokenSettingsUpdate', { methods: [] }, 400, '1002');
    await refused(h, 'tokenSettingsUpdate', { methods: ['push'] }, 400, '1002');
    await refused(h, 'tokenSettingsUpdate', { decisionUrl: 'ftp://example.com/x' }, 400, '1002');
    await refused(h, 'tokenList', { start: 0, status: 'frozen' }, 400, '1002');
    await refused(h, 'tokenSuspend', { tokenId: 'tok_x', reason: 'a\u0007b' }, 400, '1002');
    // Another merchant's settings are its own.
    const other = await h.newMerchant();
    await ok(h, path('tokenSettingsUpdate'), { methods: ['app'] });
    assert.deepEqual(await ok(h, path('tokenSettingsQuery'), {}, other), { decisionUrl: null, methods: null });
  });
});
