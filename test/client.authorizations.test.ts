import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { it, type TestContext } from 'node:test';
import { CardProgram, ConflictError, Webhooks, WebhookVerificationError } from '../client/src/index.js';
import { build, holderBody } from './helpers/app.js';
import { eachDialect } from './helpers/dialects.js';

// The SDK's side of issue 16: spending controls, and a merchant's authorization endpoint written
// with the SDK's helper, against the real service over loopback.

async function served(t: TestContext, dialect: Parameters<typeof build>[1]) {
  const h = await build(t, dialect);
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
  const client = new CardProgram({
    baseUrl: base,
    appId: h.merchant.appId,
    secret: h.merchant.secret,
    webhookSecret: h.merchant.webhookSecret,
  });
  const holder = await h.call('/api/network/holderCreate.html', holderBody());
  await client.sandbox.reviewHolder({ holderId: holder.body.holderId, auditStatus: 2 });
  return { h, client, holderId: holder.body.holderId as string };
}

eachDialect('SDK: spending controls and the authorization endpoint', (dialect) => {
  it('controls on apply and by update; cards.get shows what is left; a decline says which rule', async (t) => {
    const { client, holderId } = await served(t, dialect);
    const card = await client.cards.apply({ holderId, currency: 'EUR', controls: { spendingLimits: [{ amount: 30, interval: 'daily' }] } });
    await client.cards.topUp({ cardId: card.cardId, amount: 100 });
    await client.sandbox.authorize({ cardId: card.cardId, amount: 20 });
    const got = await client.cards.get(card.cardId);
    assert.deepEqual(
      got.spending.map((s) => [s.interval, s.spent, s.remaining]),
      [['daily', 20, 10]],
    );
    const over = await client.sandbox.authorize({ cardId: card.cardId, amount: 11 }).catch((e: unknown) => e);
    assert.ok(over instanceof ConflictError);
    assert.equal(over.code, '2728');
    assert.equal(over.decline?.declineReason, 'spending_limit');
    const set = await client.cards.updateControls({ holderId, controls: { blockedCountries: ['KP'] } });
    assert.deepEqual(set, { cardId: null, holderId, controls: { blockedCountries: ['KP'] } });
  });

  it('an endpoint written with webhooks.authorizationRequest and Webhooks.decide approves and declines', async (t) => {
    const { client, holderId } = await served(t, dialect);
    const seen: string[] = [];
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        try {
          const { authorization } = client.webhooks.authorizationRequest(Buffer.concat(chunks), req.headers);
          seen.push(authorization.id);
          const ok = authorization.amount <= 50;
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(Webhooks.decide({ approved: ok, reason: ok ? undefined : 'over 50' }));
        } catch (err) {
          res.writeHead(400).end(String(err));
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/authorize`;
    const settings = await client.authorizationEndpoint.update({ authorizationUrl: url, timeoutMs: 1000 });
    assert.deepEqual(settings, { authorizationUrl: url, timeoutMs: 1000, defaultDecision: 'decline' });
    assert.deepEqual(await client.authorizationEndpoint.get(), settings);

    const card = await client.cards.apply({ holderId, currency: 'EUR' });
    await client.cards.topUp({ cardId: card.cardId, amount: 200 });
    const approved = await client.sandbox.authorize({ cardId: card.cardId, amount: 40, mcc: '5411' });
    assert.equal(seen[0], approved.tradeId, 'the endpoint saw the id the authorization got');
    const declined = await client.sandbox.authorize({ cardId: card.cardId, amount: 60 }).catch((e: unknown) => e);
    assert.ok(declined instanceof ConflictError);
    assert.equal(declined.code, '2729');
    assert.match(declined.message, /over 50/);
    const detail = await client.trades.get(declined.decline?.tradeId ?? '');
    assert.equal(detail.authorization?.decision.endpoint?.outcome, 'declined');
    // A request with another secret is refused by the helper.
    assert.throws(
      () => client.webhooks.authorizationRequest('{}', { 'webhook-id': 'x', 'webhook-timestamp': '1', 'webhook-signature': 'v1,AAAA' }),
      WebhookVerificationError,
    );
  });
});
