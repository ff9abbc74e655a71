import assert from 'node:assert/strict';
import { it } from 'node:test';
import { clearingFile, importClearing } from '../../src/card-network/clearing-file.js';
import { type SettlementLine, settlement } from '../../src/card-network/settlement.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import type { Actor } from '../../src/context.js';
import { DomainError } from '../../src/errors.js';
import { message } from '../../src/iso8583/codec.js';
import { checkLedger } from '../../src/ledger/check.js';
import { postException, returnException } from '../../src/ledger/exceptions.js';
import { type ExceptionRecord, listExceptions } from '../../src/ledger/exceptions-query.js';
import { Account } from '../../src/ledger/journal.js';
import { runVerb } from '../../src/runner.js';
import { build, type Harness } from '../helpers/app.js';
import { fundedCard, ok, todaysTrades } from '../helpers/cards.js';
import { childDatabaseUrl, runCli } from '../helpers/cli.js';
import { eachDialect } from '../helpers/dialects.js';
import { authorizationRequest, cardSecrets, linkOf, Peer, trace } from '../helpers/link.js';

/**
 * Forced posts have a ceiling (decisions §12.13, issue 39 point 10): an advice above
 * CARDPROGRAM_FORCED_POST_MAX, or one that would take its card's debt above CARDPROGRAM_CARD_DEBT_MAX,
 * is acknowledged (00) but held in suspense (`network:suspense`) as an exception, not posted to the
 * card, until an operator posts it or returns it to the network (the settlement's exceptions lines).
 */

/** The settlement's exceptions lines of a row (or a total): `exceptions-held`, `exceptions-returned`. */
const exceptionsLines = (row: { lines: SettlementLine[] } | undefined) => row?.lines.filter((l) => l.line.startsWith('exceptions-'));

const ALICE: Actor = { kind: 'operator', via: 'cli', who: 'alice', origin: 'test' };
const BOB: Actor = { kind: 'operator', via: 'console', who: 'bob@example.com', origin: '127.0.0.1' };

async function setup(t: Parameters<typeof build>[0], dialect: Parameters<typeof build>[1], topUp = 0) {
  const h = await build(t, dialect);
  const { cardId } = await fundedCard(h, topUp ? { topUp } : {});
  const card = await cardSecrets(h, cardId);
  const link = await linkOf(t, h);
  const peer = await Peer.open(t, link.port);
  return { h, cardId, card, peer, port: link.port };
}

/** An 0220 clearing naming `original` in field 90, or none (then with field 2). */
function clearing(amount: number, opts: { original?: { mti: string; fields: Map<number, string> }; pan?: string; processing?: string }) {
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

async function clean(h: Harness): Promise<void> {
  assert.deepEqual((await checkLedger(h.db.database)).problems, []);
}

async function cardQuery(h: Harness, cardId: string) {
  return (await ok(h, '/api/network/cardQuery.html', { cardId })) as {
    availableBalance: number;
    ledgerBalance: number;
    debtBalance: number;
    status: string;
  };
}

/** What the journal's suspense account holds, minor units of EUR (negative: owed to the network, on no card). */
async function suspense(h: Harness): Promise<number> {
  const rows = await h.db.database.db
    .selectFrom('ledger_postings')
    .select('amount')
    .where('account', '=', Account.suspense)
    .where('currency', '=', 'EUR')
    .execute();
  return rows.reduce((s, r) => s + Number(r.amount), 0);
}

async function openGauge(h: Harness): Promise<number> {
  const text = await h.app.svc.metrics.text();
  const m = /^cardprogram_network_exceptions_open (\d+)$/m.exec(text);
  assert.ok(m, 'the gauge is exported');
  return Number(m[1]);
}

const decide = (
  h: Harness,
  verb: typeof postException | typeof returnException,
  exceptionId: string,
  by: Actor = ALICE,
): Promise<ExceptionRecord> =>
  runVerb(h.app.svc, verb, {
    input: { exceptionId },
    actor: by,
    audit: { action: verb === postException ? 'exception.post' : 'exception.return', target: exceptionId },
  });

async function onlyOpen(h: Harness): Promise<ExceptionRecord> {
  const open = await listExceptions(h.db.database.db);
  assert.equal(open.length, 1, JSON.stringify(open));
  return open[0] as ExceptionRecord;
}

const today = () => new Date().toISOString().slice(0, 10);

eachDialect('network link: forced posts have a ceiling (decisions §12.13)', (dialect) => {
  it('an 0220 of 9 999 999 999.99 with no original: 00, the card untouched, held in suspense, one open exception, the gauge at 1; posted: the card’s debt; a second post refused', async (t) => {
    const { h, cardId, card, peer } = await setup(t, dialect);
    await ok(h, '/api/network/cardFreeze.html', { cardId, reason: 'lost' });
    const huge = 999_999_999_999;
    const advice = clearing(huge, { pan: card.pan });
    const a = await peer.ask(advice);
    assert.deepEqual([a.mti, a.fields.get(39)], ['0230', '00'], 'acknowledged');
    // A retransmission (0221) acts no more.
    assert.equal((await peer.ask({ mti: '0221', fields: advice.fields })).fields.get(39), '00');
    const q = await cardQuery(h, cardId);
    assert.deepEqual([q.availableBalance, q.ledgerBalance, q.debtBalance], [0, 0, 0], 'the card is untouched');
    assert.deepEqual(await todaysTrades(h, cardId), [], 'no transaction on the card');
    assert.equal(await suspense(h), -huge, 'the suspense account holds it');
    const held = await onlyOpen(h);
    assert.deepEqual(
      [held.kind, held.status, held.mti, held.stan, held.cardId, held.amount, held.currency, held.suspended],
      ['clearing', 'open', '0220', advice.fields.get(11), cardId, 9_999_999_999.99, 'EUR', 9_999_999_999.99],
    );
    assert.match(held.reason, /above CARDPROGRAM_FORCED_POST_MAX \(5000\.00\)/);
    assert.equal(await openGauge(h), 1);
    await clean(h);

    // Posted by an operator: a forced post, into the card's debt (the ceilings are the operator's to pass).
    const posted = await decide(h, postException, held.exceptionId);
    assert.deepEqual([posted.status, posted.decidedBy], ['posted', 'cli']);
    assert.ok(posted.tradeId);
    const after = await cardQuery(h, cardId);
    assert.deepEqual([after.availableBalance, after.ledgerBalance, after.debtBalance], [0, -9_999_999_999.99, 9_999_999_999.99]);
    assert.equal(await suspense(h), 0);
    assert.equal(await openGauge(h), 0);
    await clean(h);
    // Decided once: a second post (or a return) is refused and moves nothing.
    await assert.rejects(decide(h, postException, held.exceptionId), (err: unknown) => err instanceof DomainError && err.code === '2730');
    await assert.rejects(decide(h, returnException, held.exceptionId), (err: unknown) => err instanceof DomainError && err.code === '2730');
    assert.equal((await cardQuery(h, cardId)).debtBalance, 9_999_999_999.99);
    const trail = await h.db.database.db
      .selectFrom('audit_events')
      .select(['action', 'target', 'actor'])
      .where('action', 'like', 'exception.%')
      .execute();
    assert.deepEqual(trail, [{ action: 'exception.post', target: held.exceptionId, actor: 'alice' }], 'the refusals wrote nothing');
    await clean(h);
  });

  it('returned: nothing reaches the card; the settlement’s exceptions lines hold it on its day and return it, the net back to what was cleared', async (t) => {
    const { h, cardId, card, peer } = await setup(t, dialect, 100);
    // An ordinary clearing beside it, so the net has something of its own.
    const auth = authorizationRequest(card, { amount: 2000 });
    assert.equal((await peer.ask(auth)).fields.get(39), '00');
    assert.equal((await peer.ask(clearing(2000, { original: auth }))).fields.get(39), '00');
    assert.equal((await peer.ask(clearing(600_000, { pan: card.pan }))).fields.get(39), '00');
    const held = await onlyOpen(h);
    let report = await settlement(h.db.database.db, today());
    assert.deepEqual(exceptionsLines(report.rows[0]), [
      { line: 'exceptions-held', count: 1, amount: 6000, net: 6000 },
      { line: 'exceptions-returned', count: 0, amount: 0, net: 0 },
    ]);
    assert.equal(report.rows[0]?.net, 6020, 'owed to the network: the clearing and the held advice');
    const returned = await decide(h, returnException, held.exceptionId, BOB);
    assert.deepEqual([returned.status, returned.decidedBy, returned.tradeId], ['returned', 'bob@example.com', null]);
    const q = await cardQuery(h, cardId);
    assert.deepEqual([q.availableBalance, q.ledgerBalance, q.debtBalance], [80, 80, 0], 'the card is untouched');
    assert.equal(await suspense(h), 0);
    report = await settlement(h.db.database.db, today());
    assert.equal(report.rows.length, 1);
    const both = [
      { line: 'exceptions-held', count: 1, amount: 6000, net: 6000 },
      { line: 'exceptions-returned', count: 1, amount: 6000, net: -6000 },
    ];
    assert.deepEqual(exceptionsLines(report.rows[0]), both);
    assert.deepEqual([report.rows[0]?.lines.find((l) => l.line === 'cleared')?.amount, report.rows[0]?.net], [20, 20]);
    assert.deepEqual(exceptionsLines(report.totals[0]), both);
    assert.equal(await openGauge(h), 0);
    await assert.rejects(decide(h, postException, held.exceptionId), (err: unknown) => err instanceof DomainError && err.code === '2730');
    await clean(h);
  });

  it('two operators deciding at once: one wins, the other is refused, nothing moves twice', async (t) => {
    const { h, cardId, card, peer } = await setup(t, dialect);
    for (let round = 0; round < 6; round++) {
      assert.equal((await peer.ask(clearing(700_000, { pan: card.pan }))).fields.get(39), '00');
      const held = await onlyOpen(h);
      const verbs: Array<typeof postException | typeof returnException> =
        round % 2 === 0 ? [postException, postException, postException] : [postException, returnException, postException];
      const results: Array<PromiseSettledResult<ExceptionRecord>> = await Promise.allSettled(
        verbs.map((v, i) => decide(h, v, held.exceptionId, i % 2 ? BOB : ALICE)),
      );
      const won = results.filter((r) => r.status === 'fulfilled');
      assert.equal(won.length, 1, `round ${round}: one decision`);
      for (const r of results.filter((x) => x.status === 'rejected')) {
        assert.ok(r.reason instanceof DomainError && r.reason.code === '2730', String(r.reason));
      }
      await clean(h);
    }
    const posted = (await listExceptions(h.db.database.db, { status: 'posted' })).length;
    const returned = (await listExceptions(h.db.database.db, { status: 'returned' })).length;
    assert.equal(posted + returned, 6);
    assert.equal((await cardQuery(h, cardId)).debtBalance, 7000 * posted, 'each posted once');
    assert.equal(await suspense(h), 0);
    const decisions = await h.db.database.db.selectFrom('audit_events').select('action').where('action', 'like', 'exception.%').execute();
    assert.equal(decisions.length, 6, 'one audit record per decision made');
  });

  it('an 0120 above the ceiling holds nothing on the card; posted, its clearing takes the hold; returned, its clearing is held in turn', async (t) => {
    const { h, cardId, card, peer } = await setup(t, dialect, 10);
    const advice = authorizationRequest(card, { amount: 600_000, mti: '0120' });
    const a = await peer.ask(advice);
    assert.deepEqual([a.mti, a.fields.get(39)], ['0130', '00']);
    let q = await cardQuery(h, cardId);
    assert.deepEqual([q.availableBalance, q.ledgerBalance, q.debtBalance], [10, 10, 0]);
    const held = await onlyOpen(h);
    assert.deepEqual([held.kind, held.amount, held.suspended], ['authorization', 6000, 0], 'a hold moves no money: nothing in suspense');
    assert.equal(await suspense(h), 0);
    await clean(h);
    const posted = await decide(h, postException, held.exceptionId);
    q = await cardQuery(h, cardId);
    assert.deepEqual([q.availableBalance, q.ledgerBalance, q.debtBalance], [0, 10, 5990], 'held 6000 from 10: 5990 owed');
    // Its clearing names it (field 90, no field 2): the hold is taken, as an 0100's.
    const c = await peer.ask(clearing(600_000, { original: advice }));
    assert.equal(c.fields.get(39), '00');
    assert.equal((await listExceptions(h.db.database.db)).length, 0, 'nothing held: the clearing matched its hold');
    q = await cardQuery(h, cardId);
    assert.deepEqual([q.availableBalance, q.ledgerBalance, q.debtBalance], [0, -5990, 5990]);
    const trades = await todaysTrades(h, cardId);
    assert.ok(trades.some((tr) => tr.tradeId === posted.tradeId));
    await clean(h);

    // Returned: its clearing (no trade to name, no field 2) is forced on its card, and held in turn.
    const second = authorizationRequest(card, { amount: 550_000, mti: '0120' });
    assert.equal((await peer.ask(second)).fields.get(39), '00');
    const heldAgain = await onlyOpen(h);
    await decide(h, returnException, heldAgain.exceptionId);
    assert.equal((await peer.ask(clearing(550_000, { original: second }))).fields.get(39), '00');
    const clearingHeld = await onlyOpen(h);
    assert.deepEqual([clearingHeld.kind, clearingHeld.cardId, clearingHeld.amount], ['clearing', cardId, 5500]);
    assert.equal(await suspense(h), -550_000);
    await clean(h);
  });

  it('a clearing whose excess over its hold is above the ceiling is held whole, the hold kept; posted, it takes the hold first', async (t) => {
    const { h, cardId, card, peer } = await setup(t, dialect, 100);
    const auth = authorizationRequest(card, { amount: 10_000 });
    assert.equal((await peer.ask(auth)).fields.get(39), '00');
    // 5 100.00 beyond a hold of 100.00: the excess passes 5 000.00.
    assert.equal((await peer.ask(clearing(520_000, { original: auth }))).fields.get(39), '00');
    const held = await onlyOpen(h);
    assert.deepEqual([held.kind, held.amount, held.originalId !== null], ['clearing', 5200, true]);
    let q = await cardQuery(h, cardId);
    assert.deepEqual([q.availableBalance, q.ledgerBalance, q.debtBalance], [0, 100, 0], 'the hold stays');
    await clean(h);
    await decide(h, postException, held.exceptionId);
    q = await cardQuery(h, cardId);
    assert.deepEqual([q.availableBalance, q.ledgerBalance, q.debtBalance], [0, -5100, 5100], 'the hold taken, the rest owed');
    await clean(h);
    // Within the ceiling (a clearing 50.00 above its hold) it is posted at once, as before.
    await ok(h, '/api/network/cardTopUp.html', { cardId, amount: 5200 });
    const small = authorizationRequest(card, { amount: 1000 });
    assert.equal((await peer.ask(small)).fields.get(39), '00');
    assert.equal((await peer.ask(clearing(6000, { original: small }))).fields.get(39), '00');
    assert.equal((await listExceptions(h.db.database.db)).length, 0);
    assert.equal((await cardQuery(h, cardId)).availableBalance, 40);
    await clean(h);
  });

  it('an advice that would take the card’s debt above CARDPROGRAM_CARD_DEBT_MAX is held; a refund (a credit) never is', async (t) => {
    const { h, cardId, card, peer } = await setup(t, dialect);
    for (const amount of [400_000, 400_000]) assert.equal((await peer.ask(clearing(amount, { pan: card.pan }))).fields.get(39), '00');
    assert.equal((await cardQuery(h, cardId)).debtBalance, 8000, 'each below the ceilings: posted');
    assert.equal((await peer.ask(clearing(300_000, { pan: card.pan }))).fields.get(39), '00');
    const held = await onlyOpen(h);
    assert.match(held.reason, /debt would be 11000\.00 EUR, above CARDPROGRAM_CARD_DEBT_MAX \(10000\.00\)/);
    assert.equal((await cardQuery(h, cardId)).debtBalance, 8000);
    // A refund with no original, far above the ceiling, is a credit: posted, paying the debt first.
    assert.equal((await peer.ask(clearing(900_000, { pan: card.pan, processing: '200000' }))).fields.get(39), '00');
    const q = await cardQuery(h, cardId);
    assert.deepEqual([q.availableBalance, q.ledgerBalance, q.debtBalance], [1000, 1000, 0]);
    assert.equal((await listExceptions(h.db.database.db)).length, 1);
    await clean(h);
  });

  it('ledger check: the suspense account is the open exceptions’ total; damage to either side is named', async (t) => {
    const { h, card, peer } = await setup(t, dialect);
    assert.equal((await peer.ask(clearing(600_000, { pan: card.pan }))).fields.get(39), '00');
    const held = await onlyOpen(h);
    await clean(h);
    const db = h.db.database.db;
    const problems = async () => (await checkLedger(h.db.database)).problems;
    // Decided without its money moving: the journal still holds it.
    await db.updateTable('network_exceptions').set({ status: 'returned' }).where('id', '=', held.exceptionId).execute();
    assert.deepEqual(await problems(), [
      'network:suspense: open exceptions hold 0 EUR, the journal says 600000',
      `exception ${held.exceptionId} (returned): its entries leave -600000 in network:suspense, not 0`,
    ]);
    await db.updateTable('network_exceptions').set({ status: 'open' }).where('id', '=', held.exceptionId).execute();
    // Its record says less than the journal holds.
    await db.updateTable('network_exceptions').set({ suspended: 500_000 }).where('id', '=', held.exceptionId).execute();
    assert.deepEqual(await problems(), [
      'network:suspense: open exceptions hold 500000 EUR, the journal says 600000',
      `exception ${held.exceptionId} (open): its entries leave -600000 in network:suspense, not -500000`,
    ]);
    await db.updateTable('network_exceptions').set({ suspended: 600_000 }).where('id', '=', held.exceptionId).execute();
    // Money out of suspense that no exception explains: conservation and the total both say so.
    await db
      .updateTable('ledger_postings')
      .set({ amount: -500_000 })
      .where('trade_id', '=', held.exceptionId)
      .where('account', '=', Account.suspense)
      .execute();
    const damaged = await problems();
    assert.ok(
      damaged.some((p) => /sums to 100000 EUR, not 0/.test(p)),
      damaged.join('\n'),
    );
    assert.ok(damaged.includes('network:suspense: open exceptions hold 600000 EUR, the journal says 500000'), damaged.join('\n'));
    assert.ok(
      damaged.some((p) => /^EUR: operators funded/.test(p)),
      damaged.join('\n'),
    );
  });

  it('a clearing file’s clearing above the ceilings: reported held (naming the exception), not posted, once', async (t) => {
    const { h, cardId, card } = await setup(t, dialect);
    const file = clearingFile([clearing(800_000, { pan: card.pan })]);
    const first = await importClearing(h.app.svc, file);
    const held = await onlyOpen(h);
    assert.equal(first.lines[0]?.outcome, 'held');
    assert.match(first.lines[0]?.reason ?? '', new RegExp(`^held in suspense as ${held.exceptionId}: `));
    assert.equal(first.totals[0]?.held, 1);
    const again = await importClearing(h.app.svc, file);
    assert.equal(again.lines[0]?.outcome, 'duplicate');
    assert.equal((await listExceptions(h.db.database.db)).length, 1);
    assert.equal((await cardQuery(h, cardId)).debtBalance, 0);
    await clean(h);
  });

  it('the ceilings are configured per currency: an amount for all, or a JSON object', async (t) => {
    const d = { CARDPROGRAM_DATA_DIR: (await build(t, dialect)).db.dataDir };
    assert.deepEqual(loadConfig(d).forcedPosts, { postMax: { EUR: 500_000, USDT: 500_000 }, debtMax: { EUR: 1_000_000, USDT: 1_000_000 } });
    assert.deepEqual(loadConfig({ ...d, CARDPROGRAM_FORCED_POST_MAX: '250.5' }).forcedPosts.postMax, { EUR: 25_050, USDT: 25_050 });
    assert.deepEqual(loadConfig({ ...d, CARDPROGRAM_CARD_DEBT_MAX: '{"USDT":"20000.00"}' }).forcedPosts.debtMax, {
      EUR: 1_000_000,
      USDT: 2_000_000,
    });
    for (const [value, why] of [
      ['0', /above 0/],
      ['12.345', /at most 2 decimals/],
      ['{"GBP":"5"}', /no cards are issued in GBP/],
      ['five', /amount in major units/],
      ['{"EUR":', /JSON object per currency/],
    ] as const) {
      assert.throws(
        () => loadConfig({ ...d, CARDPROGRAM_FORCED_POST_MAX: value }),
        (err: unknown) => err instanceof ConfigError && why.test(err.message),
      );
    }
  });

  it('cardprogram network exceptions list, post and return (--json); the settlement prints the exceptions lines', async (t) => {
    const { h, cardId, card, peer } = await setup(t, dialect);
    for (const amount of [510_000, 520_000]) assert.equal((await peer.ask(clearing(amount, { pan: card.pan }))).fields.get(39), '00');
    const env = {
      DATABASE_URL: childDatabaseUrl(h.db),
      CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex'),
      CARDPROGRAM_DATA_DIR: h.db.dataDir,
    };
    const list = await runCli(['network', 'exceptions', 'list', '--json'], env);
    assert.equal(list.code, 0, list.stderr);
    const open = JSON.parse(list.stdout) as ExceptionRecord[];
    assert.deepEqual(
      open.map((e) => [e.status, e.amount, e.cardId]),
      [
        ['open', 5100, cardId],
        ['open', 5200, cardId],
      ],
    );
    const [first, second] = open as [ExceptionRecord, ExceptionRecord];
    const post = await runCli(['network', 'exceptions', 'post', first.exceptionId, '--json'], env);
    assert.equal(post.code, 0, post.stderr);
    assert.equal(JSON.parse(post.stdout).status, 'posted');
    const again = await runCli(['network', 'exceptions', 'return', first.exceptionId], env);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /is posted already \(by cli:\S+ at [^)]+\); nothing moved/);
    const ret = await runCli(['network', 'exceptions', 'return', second.exceptionId], env);
    assert.equal(ret.code, 0, ret.stderr);
    assert.match(ret.stdout, new RegExp(`${second.exceptionId}: returned`));
    assert.equal((await runCli(['network', 'exceptions', 'list'], env)).stdout, 'no open exceptions\n');
    const all = JSON.parse((await runCli(['network', 'exceptions', 'list', '--status', 'all', '--json'], env)).stdout) as ExceptionRecord[];
    assert.deepEqual(all.map((e) => e.status).sort(), ['posted', 'returned']);
    assert.equal((await cardQuery(h, cardId)).debtBalance, 5100);
    const settled = await runCli(['network', 'settlement', '--date', today()], env);
    assert.match(settled.stdout, /exceptions-held 10300 \(2\), exceptions-returned 5200 \(1\); net owed 5100/);
    const csv = (await runCli(['network', 'settlement', '--date', today(), '--csv'], env)).stdout.split('\n');
    assert.equal(csv[0], 'date,currency,merchant_id,line,count,amount,net');
    assert.match(csv.find((l) => l.includes(',exceptions-held,')) ?? '', /,exceptions-held,2,10300,10300$/);
    assert.match(csv.find((l) => l.includes(',exceptions-returned,')) ?? '', /,exceptions-returned,1,5200,-5200$/);
    const trail = await h.db.database.db
      .selectFrom('audit_events')
      .select(['action', 'target', 'source'])
      .where('action', 'like', 'exception.%')
      .orderBy('created_at')
      .execute();
    assert.deepEqual(trail, [
      { action: 'exception.post', target: first.exceptionId, source: 'cli' },
      { action: 'exception.return', target: second.exceptionId, source: 'cli' },
    ]);
    await clean(h);
  });
});
