import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { it } from 'node:test';
import { BadRequestError, CardProgram, ConflictError, type Dispute } from '../client/src/index.js';
import { build, holderBody } from './helpers/app.js';
import { eachDialect } from './helpers/dialects.js';
import { pdf, png } from './helpers/disputes.js';

// The SDK's `disputes` resource (issue 29) against the real service over loopback.

eachDialect('SDK: disputes', (dialect) => {
  it('create with files as bytes, update, submit, retrieve, list by iterator, withdraw; refusals as typed errors', async (t) => {
    const h = await build(t, dialect);
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    const client = new CardProgram({
      baseUrl: `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`,
      appId: h.merchant.appId,
      secret: h.merchant.secret,
    });
    const holder = await h.call('/api/network/holderCreate.html', holderBody());
    await client.sandbox.reviewHolder({ holderId: holder.body.holderId, auditStatus: 2 });
    const card = await client.cards.apply({ holderId: holder.body.holderId, currency: 'EUR' });
    await client.cards.topUp({ cardId: card.cardId, amount: 100 });
    const payments: string[] = [];
    for (let i = 0; i < 5; i++) {
      const auth = await client.sandbox.authorize({ cardId: card.cardId, amount: 2 });
      payments.push((await client.sandbox.clear({ tradeId: auth.tradeId })).tradeId);
    }
    const created: Dispute[] = [];
    for (const tradeId of payments) created.push(await client.disputes.create({ tradeId, reason: 'duplicate' }));
    const first = created[0] as Dispute;
    const updated = await client.disputes.update({
      disputeId: first.disputeId,
      explanation: 'charged twice',
      evidence: [
        { fileName: 'a.pdf', contentType: 'application/pdf', data: new Uint8Array(pdf(5)) },
        { fileName: 'b.png', contentType: 'image/png', data: png().toString('base64') },
      ],
    });
    assert.deepEqual(updated.evidence.map((e) => e.fileName).sort(), ['a.pdf', 'b.png']);
    const submitted = await client.disputes.submit(first.disputeId);
    assert.equal(submitted.status, 'submitted');
    const again = await client.disputes.submit(first.disputeId).catch((e: unknown) => e);
    assert.ok(again instanceof ConflictError && again.code === '2742');
    const bad = await client.disputes
      .update({
        disputeId: (created[1] as Dispute).disputeId,
        evidence: [{ fileName: 'x.pdf', contentType: 'application/pdf', data: '<html>' }],
      })
      .catch((e: unknown) => e);
    assert.ok(bad instanceof BadRequestError && bad.code === '2744');
    assert.equal((await client.disputes.retrieve(first.disputeId)).explanation, 'charged twice');
    const all: string[] = [];
    for await (const d of client.disputes.list({ cardId: card.cardId, pageSize: 2 })) all.push(d.disputeId);
    // Every one, each once, across pages of 2 (newest first; two created in the same millisecond may come either way).
    assert.deepEqual([...all].sort(), created.map((d) => d.disputeId).sort());
    const open: string[] = [];
    for await (const d of client.disputes.list({ status: 'unsubmitted' })) open.push(d.disputeId);
    assert.equal(open.length, 4);
    assert.equal((await client.disputes.withdraw(first.disputeId)).status, 'withdrawn');
    const decided = await client.sandbox.decideDispute({ disputeId: first.disputeId, outcome: 'won' }).catch((e: unknown) => e);
    assert.ok(decided instanceof ConflictError);
  });
});
