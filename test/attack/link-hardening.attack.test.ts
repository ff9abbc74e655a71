import assert from 'node:assert/strict';
import { it } from 'node:test';
import { message } from '../../src/iso8583/codec.js';
import { checkLedger } from '../../src/ledger/check.js';
import { build, type Harness } from '../helpers/app.js';
import { balances, fundedCard, todaysTrades } from '../helpers/cards.js';
import { eachDialect } from '../helpers/dialects.js';
import { authorizationRequest, cardSecrets, linkOf, Peer } from '../helpers/link.js';

/**
 * Issue 39, the attack pass after it was built (an outsider against the link, the port and the
 * reports): each finding reproduced through the real service (the link over TCP, or TLS where the
 * port is the subject), on SQLite and PostgreSQL, and failing before its fix.
 */

async function clean(h: Harness): Promise<void> {
  assert.deepEqual((await checkLedger(h.db.database)).problems, []);
}

async function linked(t: Parameters<typeof build>[0], dialect: Parameters<typeof build>[1], topUp = 100) {
  const h = await build(t, dialect);
  const { cardId } = await fundedCard(h, { topUp });
  const card = await cardSecrets(h, cardId);
  const link = await linkOf(t, h);
  const peer = await Peer.open(t, link.port);
  return { h, cardId, card, peer, port: link.port };
}

eachDialect('attack on the hardened link (issue 39)', (dialect) => {
  it('F2: an 0100/0200 without field 22, or with a POS entry mode not listed, is 30: the card checks cannot be skipped, nothing booked or approved', async (t) => {
    const { h, cardId, card, peer } = await linked(t, dialect);
    // A wrong CVV2 and a wrong expiry: with field 22 left out (or not one of the listed modes) the
    // card-not-present checks were skipped and the purchase approved.
    const wrong = { ...card, cvv: card.cvv === '999' ? '998' : '999', expiry: card.expiry === '3012' ? '3011' : '3012' };
    const before = await todaysTrades(h, cardId);
    const modes: Array<string | undefined> = [undefined, '000', '020', '990', '800', '950'];
    for (const mti of ['0100', '0200']) {
      for (const mode of modes) {
        const msg = authorizationRequest(wrong, { amount: 100, mti });
        if (mode === undefined) msg.fields.delete(22);
        else msg.fields.set(22, mode);
        // Without field 14 and 48 too: nothing to compare at all.
        const bare = authorizationRequest(card, { amount: 100, mti });
        bare.fields.delete(14);
        bare.fields.delete(48);
        if (mode === undefined) bare.fields.delete(22);
        else bare.fields.set(22, mode);
        for (const m of [bare, msg]) {
          const a = await peer.ask(m);
          assert.equal(a.fields.get(39), '30', `${mti} field 22 ${mode ?? 'absent'}: ${a.fields.get(39)}`);
          assert.equal(a.fields.get(38), undefined, 'no authorization code');
        }
      }
    }
    assert.deepEqual(await todaysTrades(h, cardId), before, 'nothing booked');
    const b = await balances(h, cardId);
    assert.equal(b.available, 100, 'the card untouched');
    // Not counted as mismatches either: the card stays active.
    assert.equal(b.status, 'active');
    // A listed mode still decides as before.
    const good = await peer.ask(authorizationRequest(card, { amount: 100 }));
    assert.equal(good.fields.get(39), '00');
    const cash = authorizationRequest(card, { amount: 100, processing: '010000', extra: { 22: '051' } });
    assert.notEqual((await peer.ask(cash)).fields.get(39), '30');
    await clean(h);
  });
});

export { message };
