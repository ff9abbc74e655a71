import assert from 'node:assert/strict';
import { it } from 'node:test';
import { message } from '../../src/iso8583/codec.js';
import { checkLedger } from '../../src/ledger/check.js';
import { build, type Harness, randomStr } from '../helpers/app.js';
import { balances, fundedCard, ok } from '../helpers/cards.js';
import { buildConsole, consoleGet, login, makeOperator } from '../helpers/console.js';
import { eachDialect } from '../helpers/dialects.js';
import { authorizationRequest, cardSecrets, linkOf, Peer, trace } from '../helpers/link.js';

/**
 * Forced posts (decisions §12.7): advices are posted whatever the rules say, and may take a card
 * beyond its balance; what they take beyond it is the card's debt, shown by cardQuery, paid first by
 * what comes to the card, accounted for by `ledger check`, and the `trade` callback says `forced`.
 */

async function setup(t: Parameters<typeof build>[0], dialect: Parameters<typeof build>[1], topUp = 0) {
  const h = await build(t, dialect);
  const { cardId } = await fundedCard(h, topUp ? { topUp } : {});
  const card = await cardSecrets(h, cardId);
  const link = await linkOf(t, h);
  const peer = await Peer.open(t, link.port);
  await h.db.database.db.updateTable('merchants').set({ notify_url: 'http://127.0.0.1:9/hooks' }).execute();
  return { h, cardId, card, peer, port: link.port };
}

async function clean(h: Harness): Promise<Record<string, number>> {
  const report = await checkLedger(h.db.database);
  assert.deepEqual(report.problems, []);
  return report.debt;
}

async function cardQuery(h: Harness, cardId: string) {
  return (await ok(h, '/api/network/cardQuery.html', { cardId })) as {
    availableBalance: number;
    ledgerBalance: number;
    debtBalance: number;
  };
}

/** The `trade` callbacks written so far, their bodies. */
async function tradeEvents(h: Harness): Promise<Array<Record<string, unknown>>> {
  const rows = await h.db.database.db.selectFrom('callback_events').select(['type', 'payload']).where('type', '=', 'trade').execute();
  return rows.map((r) => JSON.parse(r.payload) as Record<string, unknown>);
}

/** An 0220 clearing (or, processing 20, a refund) naming `original` in field 90, or none (with field 2). */
function clearing(
  amount: number,
  opts: { original?: { mti: string; fields: Map<number, string> }; pan?: string; processing?: string },
): ReturnType<typeof message> {
  const o = opts.original?.fields;
  return message('0220', {
    ...(opts.pan ? { 2: opts.pan } : {}),
    3: opts.processing ?? '000000',
    4: String(amount).padStart(12, '0'),
    ...trace(),
    32: '12345678',
    49: '978',
    ...(o ? { 90: `${opts.original?.mti}${o.get(11)}${o.get(7)}${(o.get(32) as string).padStart(11, '0')}${'0'.repeat(11)}` } : {}),
  });
}

eachDialect('network link: forced posts (decisions §12.7)', (dialect) => {
  it('an 0120 advice on a frozen card posts and answers 00; its callback is forced; it is counted', async (t) => {
    const { h, cardId, card, peer } = await setup(t, dialect, 5);
    await ok(h, '/api/network/cardFreeze.html', { cardId, reason: 'lost' });
    // An 0100 is declined (62); the advice of the same purchase is a fact and is posted, beyond the balance.
    assert.equal((await peer.ask(authorizationRequest(card, { amount: 800 }))).fields.get(39), '62');
    const advice = authorizationRequest(card, { amount: 800, mti: '0120' });
    const a = await peer.ask(advice);
    assert.deepEqual([a.mti, a.fields.get(39)], ['0130', '00']);
    assert.match(a.fields.get(38) ?? '', /^\w{6}$/);
    // A retransmission (0121) acts no more.
    assert.equal((await peer.ask({ mti: '0121', fields: advice.fields })).fields.get(39), '00');
    const q = await cardQuery(h, cardId);
    assert.deepEqual([q.availableBalance, q.ledgerBalance, q.debtBalance], [0, 5, 3], '8.00 held from 5.00: 3.00 owed, a net 5.00');
    assert.deepEqual(await clean(h), { EUR: 300 });
    const forced = (await tradeEvents(h)).filter((e) => e.forced === true);
    assert.equal(forced.length, 1);
    assert.equal(forced[0]?.tradeType, 150);
    assert.equal(forced[0]?.amount, 8);
    const metrics = await h.app.svc.metrics.registry.metrics();
    assert.match(metrics, /cardprogram_network_forced_posts_total\{currency="EUR"\} 1/);
    assert.match(metrics, /cardprogram_network_forced_posts_amount_total\{currency="EUR"\} 800/);

    // Its clearing takes the hold; a reversal advice of a hold releases it, paying the debt first.
    const c = await peer.ask(clearing(800, { original: advice }));
    assert.equal(c.fields.get(39), '00');
    assert.deepEqual(await balances(h, cardId), { available: 0, ledger: -3, status: 'frozen' }, 'the net position: 3.00 owed');
    assert.equal((await cardQuery(h, cardId)).debtBalance, 3);
    await clean(h);
  });

  it('a clearing above the hold on an empty card leaves a debt; non-forced paths still cannot spend; a top-up pays it first', async (t) => {
    const { h, cardId, card, peer } = await setup(t, dialect, 10);
    const auth = authorizationRequest(card, { amount: 1000 });
    assert.equal((await peer.ask(auth)).fields.get(39), '00');
    const c = await peer.ask(clearing(2500, { original: auth }));
    assert.equal(c.fields.get(39), '00');
    const q = await cardQuery(h, cardId);
    assert.deepEqual([q.availableBalance, q.ledgerBalance, q.debtBalance], [0, -15, 15], 'ledgerBalance is the net position');
    assert.deepEqual(await clean(h), { EUR: 1500 });
    const events = await tradeEvents(h);
    assert.equal(events.at(-1)?.forced, true);
    assert.equal(events.at(-1)?.tradeType, 151);
    assert.equal(events.at(-1)?.amount, 25);
    assert.equal(events[0]?.forced, undefined, 'other trade callbacks are not marked');

    // Non-forced paths: an 0100 (51), the sandbox's authorize (2725), a withdrawal or transfer would fail alike.
    assert.equal((await peer.ask(authorizationRequest(card, { amount: 1 }))).fields.get(39), '51');
    const sandbox = await h.call('/sandbox/network/authorize', { cardId, amount: 0.01, randomStr: randomStr() });
    assert.equal(sandbox.body.code, '2725');

    // A top-up pays the debt first, from the merchant's funding.
    await ok(h, '/api/network/cardTopUp.html', { cardId, amount: 10 });
    let after = await cardQuery(h, cardId);
    assert.deepEqual([after.availableBalance, after.debtBalance], [0, 5]);
    await ok(h, '/api/network/cardTopUp.html', { cardId, amount: 20 });
    after = await cardQuery(h, cardId);
    assert.deepEqual([after.availableBalance, after.ledgerBalance, after.debtBalance], [15, 15, 0]);
    assert.deepEqual(await clean(h), {});
  });

  it('a clearing with no original, on a closed card, is posted; a refund with no original pays the debt; an 0420 after the clearing returns it', async (t) => {
    const { h, cardId, card, peer } = await setup(t, dialect, 10);
    const auth = authorizationRequest(card, { amount: 1000 });
    assert.equal((await peer.ask(auth)).fields.get(39), '00');
    assert.equal((await peer.ask(clearing(1000, { original: auth }))).fields.get(39), '00');
    // The reversal advice after the clearing: the transaction came to 4.00, 6.00 returns.
    const acquirer = (auth.fields.get(32) as string).padStart(11, '0');
    const reversal = message('0420', {
      ...trace(),
      32: '12345678',
      90: `0100${auth.fields.get(11)}${auth.fields.get(7)}${acquirer}${'0'.repeat(11)}`,
      95: `${'400'.padStart(12, '0')}${'0'.repeat(30)}`,
    });
    const r = await peer.ask(reversal);
    assert.deepEqual([r.mti, r.fields.get(39)], ['0430', '00']);
    assert.deepEqual(await balances(h, cardId), { available: 6, ledger: 6, status: 'active' });
    assert.equal((await tradeEvents(h)).at(-1)?.forced, true);
    await clean(h);

    // Closed: its balance goes back to the merchant; a clearing with no original (field 2) still posts.
    await ok(h, '/api/network/cardClose.html', { cardId });
    const noOriginal = await peer.ask(clearing(700, { pan: card.pan }));
    assert.equal(noOriginal.fields.get(39), '00');
    assert.equal((await cardQuery(h, cardId)).debtBalance, 7);
    assert.deepEqual(await clean(h), { EUR: 700 });
    // A refund with no original: pays the debt first, the rest goes to the merchant (the card is closed).
    assert.equal((await peer.ask(clearing(1000, { pan: card.pan, processing: '200000' }))).fields.get(39), '00');
    const q = await cardQuery(h, cardId);
    assert.deepEqual([q.availableBalance, q.debtBalance], [0, 0]);
    assert.deepEqual(await clean(h), {});
    // An unknown PAN is 14, nothing stored.
    assert.equal((await peer.ask(clearing(100, { pan: '4000000000000002' }))).fields.get(39), '14');
  });
});

eachDialect('network link: forced posts and spending limits', (dialect) => {
  it('an advice beyond a daily limit, a clearing above its hold and one after its release count as spent: the counters stay the replay of the records', async (t) => {
    const { h, cardId, card, peer } = await setup(t, dialect, 100);
    await ok(h, '/api/network/cardControlsUpdate.html', { cardId, controls: { spendingLimits: [{ amount: 20, interval: 'daily' }] } });
    const advice = authorizationRequest(card, { amount: 3000, mti: '0120' });
    assert.equal((await peer.ask(advice)).fields.get(39), '00', 'beyond the limit: posted');
    assert.equal((await peer.ask(authorizationRequest(card, { amount: 100 }))).fields.get(39), '61', 'the limit is spent');
    await clean(h);
    assert.equal((await peer.ask(clearing(3500, { original: advice }))).fields.get(39), '00');
    await clean(h);
    const auth = authorizationRequest(card, { amount: 500, extra: { 18: '5411' } });
    await ok(h, '/api/network/cardControlsUpdate.html', { cardId, controls: { spendingLimits: [{ amount: 100, interval: 'daily' }] } });
    assert.equal((await peer.ask(auth)).fields.get(39), '00');
    const acquirer = (auth.fields.get(32) as string).padStart(11, '0');
    const reversal = message('0400', {
      ...trace(),
      32: '12345678',
      90: `0100${auth.fields.get(11)}${auth.fields.get(7)}${acquirer}${'0'.repeat(11)}`,
    });
    assert.equal((await peer.ask(reversal)).fields.get(39), '00');
    assert.equal((await peer.ask(clearing(500, { original: auth }))).fields.get(39), '00', 'a clearing after the release');
    await clean(h);
  });
});

eachDialect('network link: a card’s debt and the link in the console', (dialect) => {
  it('the card page shows the debt a forced post left; the overview the forced posts, the debt and the link’s figures', async (t) => {
    const h = await buildConsole(t, dialect);
    const { cardId } = await fundedCard(h);
    const card = await cardSecrets(h, cardId);
    const peer = await Peer.open(t, (await linkOf(t, h)).port);
    const viewer = await login(h, await makeOperator(h, 'vic@example.com', 'viewer'));
    const tile = async (label: string) => {
      const body = (await consoleGet(h, viewer, '/console')).body;
      const escaped = label.replace(/[()]/g, '\\$&');
      return new RegExp(`<span class="muted">${escaped}</span><b>(.*?)</b>`).exec(body)?.[1];
    };
    // Before any message: nothing forced, no debt, one connection, no peer signed on, no answer.
    assert.deepEqual(
      await Promise.all(['Forced posts today', 'Card debt', 'Connections (this instance)', 'Signed-on peers (this instance)'].map(tile)),
      // The debt is an amount with its currency, also when nothing is owed (issue 43).
      ['0', '0 cards · 0.00 EUR<br>0 cards · 0.00 USDT', '1', '0'],
    );
    assert.equal(await tile('Decision time (this instance)'), '—');

    assert.equal((await peer.ask(message('0800', { 7: '1125171500', 11: '000001', 70: '001' }))).fields.get(39), '00');
    assert.equal((await peer.ask(authorizationRequest(card, { amount: 1234, mti: '0120' }))).fields.get(39), '00');
    assert.equal((await peer.ask(authorizationRequest(card, { amount: 100 }))).fields.get(39), '51');
    const page = await consoleGet(h, viewer, `/console/cards/${cardId}`);
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /Debt<\/[^>]+>\s*<[^>]+>\s*<span class="pill bad">12\.34 EUR<\/span>/);

    assert.equal(await tile('Forced posts today'), '1 · 12.34 EUR', 'from the database');
    assert.equal(await tile('Card debt'), '1 card · 12.34 EUR');
    assert.equal(await tile('Signed-on peers (this instance)'), '1');
    assert.equal(await tile('Answers (this instance)'), '3');
    assert.match(
      (await tile('Decision time (this instance)')) ?? '',
      /^p50 ≤ [\d.]+ ms · p99 ≤ [\d.]+ ms<br><span class="muted">mean [\d.]+ ms<\/span>$/,
    );
    const body = (await consoleGet(h, viewer, '/console')).body;
    const rows = [...body.matchAll(/<tr><td>(\d{4})<\/td><td>(\d\d)<\/td><td>([^<]*)<\/td><td class="num">(\d+)<\/td><\/tr>/g)].map((m) =>
      m.slice(1).join(' '),
    );
    assert.deepEqual(
      rows,
      ['0110 51 insufficient funds 1', '0130 00 approved 1', '0810 00 approved 1'],
      'answers by MTI and response code, with its meaning',
    );
  });
});

eachDialect('network link: forced posts racing spends keep the invariants', (dialect) => {
  it('advices and authorizations at once on one card: never a negative available balance, the books clean', async (t) => {
    const { h, cardId, card, port } = await setup(t, dialect, 10);
    // One connection per message: answers on one connection come in the order they are decided.
    const peers = await Promise.all(Array.from({ length: 12 }, () => Peer.open(t, port)));
    const spends = Array.from({ length: 8 }, () => h.call('/sandbox/network/authorize', { cardId, amount: 3, randomStr: randomStr() }));
    const advices = peers.slice(0, 8).map((p) => p.ask(authorizationRequest(card, { amount: 300, mti: '0120' })));
    const links = peers.slice(8).map((p) => p.ask(authorizationRequest(card, { amount: 300 })));
    const [s, a, l] = await Promise.all([Promise.all(spends), Promise.all(advices), Promise.all(links)]);
    assert.deepEqual(
      a.map((m) => [m.mti, m.fields.get(39)]),
      a.map(() => ['0130', '00']),
      'every advice is posted',
    );
    const approved = s.filter((r) => r.status === 200).length + l.filter((m) => m.fields.get(39) === '00').length;
    assert.ok(approved <= 3, `at most 3 spends of 3.00 from 10.00 (${approved})`);
    const q = await cardQuery(h, cardId);
    assert.ok(q.availableBalance >= 0);
    const report = await checkLedger(h.db.database);
    assert.deepEqual(report.problems, []);
    // Everything is held (authorizations and advices): 3 × approved + 24 held, the rest of 10 available less the debt.
    assert.equal(Math.round((q.availableBalance - q.debtBalance) * 100), 1000 - 300 * approved - 2400);
  });
});
