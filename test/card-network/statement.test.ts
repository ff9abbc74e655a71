import assert from 'node:assert/strict';
import { it } from 'node:test';
import { message } from '../../src/iso8583/codec.js';
import { fundedCard, ok, todaysTrades } from '../helpers/cards.js';
import { buildConsole, consoleGet, login, makeOperator } from '../helpers/console.js';
import { eachDialect } from '../helpers/dialects.js';
import { authorizationRequest, cardSecrets, linkOf, Peer, trace } from '../helpers/link.js';

/**
 * The card's statement over the link (issue 43, item 1): the 4.1 list's `remark` is the merchant
 * (field 43's acceptor name and city), as interface §2.1 defines it ("transaction merchant
 * description"), not the RRN; the RRN is in tradeQuery's `network`, and the console's Description
 * column shows the merchant too.
 */
eachDialect('network link: the statement names the merchant (issue 43)', (dialect) => {
  it('an 0100, an 0200 and a forced 0220: remark is "NAME, CITY", tradeQuery carries the RRN, the console shows the merchant', async (t) => {
    const h = await buildConsole(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const card = await cardSecrets(h, cardId);
    const link = await linkOf(t, h);
    const peer = await Peer.open(t, link.port);

    const auth = authorizationRequest(card, { amount: 1234, extra: { 37: 'RRN000000041' } });
    assert.equal((await peer.ask(auth)).fields.get(39), '00');
    const single = authorizationRequest(card, {
      amount: 500,
      mti: '0200',
      extra: { 37: 'RRN000000042', 43: `${'Bakery Lindner'.padEnd(25)}${'Munich'.padEnd(13)}DE` },
    });
    assert.equal((await peer.ask(single)).fields.get(39), '00');
    // A clearing naming no original (field 2 only): a forced post, its remark from its own field 43.
    const forced = message('0220', {
      2: card.pan,
      3: '000000',
      4: '000000000300',
      ...trace(),
      32: '12345678',
      37: 'RRN000000043',
      43: `${'Kiosk Am Markt'.padEnd(25)}${''.padEnd(13)}DE`,
      49: '978',
    });
    assert.equal((await peer.ask(forced)).fields.get(39), '00');

    const list = await todaysTrades(h, cardId);
    const remarks = list.filter((r) => r.tradeType === 150 || r.tradeType === 151).map((r) => r.remark);
    assert.deepEqual(
      remarks.sort(),
      ['Bakery Lindner, Munich', 'Bakery Lindner, Munich', 'Corner Grocery, Berlin', 'Kiosk Am Markt'].sort(),
    );
    assert.ok(!list.some((r) => r.remark.includes('RRN')), 'no RRN in any remark');

    const messages = await h.db.database.db.selectFrom('network_messages').select(['trade_id', 'stan']).execute();
    const tradeOf = (stan: string | undefined) => messages.find((m) => m.stan === stan)?.trade_id as string;
    const q1 = await ok(h, '/api/network/tradeQuery.html', { tradeId: tradeOf(auth.fields.get(11)) });
    assert.equal(q1.trade.remark, 'Corner Grocery, Berlin');
    assert.deepEqual(q1.network, { rrn: 'RRN000000041', acquirer: '12345678', stan: auth.fields.get(11), mti: '0100' });
    // The 0200's payment, and its authorization (found through the payment), carry the 0200's RRN.
    const payment = await ok(h, '/api/network/tradeQuery.html', { tradeId: tradeOf(single.fields.get(11)) });
    assert.equal(payment.network.rrn, 'RRN000000042');
    const singleAuth = list.find((r) => r.tradeType === 150 && r.remark === 'Bakery Lindner, Munich');
    assert.ok(singleAuth);
    assert.equal((await ok(h, '/api/network/tradeQuery.html', { tradeId: singleAuth.tradeId })).network.rrn, 'RRN000000042');
    const f = await ok(h, '/api/network/tradeQuery.html', { tradeId: tradeOf(forced.fields.get(11)) });
    assert.deepEqual([f.trade.remark, f.network.rrn, f.network.mti], ['Kiosk Am Markt', 'RRN000000043', '0220']);
    // A sandbox transaction has no network message.
    const topUp = list.find((r) => r.tradeType === 100);
    assert.ok(topUp);
    assert.equal((await ok(h, '/api/network/tradeQuery.html', { tradeId: topUp.tradeId })).network, null);

    const op = await makeOperator(h, 'viewer@example.test', 'viewer');
    const s = await login(h, op);
    const page = await consoleGet(h, s, `/console/cards/${cardId}`);
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /Corner Grocery, Berlin/);
    assert.match(page.body, /Bakery Lindner, Munich/);
    assert.doesNotMatch(page.body, /RRN0000000/);
  });
});
