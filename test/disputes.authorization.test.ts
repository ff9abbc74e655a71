// A dispute on an authorization's tradeId (issue 43, item 3): the id a merchant sees first. With
// exactly one payment the dispute is that payment's; cleared more than once (a forced clearing over
// the link), 2730 names the payments' tradeIds; not cleared, 2730 as before.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { message } from '../src/iso8583/codec.js';
import { build } from './helpers/app.js';
import { fundedCard, ok } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';
import { clearedPurchase, disputeOk, disputeRefused } from './helpers/disputes.js';
import { authorizationRequest, cardSecrets, linkOf, Peer, trace } from './helpers/link.js';

eachDialect('disputes: on an authorization’s tradeId', (dialect) => {
  it('one payment: the dispute is the payment’s; not cleared: 2730', async (t) => {
    const h = await build(t, dialect);
    const { cardId, tradeId, authId } = await clearedPurchase(h, { topUp: 100, amount: 40 });
    const d = await disputeOk(h, 'create', { tradeId: authId, reason: 'fraudulent' });
    assert.equal(d.tradeId, tradeId, 'the payment is disputed');
    assert.equal(d.amount, 40);
    // The payment's own id now finds the dispute open (one dispute per transaction, whichever id named it).
    const again = await disputeRefused(h, 'create', { tradeId, reason: 'other' }, 409, '2741');
    assert.equal(again, `tradeId: dispute ${d.disputeId} is open on this transaction`);
    const open = await ok(h, '/sandbox/network/authorize', { cardId, amount: 5 });
    const msg = await disputeRefused(h, 'create', { tradeId: open.tradeId, reason: 'fraudulent' }, 409, '2730');
    assert.match(msg, /^tradeId: the authorization is not cleared/);
  });

  it('two payments (a clearing posted twice over the link): 2730 naming both payments’ tradeIds; each one is disputable', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const card = await cardSecrets(h, cardId);
    const link = await linkOf(t, h);
    const peer = await Peer.open(t, link.port);
    const auth = authorizationRequest(card, { amount: 4250 });
    assert.equal((await peer.ask(auth)).fields.get(39), '00');
    const f = auth.fields;
    const f90 = `0100${f.get(11)}${f.get(7)}${(f.get(32) as string).padStart(11, '0')}${'0'.repeat(11)}`;
    const clearing = () => message('0220', { 3: '000000', 4: '000000004250', ...trace(), 32: '12345678', 49: '978', 90: f90 });
    // The second clearing (another message) finds nothing held: a forced post, a second payment.
    for (let i = 0; i < 2; i++) assert.equal((await peer.ask(clearing())).fields.get(39), '00');
    const rows = await h.db.database.db.selectFrom('network_messages').select(['mti', 'trade_id']).orderBy('created_at').execute();
    const authId = rows.find((r) => r.mti === '0100')?.trade_id as string;
    const payments = rows.filter((r) => r.mti === '0220').map((r) => r.trade_id as string);
    assert.equal(payments.length, 2);
    const msg = await disputeRefused(h, 'create', { tradeId: authId, reason: 'duplicate' }, 409, '2730');
    assert.equal(msg, `tradeId: the authorization was cleared by 2 payments (${payments.join(', ')}); dispute one of them by its tradeId`);
    const d = await disputeOk(h, 'create', { tradeId: payments[1], reason: 'duplicate' });
    assert.equal(d.tradeId, payments[1]);
  });
});
