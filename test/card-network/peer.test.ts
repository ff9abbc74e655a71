import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { it } from 'node:test';
import { build } from '../helpers/app.js';
import { balances, fundedCard } from '../helpers/cards.js';
import { eachDialect } from '../helpers/dialects.js';
import { exchange } from '../helpers/iso8583-peer.js';
import { cardSecrets, linkOf } from '../helpers/link.js';

eachDialect('network link: a peer built on the iso_8583 package', (dialect) => {
  it('runs a purchase, a partial reversal, a clearing, a refund, a balance inquiry, and a single message reversed', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 80 });
    const card = await cardSecrets(h, cardId);
    const link = await linkOf(t, h);
    const socket = connect(link.port, '127.0.0.1');
    t.after(() => socket.destroy());
    await new Promise((resolve) => socket.once('connect', resolve));
    const common = {
      2: card.pan,
      7: '1125171500',
      12: '171500',
      13: '1125',
      14: card.expiry,
      18: '5812',
      22: '051',
      32: '987654',
      37: 'PEER00000001',
      41: 'PEERTERM',
      42: 'PEER ACCEPTOR  ',
      43: 'Trattoria Roma           Rome         IT',
      48: `92${String(card.cvv.length).padStart(2, '0')}${card.cvv}`,
      49: '978',
    };
    const purchase = await exchange(socket, { 0: '0100', ...common, 3: '000000', 4: '000000002550', 11: '424242' });
    assert.equal(purchase['0'], '0110');
    assert.equal(purchase['39'], '00');
    assert.equal(purchase['11'], '424242');
    assert.equal(purchase['4'], '000000002550');
    assert.match(purchase['38'] ?? '', /^\w{6}$/);
    assert.equal((await balances(h, cardId)).available, 80 - 25.5);

    // Partial reversal: the purchase is to hold 10.00 (field 95's actual amount).
    const original = `0100424242${common[7]}${'987654'.padStart(11, '0')}${'0'.repeat(11)}`;
    const reversal = { 0: '0400', 2: card.pan, 3: '000000', 4: '000000002550', 7: '1125171501', 32: '987654', 49: '978', 90: original };
    const partial = await exchange(socket, { ...reversal, 11: '424250', 95: `000000001000${'0'.repeat(30)}` });
    assert.deepEqual([partial['0'], partial['39'], partial['90']], ['0410', '00', original]);
    assert.equal((await balances(h, cardId)).available, 80 - 10);
    // The clearing (0220, field 90 names the purchase) of 8.00 of the 10.00 held; then a refund of 3.00 of it.
    const clearing = { 0: '0220', 3: '000000', 4: '000000000800', 7: '1125171502', 11: '424260', 32: '987654', 49: '978', 90: original };
    const cleared = await exchange(socket, clearing);
    assert.deepEqual([cleared['0'], cleared['39']], ['0230', '00']);
    assert.deepEqual(await balances(h, cardId), { available: 72, ledger: 72, status: 'active' });
    const clearingId = `0220424260${clearing[7]}${'987654'.padStart(11, '0')}${'0'.repeat(11)}`;
    const refunded = await exchange(socket, { ...clearing, 3: '200000', 4: '000000000300', 7: '1125171503', 11: '424261', 90: clearingId });
    assert.deepEqual([refunded['0'], refunded['39']], ['0230', '00']);
    assert.deepEqual(await balances(h, cardId), { available: 75, ledger: 75, status: 'active' });
    // Nothing is held any more: a reversal request now is refused; a reversal advice (0420) is a fact,
    // a forced post (§12.7) returning what the clearing took and was not refunded (5.00).
    const request = await exchange(socket, { ...reversal, 11: '424251' });
    assert.deepEqual([request['0'], request['39']], ['0410', '12']);
    const full = await exchange(socket, { ...reversal, 0: '0420', 11: '424252' });
    assert.deepEqual([full['0'], full['39']], ['0430', '00']);
    assert.deepEqual(await balances(h, cardId), { available: 80, ledger: 80, status: 'active' });

    const inquiry = await exchange(socket, { 0: '0100', ...common, 3: '310000', 11: '424243' });
    assert.equal(inquiry['39'], '00');
    assert.equal(inquiry['54'], '0002978C000000008000');

    // A single message (0200) and its reversal (0400 naming it): the payment returned to the card.
    const single = await exchange(socket, { 0: '0200', ...common, 3: '000000', 4: '000000000500', 11: '424270' });
    assert.deepEqual([single['0'], single['39']], ['0210', '00']);
    assert.deepEqual(await balances(h, cardId), { available: 75, ledger: 75, status: 'active' });
    const singleId = `0200424270${common[7]}${'987654'.padStart(11, '0')}${'0'.repeat(11)}`;
    const undone = await exchange(socket, { ...reversal, 4: '000000000500', 11: '424271', 90: singleId });
    assert.deepEqual([undone['0'], undone['39'], undone['38']], ['0410', '00', single['38']]);
    assert.deepEqual(await balances(h, cardId), { available: 80, ledger: 80, status: 'active' });
  });
});
