import assert from 'node:assert/strict';
import { it } from 'node:test';
import { runVerb } from '../../src/runner.js';
import { build, type Harness, randomStr } from '../helpers/app.js';
import { fundedCard, ok } from '../helpers/cards.js';
import { eachDialect } from '../helpers/dialects.js';
import { seedToken } from '../helpers/tokens.js';
import { flushTsp, tspSimulator } from '../helpers/tsp.js';

/*
 * The card's own life reaching its tokens (decisions §15.4): a freeze suspends every active token
 * (source card), an unfreeze resumes only those, a close deletes them all, in the card's own
 * transaction; each move told to the TSP and to the merchant (token.updated).
 */

async function setUp(t: Parameters<typeof build>[0], dialect: Parameters<typeof build>[1]) {
  // The TSP simulator on loopback (plain HTTP: the sandbox), and a notify URL so that token.updated is written.
  const tsp = await tspSimulator(t);
  const h = await build(t, dialect, { tspClient: { url: tsp.url, cert: null, key: null } });
  await h.db.database.db.updateTable('merchants').set({ notify_url: 'http://127.0.0.1:9/hooks' }).execute();
  return { h, tsp };
}

/** What the TSP took, each call as JSON [reference, action, reason], sorted. */
const sent = (tsp: Awaited<ReturnType<typeof tspSimulator>>) =>
  tsp
    .taken()
    .map((c) => JSON.stringify([c.tokenReferenceId, c.action, c.body.reason]))
    .sort();

const query = async (h: Harness, tokenId: string) => ok(h, '/api/network/tokenQuery.html', { tokenId });

async function tokenEvents(h: Harness, tokenId: string) {
  const rows = await h.db.database.db
    .selectFrom('callback_events')
    .select(['payload'])
    .where('type', '=', 'token.updated')
    .where('subject', '=', `token:${tokenId}`)
    .orderBy('sequence')
    .execute();
  return rows.map((r) => JSON.parse(r.payload).token.status as string);
}

eachDialect('tokens follow their card', (dialect) => {
  it('freeze suspends the active tokens (source card), unfreeze resumes only those, close deletes all; the TSP and the merchant told each', async (t) => {
    const { h, tsp } = await setUp(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 20 });
    const a = await seedToken(h.app.svc, { cardId });
    const b = await seedToken(h.app.svc, { cardId, walletProvider: 'google_pay' });
    const mine = await seedToken(h.app.svc, { cardId });
    const pending = await seedToken(h.app.svc, { cardId, status: 'pending' });
    // The merchant suspends one itself before the freeze.
    await ok(h, '/api/network/tokenSuspend.html', { tokenId: mine.tokenId, reason: 'phone lost' });

    await ok(h, '/api/network/cardFreeze.html', { cardId, reason: 'cardholder asked' });
    for (const { tokenId } of [a, b]) {
      const tok = await query(h, tokenId);
      assert.equal(tok.status, 'suspended');
      assert.deepEqual(
        tok.history.map((e: { status: string; source: string; reason: string | null }) => [e.status, e.source, e.reason]),
        [
          ['active', 'tsp', null],
          ['suspended', 'card', 'card_frozen'],
        ],
      );
    }
    assert.equal((await query(h, mine.tokenId)).history.at(-1).source, 'merchant');
    assert.equal((await query(h, pending.tokenId)).status, 'pending', 'a pending token is left pending by a freeze');

    await flushTsp(h.app.svc);
    assert.deepEqual(
      sent(tsp),
      [[mine.tokenReferenceId, 'suspend', 'phone lost'], ...[a, b].map((x) => [x.tokenReferenceId, 'suspend', 'card_frozen'])]
        .map((c) => JSON.stringify(c))
        .sort(),
    );

    tsp.calls.length = 0;
    await ok(h, '/api/network/cardUnfreeze.html', { cardId });
    assert.equal((await query(h, a.tokenId)).status, 'active');
    assert.equal((await query(h, b.tokenId)).status, 'active');
    assert.equal((await query(h, mine.tokenId)).status, 'suspended', 'the merchant’s suspension outlives the card’s freeze');
    await flushTsp(h.app.svc);
    assert.deepEqual(sent(tsp), [a, b].map((x) => JSON.stringify([x.tokenReferenceId, 'resume', 'card_unfrozen'])).sort());

    tsp.calls.length = 0;
    await ok(h, '/api/network/cardClose.html', { cardId });
    for (const x of [a, b, mine, pending]) assert.equal((await query(h, x.tokenId)).status, 'deleted');
    await flushTsp(h.app.svc);
    assert.deepEqual(sent(tsp), [a, b, mine, pending].map((x) => JSON.stringify([x.tokenReferenceId, 'delete', 'card_closed'])).sort());
    // The merchant heard of every change of every token, in the token's own order.
    assert.deepEqual(await tokenEvents(h, a.tokenId), ['suspended', 'active', 'deleted']);
    assert.deepEqual(await tokenEvents(h, mine.tokenId), ['suspended', 'deleted']);
    assert.deepEqual(await tokenEvents(h, pending.tokenId), ['deleted']);
  });

  it('a merchant’s suspension of a token its card’s freeze suspended becomes the merchant’s: the unfreeze leaves it suspended', async (t) => {
    const { h, tsp } = await setUp(t, dialect);
    const { cardId } = await fundedCard(h);
    const tok = await seedToken(h.app.svc, { cardId });
    await ok(h, '/api/network/cardFreeze.html', { cardId });
    const taken = await ok(h, '/api/network/tokenSuspend.html', { tokenId: tok.tokenId, reason: 'fraud suspected' });
    assert.equal(taken.status, 'suspended');
    assert.deepEqual(taken.history.map((e: { status: string; source: string }) => [e.status, e.source]).slice(1), [
      ['suspended', 'card'],
      ['suspended', 'merchant'],
    ]);
    // Resumed while the card is frozen: refused (2724), nothing changed.
    const refused = await h.call('/api/network/tokenResume.html', { tokenId: tok.tokenId, randomStr: randomStr() });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.code, '2724');
    await ok(h, '/api/network/cardUnfreeze.html', { cardId });
    assert.equal((await query(h, tok.tokenId)).status, 'suspended');
    await flushTsp(h.app.svc);
    // The TSP heard of the one suspension only: the merchant's taking it over changed nothing there.
    assert.deepEqual(
      tsp.taken().map((c) => c.action),
      ['suspend'],
    );
    // The merchant resumes it once the card is active again.
    assert.equal((await ok(h, '/api/network/tokenResume.html', { tokenId: tok.tokenId })).status, 'active');
  });

  it('the operator’s freeze and close from the CLI’s verbs reach the tokens too, in the same transaction', async (t) => {
    const { h } = await setUp(t, dialect);
    const { cardId } = await fundedCard(h);
    const tok = await seedToken(h.app.svc, { cardId });
    const { setCardFrozen } = await import('../../src/cards/status.js');
    const { closeCard } = await import('../../src/cards/close.js');
    await runVerb(h.app.svc, setCardFrozen, { input: { cardId, frozen: true, source: 'operator' }, actor: 'cli' });
    assert.equal((await query(h, tok.tokenId)).status, 'suspended');
    const calls = await h.db.database.db.selectFrom('tsp_calls').select(['action', 'reason']).where('token_id', '=', tok.tokenId).execute();
    assert.deepEqual(calls, [{ action: 'suspend', reason: 'card_frozen' }]);
    await runVerb(h.app.svc, closeCard, { input: { cardId, source: 'operator' }, actor: 'cli' });
    assert.equal((await query(h, tok.tokenId)).status, 'deleted');
  });

  it('a security freeze (5 card verification failures, inside a declined authorization) suspends the tokens too', async (t) => {
    const { h } = await setUp(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 20 });
    const tok = await seedToken(h.app.svc, { cardId });
    for (let i = 0; i < 5; i++) {
      const r = await h.call('/sandbox/network/authorize', { cardId, amount: 1, expiry: '4001', randomStr: randomStr() });
      assert.equal(r.body.code, '2731', JSON.stringify(r.body));
    }
    const card = await ok(h, '/api/network/cardQuery.html', { cardId });
    assert.deepEqual([card.status, card.statusSource], ['frozen', 'security']);
    const suspended = await query(h, tok.tokenId);
    assert.deepEqual([suspended.status, suspended.history.at(-1).source], ['suspended', 'card']);
    // The merchant lifts a security freeze (decisions §12.13): the token comes back with it.
    await ok(h, '/api/network/cardUnfreeze.html', { cardId });
    assert.equal((await query(h, tok.tokenId)).status, 'active');
  });

  it('a card change that fails leaves its tokens as they were (one transaction)', async (t) => {
    const { h } = await setUp(t, dialect);
    const { cardId } = await fundedCard(h);
    const tok = await seedToken(h.app.svc, { cardId });
    // The operator's freeze: the merchant may not lift it (2727), so neither do its tokens come back.
    const { setCardFrozen } = await import('../../src/cards/status.js');
    await runVerb(h.app.svc, setCardFrozen, { input: { cardId, frozen: true, source: 'operator' }, actor: 'cli' });
    const before = await h.db.database.db
      .selectFrom('tsp_calls')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    const refused = await h.call('/api/network/cardUnfreeze.html', { cardId, randomStr: randomStr() });
    assert.equal(refused.body.code, '2727');
    assert.equal((await query(h, tok.tokenId)).status, 'suspended');
    const after = await h.db.database.db
      .selectFrom('tsp_calls')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    assert.equal(Number(after.n), Number(before.n));
  });
});
