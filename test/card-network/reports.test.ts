// The link's reports (issue 39, points 7, 8 and 12; decisions §12.10, §12.13 "One vocabulary for
// reports"): two imports of one clearing file at once post each message once and the loser says
// `duplicate`; a line reports what its message posted; the import and the settlement name a movement
// alike; won and lost disputes are lines of the settlement, whose net is the journal's network
// accounts' movement of the day. On both databases.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { type ClearingReport, clearingFile, importClearing } from '../../src/card-network/clearing-file.js';
import { settlement } from '../../src/card-network/settlement.js';
import { type IsoMessage, message } from '../../src/iso8583/codec.js';
import { checkLedger } from '../../src/ledger/check.js';
import { Account } from '../../src/ledger/journal.js';
import { build, type Harness, testConfig } from '../helpers/app.js';
import { balances, fundedCard, todaysTrades } from '../helpers/cards.js';
import { f95, naming } from '../helpers/clearing.js';
import { childDatabaseUrl, runCli } from '../helpers/cli.js';
import { eachDialect } from '../helpers/dialects.js';
import { disputeOk } from '../helpers/disputes.js';
import { authorizationRequest, cardSecrets, linkOf, Peer, trace } from '../helpers/link.js';

/** A machine shared with other test runs can take more than the 1.5 s deadline: a 91 here would test the load. */
const slow = { network: { ...testConfig('').network, deadlineMs: 15_000 } };

const POSTED = ['matched', 'matched-difference', 'forced'];
const MOVEMENTS = ['cleared', 'refunded', 'reversed'] as const;
/** Major units of EUR → cents, for sums compared to the unit (the reports give major units). */
const cents = (major: number) => Math.round(major * 100);

async function linkedCard(t: Parameters<typeof build>[0], dialect: Parameters<typeof build>[1], topUp = 1000) {
  const h = await build(t, dialect, slow);
  const { cardId } = await fundedCard(h, { topUp });
  const card = await cardSecrets(h, cardId);
  const link = await linkOf(t, h);
  const peer = await Peer.open(t, link.port);
  const approved = async (m: IsoMessage) => {
    const answer = await peer.ask(m);
    assert.equal(answer.fields.get(39), '00', `${m.mti} ${JSON.stringify(Object.fromEntries(answer.fields))}`);
    return m;
  };
  return { h, cardId, card, approved };
}

/** The journal's movement of an account over the whole test (every posting here is of the day). */
async function journal(h: Harness, account: string): Promise<number> {
  const row = await h.db.database.db
    .selectFrom('ledger_postings')
    .select((eb) => eb.fn.sum<number>('amount').as('s'))
    .where('account', '=', account)
    .executeTakeFirstOrThrow();
  return Number(row.s ?? 0);
}

const today = () => new Date().toISOString().slice(0, 10);

eachDialect('network reports: the import and the settlement (decisions §12.10, §12.13)', (dialect) => {
  it('two imports of one clearing file at once: each message posted once, `duplicate` in the other report, the totals sum to the file’s exactly', async (t) => {
    const { h, cardId, card, approved } = await linkedCard(t, dialect);
    const auths: IsoMessage[] = [];
    for (let i = 0; i < 16; i++) auths.push(await approved(authorizationRequest(card, { amount: 1001 + i * 37 })));
    const clearings = auths.slice(0, 12).map((a, i) => naming(a, '0220', Number(a.fields.get(4)) - (i % 3 === 0 ? 100 : 0)));
    const reversals = auths.slice(12).map((a) => naming(a, '0420', Number(a.fields.get(4))));
    const refund = naming(clearings[0] as IsoMessage, '0220', 250, { processing: '200000' });
    const forced = naming(auths[0] as IsoMessage, '0220', 333);
    forced.fields.set(90, `0100999999${forced.fields.get(7)}${'12345678'.padStart(11, '0')}${'0'.repeat(11)}`);
    const messages = [...clearings, ...reversals, refund, forced];
    const expected = {
      cleared: [...clearings, forced].reduce((s, m) => s + Number(m.fields.get(4)), 0),
      refunded: 250,
      reversed: reversals.reduce((s, m) => s + Number(m.fields.get(4)), 0),
    };
    const file = clearingFile(messages);

    const [a, b] = (await Promise.all([importClearing(h.app.svc, file), importClearing(h.app.svc, file)])) as [
      ClearingReport,
      ClearingReport,
    ];
    for (let i = 0; i < messages.length; i++) {
      const pair = [a.lines[i], b.lines[i]];
      const posted = pair.filter((l) => POSTED.includes(l?.outcome ?? ''));
      const label = `message ${i + 1}: ${JSON.stringify(pair.map((l) => [l?.outcome, l?.reason]))}`;
      assert.equal(posted.length, 1, `posted by exactly one import; ${label}`);
      assert.equal(pair.filter((l) => l?.outcome === 'duplicate').length, 1, `a duplicate in the other; ${label}`);
      const [dup] = pair.filter((l) => l?.outcome === 'duplicate');
      assert.equal(dup?.posted, undefined, 'a duplicate posted nothing');
      assert.equal(dup?.tradeId, posted[0]?.tradeId, 'the duplicate names what the other posted');
    }
    const [ta, tb] = [a.totals, b.totals].map((tt) => {
      assert.equal(tt.length, 1);
      return tt[0] as ClearingReport['totals'][number];
    }) as [ClearingReport['totals'][number], ClearingReport['totals'][number]];
    for (const m of MOVEMENTS) assert.equal(cents(ta[m]) + cents(tb[m]), expected[m], `${m}: the two reports sum to the file`);
    assert.equal(ta.duplicate + tb.duplicate, messages.length);
    assert.equal(ta.matched + ta.matchedDifference + ta.forced + tb.matched + tb.matchedDifference + tb.forced, messages.length);

    // Money moved once, and the day's settlement is the file's.
    assert.deepEqual(await balances(h, cardId), {
      available: (100_000 - expected.cleared + expected.refunded) / 100,
      ledger: (100_000 - expected.cleared + expected.refunded) / 100,
      status: 'active',
    });
    const [total] = (await settlement(h.db.database.db, today())).totals;
    assert.deepEqual(
      MOVEMENTS.map((m) => cents(total?.lines.find((l) => l.line === m)?.amount ?? -1)),
      MOVEMENTS.map((m) => expected[m]),
    );
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
  });

  it('a partial reversal after another: the line and the total say what the message reversed, as the ledger and the settlement do', async (t) => {
    const { h, cardId, card, approved } = await linkedCard(t, dialect, 100);
    const auth = await approved(authorizationRequest(card, { amount: 2000 }));
    // Over the link: down to 15.00 (5.00 released).
    await approved(naming(auth, '0400', 2000, { extra: { 95: f95(1500) } }));
    assert.deepEqual(await balances(h, cardId), { available: 85, ledger: 100, status: 'active' });
    // In the file: an 0420 down to 5.00, field 4 the original 20.00: 10.00 released, not 15.00.
    const report = await importClearing(h.app.svc, clearingFile([naming(auth, '0420', 2000, { extra: { 95: f95(500) } })]));
    assert.deepEqual(await balances(h, cardId), { available: 95, ledger: 100, status: 'active' });
    const [line] = report.lines;
    assert.equal(line?.outcome, 'matched', JSON.stringify(line));
    assert.equal(report.totals[0]?.reversed, 10, 'the total: what was reversed, not field 4 less field 95');
    assert.deepEqual(line?.posted, { movement: 'reversed', currency: 'EUR', amount: 10 });
    const reversal = (await todaysTrades(h, cardId, { tradeStatusList: [2] })).find((r) => r.tradeId === line?.tradeId);
    assert.equal(reversal?.amount, 10, 'the record the message produced');
    const reversed = (await settlement(h.db.database.db, today())).totals[0]?.lines.find((l) => l.line === 'reversed');
    assert.deepEqual([reversed?.count, reversed?.amount], [2, 15], 'the settlement: 5.00 over the link, 10.00 from the file');
  });

  it('one vocabulary: a returned payment is `refunded` and a returned hold `reversed`, in the import report and in the settlement alike', async (t) => {
    const { h, card, approved } = await linkedCard(t, dialect);
    const single = await approved(authorizationRequest(card, { amount: 3000, mti: '0200' }));
    const toClear = await approved(authorizationRequest(card, { amount: 4000 }));
    const toReverse = await approved(authorizationRequest(card, { amount: 1200 }));
    const clearing = naming(toClear, '0220', 4000);
    const report = await importClearing(
      h.app.svc,
      clearingFile([
        clearing,
        naming(single, '0420', 3000, { extra: { 95: f95(1000) } }), // 20.00 of the 0200's payment returned
        naming(clearing, '0420', 4000, { extra: { 95: f95(3500) } }), // 5.00 of the clearing's payment returned
        naming(clearing, '0220', 700, { processing: '200000' }), // a refund of 7.00
        naming(toReverse, '0420', 1200), // the hold returned
      ]),
    );
    const [imported] = report.totals;
    assert.deepEqual([imported?.cleared, imported?.refunded, imported?.reversed], [40, 32, 12], 'the totals by what was posted');
    assert.deepEqual(
      report.lines.map((l) => [l.kind, l.outcome, l.posted?.movement, l.posted?.amount]),
      [
        ['clearing', 'matched', 'cleared', 40],
        ['reversal', 'matched', 'refunded', 20],
        ['reversal', 'matched', 'refunded', 5],
        ['refund', 'matched', 'refunded', 7],
        ['reversal', 'matched', 'reversed', 12],
      ],
    );
    const [day] = (await settlement(h.db.database.db, today())).totals;
    const line = (name: string) => day?.lines.find((l) => l.line === name);
    assert.deepEqual([line('refunded')?.count, line('refunded')?.amount], [3, imported?.refunded]);
    assert.deepEqual([line('reversed')?.count, line('reversed')?.amount], [1, imported?.reversed]);
    assert.deepEqual([line('cleared')?.count, line('cleared')?.amount], [2, (imported?.cleared ?? 0) + 30], 'the 0200 came over the link');
  });

  it('won and lost disputes decided that day are lines of the settlement; its net is the day’s movement of program:settlement and network:disputes', async (t) => {
    const { h, cardId, card, approved } = await linkedCard(t, dialect);
    const purchases = [];
    for (const minor of [3000, 4500, 1250]) purchases.push(await approved(authorizationRequest(card, { amount: minor, mti: '0200' })));
    await approved(naming(purchases[2] as IsoMessage, '0400', 1250, { extra: { 95: f95(1000) } })); // 2.50 returned
    const payments = (await todaysTrades(h, cardId)).filter((r) => r.tradeType === 151 && r.tradeStatus === 1);
    const of = (amount: number) => payments.find((p) => p.amount === amount)?.tradeId;
    const dispute = async (tradeId: string | undefined, outcome: 'won' | 'lost', amount?: number) => {
      const d = await disputeOk(h, 'create', { tradeId, reason: 'fraudulent', explanation: 'not me' });
      await disputeOk(h, 'submit', { disputeId: d.disputeId });
      await disputeOk(h, 'decide', { disputeId: d.disputeId, outcome, ...(amount ? { amount } : {}) });
    };
    await dispute(of(30), 'won', 25);
    await dispute(of(45), 'lost');

    const env = {
      DATABASE_URL: childDatabaseUrl(h.db),
      CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex'),
      CARDPROGRAM_DATA_DIR: h.db.dataDir,
    };
    const res = await runCli(['network', 'settlement', '--date', today(), '--json'], env);
    assert.equal(res.code, 0, res.stderr);
    const { rows, totals } = JSON.parse(res.stdout);
    assert.equal(rows.length, 1);
    // The net reconciles with the journal's network accounts for the day, whatever the figures.
    const owed = (await journal(h, Account.settlement)) + (await journal(h, Account.disputes));
    assert.equal(cents(totals[0].net), owed);
    assert.equal(cents(rows[0].net), owed);
    assert.deepEqual(totals[0].lines, [
      { line: 'cleared', count: 3, amount: 87.5, net: 87.5 },
      { line: 'refunded', count: 1, amount: 2.5, net: -2.5 },
      { line: 'reversed', count: 0, amount: 0, net: 0 },
      { line: 'disputes-won', count: 1, amount: 25, net: -25 },
      { line: 'disputes-lost', count: 1, amount: 45, net: 0 },
      { line: 'exceptions-held', count: 0, amount: 0, net: 0 },
      { line: 'exceptions-returned', count: 0, amount: 0, net: 0 },
    ]);
    assert.equal(
      totals[0].lines.reduce((s: number, l: { net: number }) => s + cents(l.net), 0),
      owed,
      'the lines’ net sum to the net',
    );
    const text = await runCli(['network', 'settlement', '--date', today()], env);
    assert.match(
      text.stdout,
      /^EUR total: cleared 87\.5 \(3\), refunded 2\.5 \(1\), reversed 0 \(0\), disputes-won 25 \(1\), disputes-lost 45 \(1\), exceptions-held 0 \(0\), exceptions-returned 0 \(0\); net owed to the network 60$/m,
    );
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
  });

  it('disputes and the forced posts’ exceptions in one day: the lines’ net is the day’s movement of program:settlement and network:disputes', async (t) => {
    const { h, cardId, card, approved } = await linkedCard(t, dialect);
    const purchases = [];
    for (const minor of [3000, 4500]) purchases.push(await approved(authorizationRequest(card, { amount: minor, mti: '0200' })));
    const payments = (await todaysTrades(h, cardId)).filter((r) => r.tradeType === 151 && r.tradeStatus === 1);
    const d = await disputeOk(h, 'create', {
      tradeId: payments.find((p) => p.amount === 30)?.tradeId,
      reason: 'fraudulent',
      explanation: 'not me',
    });
    await disputeOk(h, 'submit', { disputeId: d.disputeId });
    await disputeOk(h, 'decide', { disputeId: d.disputeId, outcome: 'won', amount: 25 });
    // Two clearings without an original above CARDPROGRAM_FORCED_POST_MAX (5 000.00): held in suspense; one returned.
    const forced = (minor: number) =>
      message('0220', { 2: card.pan, 3: '000000', 4: String(minor).padStart(12, '0'), ...trace(), 32: '12345678', 49: '978' });
    await approved(forced(600_000));
    await approved(forced(700_000));
    const env = {
      DATABASE_URL: childDatabaseUrl(h.db),
      CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex'),
      CARDPROGRAM_DATA_DIR: h.db.dataDir,
    };
    const open = JSON.parse((await runCli(['network', 'exceptions', 'list', '--json'], env)).stdout) as Array<{
      exceptionId: string;
      amount: number;
    }>;
    assert.deepEqual(open.map((e) => e.amount).sort(), [6000, 7000]);
    const returned = open.find((e) => e.amount === 6000)?.exceptionId as string;
    assert.equal((await runCli(['network', 'exceptions', 'return', returned], env)).code, 0);

    const res = await runCli(['network', 'settlement', '--date', today(), '--json'], env);
    assert.equal(res.code, 0, res.stderr);
    const { totals } = JSON.parse(res.stdout);
    const owed = (await journal(h, Account.settlement)) + (await journal(h, Account.disputes));
    assert.equal(cents(totals[0].net), owed, 'the net is the journal’s');
    assert.deepEqual(totals[0].lines, [
      { line: 'cleared', count: 2, amount: 75, net: 75 },
      { line: 'refunded', count: 0, amount: 0, net: 0 },
      { line: 'reversed', count: 0, amount: 0, net: 0 },
      { line: 'disputes-won', count: 1, amount: 25, net: -25 },
      { line: 'disputes-lost', count: 0, amount: 0, net: 0 },
      { line: 'exceptions-held', count: 2, amount: 13000, net: 13000 },
      { line: 'exceptions-returned', count: 1, amount: 6000, net: -6000 },
    ]);
    assert.equal(totals[0].net, 7050);
    const csv = (await runCli(['network', 'settlement', '--date', today(), '--csv'], env)).stdout.trim().split('\n').slice(1);
    assert.equal(
      csv.reduce((s, row) => s + cents(Number(row.split(',').at(-1))), 0),
      owed,
      'the CSV’s net column sums to the journal’s movement',
    );
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
  });
});
