import assert from 'node:assert/strict';
import { it } from 'node:test';
import { withTrades } from '../src/db/trades-table.js';
import { authCodeSpace } from '../src/ledger/auth-codes.js';
import { build, randomStr } from './helpers/app.js';
import { fundedCard, ok } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';

const N = '/sandbox/network';

eachDialect('authCode: unique per card (issue 32)', (dialect) => {
  it('with a code space of 48, 40 authorizations on one card never repeat a code, and every clearing names exactly one authorization', async (t) => {
    const h = await build(t, dialect);
    const saved = authCodeSpace.size;
    authCodeSpace.size = 48;
    t.after(() => {
      authCodeSpace.size = saved;
    });
    const { cardId } = await fundedCard(h, { topUp: 1000 });
    const auths: Array<{ tradeId: string; authCode: string }> = [];
    for (let i = 0; i < 40; i++) auths.push(await ok(h, `${N}/authorize`, { cardId, amount: (100 + i) / 100 }));
    // Every other one cleared: the payment (151) carries its authorization's code.
    const payments: Array<{ tradeId: string; authCode: string }> = [];
    for (const a of auths.filter((_, i) => i % 2 === 0)) payments.push(await ok(h, `${N}/clear`, { tradeId: a.tradeId }));

    const codes = auths.map((a) => a.authCode);
    assert.equal(new Set(codes).size, codes.length, `repeated codes: ${codes.join(',')}`);
    assert.ok(codes.every((c) => /^\d{6}$/.test(c) && Number(c) < 48));

    const day = new Date().toISOString().slice(0, 10);
    const rows: Array<{ tradeType: number; authCode: string; tradeId: string }> = [];
    for (let start = 0; ; start += 30) {
      const list = await h.call('/api/network/networkAuthTradeList.html', {
        cardId,
        beginDate: day,
        endDate: day,
        start,
        maxSize: 30,
        tradeStatusList: [1, 2, 3, 6, 7, 10],
        randomStr: randomStr(),
      });
      assert.equal(list.status, 200, JSON.stringify(list.body));
      rows.push(...list.body.tradeList);
      if (list.body.tradeList.length < 30) break;
    }
    assert.equal(rows.length, 1 + 40 + 20);
    const originating = rows.filter((r) => r.tradeType !== 151);
    assert.equal(new Set(originating.map((r) => r.authCode)).size, originating.length, 'a code names one record of the card');
    const cleared = rows.filter((r) => r.tradeType === 151);
    assert.equal(cleared.length, payments.length);
    for (const p of cleared) {
      const named = rows.filter((r) => r.tradeType === 150 && r.authCode === p.authCode);
      assert.equal(named.length, 1, `clearing ${p.tradeId} names ${named.length} authorizations`);
    }
    // The claims: one per code drawn (the top-up's and the 40 authorizations').
    const claims = await h.db.database.db.selectFrom('trade_auth_codes').select('auth_code').where('card_id', '=', cardId).execute();
    assert.equal(claims.length, 41);
  });

  it('a transfer draws one code free on both cards', async (t) => {
    const h = await build(t, dialect);
    const saved = authCodeSpace.size;
    authCodeSpace.size = 12;
    t.after(() => {
      authCodeSpace.size = saved;
    });
    const a = await fundedCard(h, { topUp: 100 });
    const b = await fundedCard(h, { topUp: 100 });
    for (let i = 0; i < 5; i++) {
      await ok(h, `${N}/authorize`, { cardId: a.cardId, amount: 1 });
      await ok(h, `${N}/authorize`, { cardId: b.cardId, amount: 1 });
    }
    const moved = await ok(h, `${N}/transfer`, { cardId: a.cardId, toCardId: b.cardId, amount: 1 });
    for (const cardId of [a.cardId, b.cardId]) {
      const rows = await withTrades(h.db.database.db)
        .selectFrom('trades')
        .select(['auth_code', 'trade_type'])
        .where('card_id', '=', cardId)
        .execute();
      assert.equal(new Set(rows.map((r) => r.auth_code)).size, rows.length, `card ${cardId}: ${rows.map((r) => r.auth_code).join(',')}`);
      assert.ok(rows.some((r) => r.auth_code === moved.authCode));
    }
  });

  it('concurrent authorizations and transfers on two cards, with a code space of 64, never repeat a code on a card', async (t) => {
    const h = await build(t, dialect);
    const saved = authCodeSpace.size;
    authCodeSpace.size = 64;
    t.after(() => {
      authCodeSpace.size = saved;
    });
    const a = await fundedCard(h, { topUp: 500 });
    const b = await fundedCard(h, { topUp: 500 });
    const calls: Array<Promise<{ status: number }>> = [];
    for (let i = 0; i < 20; i++) {
      calls.push(h.call(`${N}/authorize`, { cardId: a.cardId, amount: 1, randomStr: randomStr() }));
      calls.push(h.call(`${N}/authorize`, { cardId: b.cardId, amount: 1, randomStr: randomStr() }));
      if (i % 4 === 0) calls.push(h.call(`${N}/transfer`, { cardId: a.cardId, toCardId: b.cardId, amount: 1, randomStr: randomStr() }));
    }
    const replies = await Promise.all(calls);
    assert.ok(
      replies.every((r) => r.status === 200),
      JSON.stringify(replies.filter((r) => r.status !== 200)),
    );
    for (const cardId of [a.cardId, b.cardId]) {
      const rows = await withTrades(h.db.database.db).selectFrom('trades').select('auth_code').where('card_id', '=', cardId).execute();
      assert.equal(rows.length, 1 + 20 + 5);
      assert.equal(new Set(rows.map((r) => r.auth_code)).size, rows.length, `card ${cardId}: ${rows.map((r) => r.auth_code).join(',')}`);
    }
  });
});
