import assert from 'node:assert/strict';
import { it } from 'node:test';
import { buildApp } from '../src/app.js';
import { message } from '../src/iso8583/codec.js';
import { checkLedger } from '../src/ledger/check.js';
import { expireHolds, holdWindowDays } from '../src/ledger/expire.js';
import { build } from './helpers/app.js';
import { balances, fundedCard, ok, todaysTrades } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';
import { authorizationRequest, cardSecrets, linkOf, Peer, trace } from './helpers/link.js';
import { testLogging } from './helpers/log-audit.js';

/** Hold expiry (decisions §12.9): an authorization not cleared in its window is released once, with a callback. */

const DAY = 86_400_000;

it('the hold window: 31 days for lodging and car rental, else the program’s', () => {
  for (const mcc of ['3351', '3500', '3501', '3999', '7011', '7512', '7513']) assert.equal(holdWindowDays(mcc, 7), 31, mcc);
  for (const mcc of ['3350', '4000', '5411', '7510', '7514', null, undefined, 'abcd']) assert.equal(holdWindowDays(mcc, 7), 7, String(mcc));
  assert.equal(holdWindowDays('5411', 10), 10);
});

eachDialect('hold expiry (decisions §12.9)', (dialect) => {
  it('releases an uncleared hold once with two passes racing, a lodging hold only after 31 days; a later clearing is a forced post', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 100 });
    await h.db.database.db.updateTable('merchants').set({ notify_url: 'http://127.0.0.1:9/hooks' }).execute();
    const card = await cardSecrets(h, cardId);
    const peer = await Peer.open(t, (await linkOf(t, h)).port);
    const grocery = authorizationRequest(card, { amount: 3000 });
    assert.equal((await peer.ask(grocery)).fields.get(39), '00');
    const hotel = authorizationRequest(card, { amount: 2000, extra: { 18: '7011' } });
    assert.equal((await peer.ask(hotel)).fields.get(39), '00');
    assert.equal((await balances(h, cardId)).available, 50);
    const svc = h.app.svc;
    const start = Date.now();

    assert.equal((await expireHolds(svc, start + 6 * DAY)).released, 0, 'not yet due');
    // Two passes at once on two instances (their reapers) on one database: the grocery hold is released once.
    const other = await buildApp(h.config, { database: h.db.database, ...testLogging() });
    t.after(() => other.close());
    const passes = await Promise.all([expireHolds(svc, start + 8 * DAY), expireHolds(other.svc, start + 8 * DAY)]);
    assert.equal(passes[0].released + passes[1].released, 1);
    assert.deepEqual(await balances(h, cardId), { available: 80, ledger: 100, status: 'active' });
    assert.equal((await expireHolds(svc, start + 8 * DAY)).released, 0, 'and not again');

    // The record says why: the authorization is Reversed (3), a Reversal (2) record's remark says the hold expired.
    const authId = [...passes[0].tradeIds, ...passes[1].tradeIds][0] as string;
    const tq = await ok(h, '/api/network/tradeQuery.html', { tradeId: authId });
    assert.equal(tq.trade.tradeStatus, 3);
    const released = (await todaysTrades(h, cardId, { tradeStatusList: [2] })) as Array<{
      tradeStatus: number;
      amount: number;
      remark: string;
    }>;
    assert.deepEqual(
      released.map((r) => [r.tradeStatus, r.amount, r.remark]),
      [[2, 30, 'Hold expired']],
    );
    const events = await h.db.database.db.selectFrom('callback_events').select('payload').where('type', '=', 'trade').execute();
    const expiredEvents = events.map((e) => JSON.parse(e.payload)).filter((e) => e.holdExpired === true);
    assert.equal(expiredEvents.length, 1);
    assert.equal(expiredEvents[0].remark, 'Hold expired');

    // Lodging: 31 days.
    assert.equal((await expireHolds(svc, start + 30 * DAY)).released, 0);
    assert.equal((await expireHolds(svc, start + 32 * DAY)).released, 1);
    assert.deepEqual(await balances(h, cardId), { available: 100, ledger: 100, status: 'active' });

    // The grocery's clearing arrives after its hold expired: a forced post, 00.
    const f = grocery.fields;
    const late = message('0220', {
      3: '000000',
      4: '000000003000',
      ...trace(),
      32: '12345678',
      49: '978',
      90: `0100${f.get(11)}${f.get(7)}${(f.get(32) as string).padStart(11, '0')}${'0'.repeat(11)}`,
    });
    assert.equal((await peer.ask(late)).fields.get(39), '00');
    assert.deepEqual(await balances(h, cardId), { available: 70, ledger: 70, status: 'active' });
    const last = await h.db.database.db.selectFrom('callback_events').select('payload').where('type', '=', 'trade').execute();
    assert.ok(last.map((e) => JSON.parse(e.payload)).some((e) => e.forced === true && e.tradeType === 151 && e.amount === 30));
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
  });
});
