import assert from 'node:assert/strict';
import type http from 'node:http';
import { it, type TestContext } from 'node:test';
import { Value } from 'typebox/value';
import { canonicalJson } from '../../src/canonical-json.js';
import { fingerprint } from '../../src/idempotency/keys.js';
import { AuthorizationRequestSchema } from '../../src/trades/schemas.js';
import { build, type Harness, randomStr } from '../helpers/app.js';
import { balances, fundedCard } from '../helpers/cards.js';
import { eachDialect } from '../helpers/dialects.js';
import { receiver } from '../helpers/receiver.js';

const N = '/sandbox/network';
const SET = '/api/network/authorizationEndpointUpdate.html';
const QUERY = '/api/network/tradeQuery.html';
const ACCEPTOR = { mcc: '5812', merchantName: 'Cafe Blue', merchantCity: 'Lyon', merchantCountry: 'FR', channel: 'pos' };

const answer =
  (body: unknown, status = 200, delayMs = 0) =>
  (res: http.ServerResponse) =>
    setTimeout(() => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body)), delayMs);

async function withEndpoint(t: TestContext, h: Harness, settings: Record<string, unknown> = {}) {
  const r = await receiver(t, h.merchant.webhookSecret);
  const set = await h.call(SET, { authorizationUrl: r.url, timeoutMs: 400, ...settings, randomStr: randomStr() });
  assert.equal(set.status, 200, JSON.stringify(set.body));
  return r;
}

async function decisionOf(h: Harness, tradeId: string) {
  const q = await h.call(QUERY, { tradeId, randomStr: randomStr() });
  assert.equal(q.status, 200, JSON.stringify(q.body));
  return q.body.model.authorization.decision;
}

eachDialect('the merchant’s real-time authorization endpoint', (dialect) => {
  it('approve: the endpoint gets a signed authorization.request under the id the authorization then has', async (t) => {
    const h = await build(t, dialect);
    const { cardId, holderId, cardNo } = await fundedCard(h, { topUp: 50 });
    const r = await withEndpoint(t, h);
    r.respond(answer({ approved: true }));
    const res = await h.call(`${N}/authorize`, { cardId, amount: 12.5, remark: 'Lunch', ...ACCEPTOR, randomStr: randomStr() });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(r.received.length, 1);
    const [req] = r.received;
    assert.ok(req?.verified, 'signed like callbacks (Standard Webhooks)');
    assert.equal(req.headers['webhook-id'], res.body.model.tradeId);
    assert.equal(req.body.type, 'authorization.request');
    const a = req.body.authorization;
    assert.deepEqual(
      [a.id, a.cardId, a.cardNo, a.holderId, a.amount, a.fee, a.currency, a.availableBalance, a.remark, a.channel],
      [res.body.model.tradeId, cardId, cardNo, holderId, 12.5, 0, 'EUR', 50, 'Lunch', 'pos'],
    );
    assert.deepEqual(a.merchant, { mcc: '5812', name: 'Cafe Blue', city: 'Lyon', country: 'FR' });
    assert.equal(a.decision, undefined, 'the request carries no decision');
    // What was sent is what the OpenAPI document's authorization.request webhook says it is.
    assert.ok(
      Value.Check(AuthorizationRequestSchema, req.body),
      JSON.stringify([...Value.Errors(AuthorizationRequestSchema, req.body)][0]),
    );
    const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    assert.equal(doc.webhooks['authorization.request'].post.operationId, 'authorizationRequest');
    const d = await decisionOf(h, res.body.model.tradeId);
    assert.equal(d.approved, true);
    assert.equal(d.endpoint.outcome, 'approved');
    assert.ok(Number.isInteger(d.endpoint.latencyMs) && d.endpoint.latencyMs >= 0);
    assert.equal((await balances(h, cardId)).available, 37.5);
  });

  it('decline with a reason: 2729 merchant_declined, nothing held, the decline reported', async (t) => {
    const h = await build(t, dialect);
    await h.db.database.db.updateTable('merchants').set({ notify_url: 'http://127.0.0.1:9/hooks' }).execute();
    const { cardId } = await fundedCard(h, { topUp: 50 });
    const r = await withEndpoint(t, h);
    r.respond(answer({ approved: false, reason: 'velocity check' }));
    const res = await h.call(`${N}/authorize`, { cardId, amount: 10, randomStr: randomStr() });
    assert.deepEqual([res.status, res.body.code, res.body.detail.declineReason], [409, '2729', 'merchant_declined']);
    assert.match(res.body.msg, /velocity check/);
    assert.equal(res.body.msg, 'declined by your authorization endpoint: velocity check', 'as docs/transactions.md words it');
    assert.equal(res.body.detail.tradeId, r.received[0]?.body.authorization.id, 'the id the endpoint was told');
    const d = await decisionOf(h, res.body.detail.tradeId);
    assert.deepEqual([d.approved, d.declineReason, d.code, d.endpoint.outcome], [false, 'merchant_declined', '2729', 'declined']);
    assert.equal((await balances(h, cardId)).available, 50);
    const events = await h.db.database.db
      .selectFrom('callback_events')
      .select('type')
      .where('type', '=', 'authorization.declined')
      .execute();
    assert.equal(events.length, 1);
  });

  it('no answer in time, a 5xx, an unreadable answer or an unreachable URL: the default applies and the record says why', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const r = await withEndpoint(t, h, { timeoutMs: 300 });
    const cases: Array<[(res: http.ServerResponse) => void, string, string]> = [
      [answer({ approved: true }, 200, 1500), 'timeout', 'merchant_timeout'],
      [answer({ approved: true }, 503), 'error', 'merchant_error'],
      [(res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'), 'error', 'merchant_error'],
      [answer({ approved: 'yes' }), 'error', 'merchant_error'],
    ];
    for (const [respond, outcome, reason] of cases) {
      r.respond(respond);
      const started = Date.now();
      const res = await h.call(`${N}/authorize`, { cardId, amount: 1, randomStr: randomStr() });
      assert.ok(Date.now() - started < 1400, 'answered at the deadline, not when the endpoint finally answers');
      assert.deepEqual([res.body.code, res.body.detail?.declineReason], ['2729', reason], JSON.stringify(res.body));
      assert.equal((await decisionOf(h, res.body.detail.tradeId)).endpoint.outcome, outcome);
    }
    // The default approves: the same failures approve, and say so.
    await h.call(SET, { authorizationUrl: r.url, timeoutMs: 300, defaultDecision: 'approve', randomStr: randomStr() });
    r.respond(answer({ approved: true }, 200, 1500));
    const slow = await h.call(`${N}/authorize`, { cardId, amount: 1, randomStr: randomStr() });
    assert.equal(slow.status, 200, JSON.stringify(slow.body));
    const d = await decisionOf(h, slow.body.model.tradeId);
    assert.deepEqual([d.approved, d.endpoint.outcome], [true, 'timeout']);
    assert.match(d.message, /^Approved by default: the authorization endpoint did not answer in time/);
    // Unreachable: nothing listens there.
    await h.call(SET, { authorizationUrl: 'http://127.0.0.1:9/auth', defaultDecision: 'decline', randomStr: randomStr() });
    const gone = await h.call(`${N}/authorize`, { cardId, amount: 1, randomStr: randomStr() });
    assert.deepEqual([gone.body.code, gone.body.detail.declineReason], ['2729', 'merchant_error']);
  });

  it('what the program declines (card status, balance, controls) is not sent to the endpoint', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 5 });
    const r = await withEndpoint(t, h);
    assert.equal((await h.call(`${N}/authorize`, { cardId, amount: 6, randomStr: randomStr() })).body.code, '2725');
    await h.call('/api/network/cardControlsUpdate.html', { cardId, controls: { blockedMccs: ['7995'] }, randomStr: randomStr() });
    assert.equal((await h.call(`${N}/authorize`, { cardId, amount: 1, mcc: '7995', randomStr: randomStr() })).body.code, '2728');
    await h.call('/api/network/cardFreeze.html', { cardId, randomStr: randomStr() });
    assert.equal((await h.call(`${N}/authorize`, { cardId, amount: 1, randomStr: randomStr() })).body.code, '2724');
    assert.equal(r.received.length, 0);
  });

  it('a retry sent while the endpoint is still deciding gets the one decision: the endpoint is asked once', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 50 });
    const r = await withEndpoint(t, h, { timeoutMs: 2000 });
    r.respond(answer({ approved: true }, 200, 300));
    const body = { cardId, amount: 3, randomStr: randomStr() };
    const first = h.call(`${N}/authorize`, body);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const replies = await Promise.all([first, h.call(`${N}/authorize`, body), h.call(`${N}/authorize`, body)]);
    assert.equal(r.received.length, 1, 'asked once');
    for (const res of replies) assert.deepEqual(res.body.model, replies[0]?.body.model);
    assert.equal(replies.filter((x) => x.headers['x-idempotent-replay'] === 'true').length, 2);
    assert.equal((await balances(h, cardId)).available, 47);
    // The same randomStr with another body is 1008, whatever the endpoint would say.
    const other = await h.call(`${N}/authorize`, { ...body, amount: 4 });
    assert.equal(other.body.code, '1008');
    assert.equal(r.received.length, 1);
  });

  it('another body with the randomStr of a request still being decided is 1008 at once, never decided on that request’s claim (outside review, M2)', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 500 });
    const r = await withEndpoint(t, h, { timeoutMs: 2000, defaultDecision: 'approve' });
    r.respond(answer({ approved: true }, 200, 400));
    const body = { cardId, amount: 1, randomStr: randomStr() };
    const first = h.call(`${N}/authorize`, body);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = Date.now();
    const other = await h.call(`${N}/authorize`, { ...body, amount: 400 });
    assert.equal(other.body.code, '1008');
    assert.ok(Date.now() - started < 300, 'refused at once, not after the deadline');
    const done = await first;
    assert.deepEqual([done.status, done.body.model.amount], [200, 1]);
    assert.equal((await balances(h, cardId)).available, 499);
    assert.equal(r.received.length, 1);
  });

  it('a retry after the first request’s process died: past the deadline it applies what the endpoint said, or the default', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 50 });
    const r = await withEndpoint(t, h, { timeoutMs: 100 });
    // What a process that died mid-ask leaves: a claim whose deadline has passed and no answer.
    const body = { cardId, amount: 2, randomStr: randomStr() };
    const now = Date.now();
    await h.db.database.db
      .insertInto('authorization_requests')
      .values({
        merchant_id: h.merchant.appId,
        random_str: body.randomStr,
        trade_id: 'trd_crashedclaim0000000000',
        fingerprint: fingerprint({
          merchantId: h.merchant.appId,
          randomStr: body.randomStr,
          operation: 'sandboxAuthorize',
          canonical: canonicalJson({ ...body, appId: h.merchant.appId }),
        }),
        outcome: null,
        reason: null,
        endpoint_ms: null,
        deadline_at: now - 5000,
        created_at: now - 5100,
      })
      .execute();
    const res = await h.call(`${N}/authorize`, body);
    assert.deepEqual(
      [res.body.code, res.body.detail.declineReason, res.body.detail.tradeId],
      ['2729', 'merchant_timeout', 'trd_crashedclaim0000000000'],
    );
    assert.equal(r.received.length, 0, 'not asked again');
  });

  it('a request refused for a bad field asks nothing and leaves no claim: its retry is answered at once', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 50 });
    const r = await withEndpoint(t, h, { timeoutMs: 2000 });
    const body = { cardId, amount: 1.001, randomStr: randomStr() };
    for (let i = 0; i < 2; i++) {
      const started = Date.now();
      const res = await h.call(`${N}/authorize`, body);
      assert.equal(res.body.code, '2723');
      assert.ok(Date.now() - started < 1000, `answered in ${Date.now() - started} ms`);
    }
    assert.equal(r.received.length, 0);
  });

  it('settings: checked like callback URLs, the timeout bounded; null removes the endpoint', async (t) => {
    const h = await build(t, dialect);
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ authorizationUrl: 'ftp://example.com/x' }, /authorizationUrl: must be an http\(s\) URL/],
      [{ authorizationUrl: 'http://10.0.0.1/auth' }, /authorizationUrl: must name a public or loopback host/],
      [{ authorizationUrl: 'https://example.com/a', timeoutMs: 5001 }, /timeoutMs/],
      [{ authorizationUrl: 'https://example.com/a', timeoutMs: 99 }, /timeoutMs/],
      [{ authorizationUrl: 'https://example.com/a', defaultDecision: 'maybe' }, /defaultDecision/],
    ];
    for (const [settings, msg] of bad) {
      const res = await h.call(SET, { ...settings, randomStr: randomStr() });
      assert.deepEqual([res.status, res.body.code], [400, '1002'], JSON.stringify(res.body));
      assert.match(res.body.msg, msg);
    }
    const set = await h.call(SET, { authorizationUrl: 'https://example.com/auth', randomStr: randomStr() });
    assert.deepEqual(set.body.model, { authorizationUrl: 'https://example.com/auth', timeoutMs: 2000, defaultDecision: 'decline' });
    const off = await h.call(SET, { authorizationUrl: null, randomStr: randomStr() });
    assert.equal(off.body.model.authorizationUrl, null);
    const { cardId } = await fundedCard(h, { topUp: 5 });
    assert.equal((await h.call(`${N}/authorize`, { cardId, amount: 1, randomStr: randomStr() })).status, 200);
    // Production: https to a public host only.
    const prod = await build(t, dialect, { env: 'production', publicUrl: 'https://cards.example.com' });
    const refused = await prod.call(SET, { authorizationUrl: 'http://127.0.0.1:8080/auth', randomStr: randomStr() });
    assert.equal(refused.body.code, '1002');
    assert.match(refused.body.msg, /must be https in production/);
  });
});
