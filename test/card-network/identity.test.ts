import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Kysely } from 'kysely';
import { clearingFile, importClearing } from '../../src/card-network/clearing-file.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { type IsoMessage, message } from '../../src/iso8583/codec.js';
import { build, type Harness } from '../helpers/app.js';
import { balances, fundedCard } from '../helpers/cards.js';
import { eachDialect } from '../helpers/dialects.js';
import { authorizationRequest, cardSecrets, linkOf, Peer, trace } from '../helpers/link.js';

/**
 * Identity by value (decisions §12.13, issue 39.3): fields 32, 11 and 7 are numbers, so a repeat
 * whose field 32 gained leading zeros is the same message; and only the acquirer that sent an
 * original names it in a reversal or a clearing.
 */

async function setup(t: Parameters<typeof build>[0], dialect: Parameters<typeof build>[1]) {
  const h = await build(t, dialect);
  const { cardId } = await fundedCard(h, { topUp: 100 });
  const card = await cardSecrets(h, cardId);
  const link = await linkOf(t, h);
  const peer = await Peer.open(t, link.port);
  return { h, cardId, card, peer };
}

const withField = (m: IsoMessage, f: number, v: string, mti = m.mti): IsoMessage => ({ mti, fields: new Map(m.fields).set(f, v) });

/** Field 90 naming `original` (as sent), its acquirer as given (n11). */
const f90 = (original: IsoMessage, acquirer = original.fields.get(32) as string) =>
  `0100${original.fields.get(11)}${original.fields.get(7)}${acquirer.padStart(11, '0')}${'0'.repeat(11)}`;

/** An 0400 (or 0220) from `acquirer` naming `original`. */
function naming(mti: '0400' | '0220', original: IsoMessage, acquirer: string, named?: string): IsoMessage {
  const f = original.fields;
  return message(mti, {
    2: f.get(2) as string,
    3: '000000',
    4: f.get(4) as string,
    ...trace(),
    32: acquirer,
    49: '978',
    90: f90(original, named),
  });
}

async function messages(h: Harness) {
  return h.db.database.db.selectFrom('network_messages').select(['msg_class', 'acquirer', 'answer']).execute();
}

eachDialect('network link: identity by value (decisions §12.13)', (dialect) => {
  it('a repeat whose field 32 gained leading zeros is the same message: one approval, one hold; other content under it is 94', async (t) => {
    const { h, cardId, card, peer } = await setup(t, dialect);
    const first = withField(authorizationRequest(card, { amount: 1500 }), 32, '412345');
    const a = await peer.ask(first);
    assert.equal(a.fields.get(39), '00');
    const repeat = await peer.ask(withField(first, 32, '0412345', '0101'));
    assert.deepEqual([repeat.fields.get(39), repeat.fields.get(38)], ['00', a.fields.get(38)], 'the first answer again');
    const again = await peer.ask(withField(first, 32, '00412345'));
    assert.deepEqual([again.fields.get(39), again.fields.get(38)], ['00', a.fields.get(38)], 'an 0100 too: the same message, not a 94');
    assert.equal((await balances(h, cardId)).available, 85, 'held once');
    assert.equal((await messages(h)).length, 1);
    assert.equal((await peer.ask(withField(withField(first, 32, '0412345'), 4, '000000001600'))).fields.get(39), '94');
    assert.equal((await balances(h, cardId)).available, 85);
  });

  it('a reversal from another acquirer is 25 and releases nothing; from the original’s, its field 32 padded or not, it reverses', async (t) => {
    const { h, cardId, card, peer } = await setup(t, dialect);
    const auth = withField(authorizationRequest(card, { amount: 3000 }), 32, '412345');
    assert.equal((await peer.ask(auth)).fields.get(39), '00');
    assert.equal((await balances(h, cardId)).available, 70);
    assert.equal((await peer.ask(naming('0400', auth, '999999'))).fields.get(39), '25', 'field 90 names the original, field 32 another');
    assert.equal((await peer.ask(naming('0400', auth, '999999', '999999'))).fields.get(39), '25', 'field 90 says the other acquirer too');
    assert.equal((await balances(h, cardId)).available, 70, 'nothing released');
    assert.equal((await peer.ask(naming('0400', auth, '0412345', '412345'))).fields.get(39), '00');
    assert.equal((await balances(h, cardId)).available, 100);
  });

  it('a clearing from another acquirer is a forced post, not a match, on the link and in the clearing file; the original’s clears', async (t) => {
    const { h, cardId, card, peer } = await setup(t, dialect);
    const auth = withField(authorizationRequest(card, { amount: 3000 }), 32, '412345');
    assert.equal((await peer.ask(auth)).fields.get(39), '00');
    assert.equal((await peer.ask(naming('0220', auth, '999999'))).fields.get(39), '00');
    const stored = (await messages(h)).filter((m) => m.msg_class === 'financial');
    assert.deepEqual(
      stored.map((m) => JSON.parse(m.answer).forced),
      [true],
      'posted as a forced post',
    );
    // The authorization still holds its 30.00; the forced post took 30.00 more.
    assert.deepEqual(await balances(h, cardId), { available: 40, ledger: 70, status: 'active' });

    const report = await importClearing(
      h.app.svc,
      clearingFile([
        naming('0220', { ...auth, fields: new Map(auth.fields).set(4, '000000000500') }, '888888'),
        naming('0220', auth, '0412345'),
      ]),
    );
    assert.deepEqual(
      report.lines.map((l) => [l.outcome, l.code]),
      [
        ['forced', '00'],
        ['matched', '00'],
      ],
    );
    assert.deepEqual(await balances(h, cardId), { available: 35, ledger: 35, status: 'active' }, 'the original’s clearing took the hold');
  });

  it('migration 0025 stores field 32 by value: a padded row is rewritten, one whose unpadded twin exists is kept', async (t) => {
    const h = await build(t, dialect);
    const db = h.db.database.db as unknown as Kysely<any>;
    const row = (acquirer: string, stan: string) => ({
      msg_class: 'authorization',
      acquirer,
      stan,
      transmitted: '1127120000',
      content_hash: `h${acquirer}${stan}`,
      mti: '0100',
      merchant_id: null,
      card_id: null,
      trade_id: null,
      response_code: '00',
      answer: '{"code":"00"}',
      request: '{}',
      created_at: 1,
    });
    await db
      .insertInto('network_messages')
      .values([row('0412345', '000001'), row('412345', '000002'), row('00412345', '000002'), row('777', '000003')])
      .execute();
    await db.schema.alterTable('cards').dropColumn('verification_failures').execute();
    await db.deleteFrom('cardprogram_migrations').where('name', '=', '2026_11_27_0025_card_verification').execute();
    assert.deepEqual(await migrateToLatest(h.db.database), ['2026_11_27_0025_card_verification']);
    const rows = await db.selectFrom('network_messages').select(['acquirer', 'stan']).orderBy('stan').orderBy('acquirer').execute();
    assert.deepEqual(
      rows.map((r) => [r.stan, r.acquirer]),
      [
        ['000001', '412345'],
        ['000002', '00412345'],
        ['000002', '412345'],
        ['000003', '777'],
      ],
    );
  });
});
