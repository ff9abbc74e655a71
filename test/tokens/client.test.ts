import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { it } from 'node:test';
import { CardProgram, ConflictError, NotFoundError, type WalletToken } from '../../client/src/index.js';
import { build } from '../helpers/app.js';
import { fundedCard } from '../helpers/cards.js';
import { eachDialect } from '../helpers/dialects.js';
import { seedToken } from '../helpers/tokens.js';

// The SDK's `tokens` resource against the real service over loopback: the async iterator over pages,
// each action, the settings, and refusals as typed errors.

eachDialect('SDK: tokens', (dialect) => {
  it('list by iterator across pages, retrieve, suspend, resume, delete, activate, settings; refusals typed', async (t) => {
    const h = await build(t, dialect);
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    const client = new CardProgram({
      baseUrl: `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`,
      appId: h.merchant.appId,
      secret: h.merchant.secret,
    });
    const { cardId } = await fundedCard(h);
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await seedToken(h.app.svc, { cardId })).tokenId);
    const pending = (await seedToken(h.app.svc, { cardId, status: 'pending', methods: ['app'] })).tokenId;

    const all: WalletToken[] = [];
    for await (const tok of client.tokens.list({ cardId, pageSize: 2 })) all.push(tok);
    assert.deepEqual(all.map((x) => x.tokenId).sort(), [...made, pending].sort());
    const active: string[] = [];
    for await (const tok of client.tokens.list({ status: 'active', pageSize: 100 })) active.push(tok.tokenId);
    assert.equal(active.length, 5);

    const [a, b] = made as [string, string];
    assert.equal((await client.tokens.retrieve(a)).walletProvider, 'apple_pay');
    assert.equal((await client.tokens.suspend({ tokenId: a, reason: 'lost' })).status, 'suspended');
    assert.equal((await client.tokens.resume({ tokenId: a })).status, 'active');
    assert.equal((await client.tokens.delete({ tokenId: b })).status, 'deleted');
    assert.equal((await client.tokens.activate(pending)).status, 'active');

    const gone = await client.tokens.suspend({ tokenId: b }).catch((e: unknown) => e);
    assert.ok(gone instanceof ConflictError && gone.code === '2761', String(gone));
    const unknown = await client.tokens.retrieve('tok_nosuchtoken').catch((e: unknown) => e);
    assert.ok(unknown instanceof NotFoundError && unknown.code === '2760', String(unknown));

    assert.deepEqual(await client.tokens.updateSettings({ methods: ['app'] }), { decisionUrl: null, methods: ['app'] });
    assert.deepEqual(await client.tokens.settings(), { decisionUrl: null, methods: ['app'] });
    assert.deepEqual(await client.tokens.updateSettings({ methods: null }), { decisionUrl: null, methods: null });
  });
});
