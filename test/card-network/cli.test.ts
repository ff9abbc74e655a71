import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { clearingFile } from '../../src/card-network/clearing-file.js';
import { withTrades } from '../../src/db/trades-table.js';
import { type IsoMessage, message } from '../../src/iso8583/codec.js';
import { build, type Harness, testConfig } from '../helpers/app.js';
import { balances, fundedCard } from '../helpers/cards.js';
import { selfSigned } from '../helpers/certs.js';
import { childDatabaseUrl, runCli } from '../helpers/cli.js';
import { eachDialect } from '../helpers/dialects.js';
import { authorizationRequest, cardSecrets, linkOf, Peer } from '../helpers/link.js';

/** The CLI against the harness's database and master key (as an operator runs it beside the service). */
const cliEnv = (h: Harness) => ({
  DATABASE_URL: childDatabaseUrl(h.db),
  CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex'),
  CARDPROGRAM_DATA_DIR: h.db.dataDir,
});

async function count(h: Harness, table: 'network_messages' | 'trades' | 'ledger_postings'): Promise<number> {
  const row = await withTrades(h.db.database.db)
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** A machine shared with other test runs can take more than the 1.5 s deadline: a 91 here would test the load, not the CLI. */
const slow = { network: { ...testConfig('').network, deadlineMs: 15_000 } };

const amount12 = (minor: number) => String(minor).padStart(12, '0');
/** Field 90 naming a message: its MTI, STAN, field 7, acquirer n11, forwarding n11 zeros. */
const f90 = (m: IsoMessage) =>
  `${m.mti}${m.fields.get(11)}${m.fields.get(7)}${(m.fields.get(32) as string).padStart(11, '0')}${'0'.repeat(11)}`;

eachDialect('network CLI: the simulator, the clearing file and the settlement (decisions §12.10, §12.11)', (dialect) => {
  it('network send: purchase, balance, clear, partial and full reverse, refund exit 0; a decline and an advice exit 2 saying why; PAN masked, CVV2 never printed', async (t) => {
    const h = await build(t, dialect, slow);
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const card = await cardSecrets(h, cardId);
    const link = await linkOf(t, h);
    const env = cliEnv(h);
    const send = async (...args: string[]) => {
      const res = await runCli(['network', 'send', '--card', cardId, '--port', String(link.port), ...args], env);
      assert.ok(!res.stdout.includes(card.pan) && !res.stderr.includes(card.pan), 'no PAN in clear');
      assert.ok(!res.stdout.includes(`9203${card.cvv}`), 'no CVV2');
      return res;
    };
    const json = async (...args: string[]) => {
      const res = await send(...args, '--json');
      assert.equal(res.code, 0, `${args.join(' ')}: ${res.stderr}\n${res.stdout}`);
      return JSON.parse(res.stdout);
    };

    const human = await send('--type', 'purchase', '--amount', '12.50');
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /^sent to 127\.0\.0\.1:\d+: 0100 authorization request$/m);
    assert.match(human.stdout, new RegExp(`^\\s+2  primary account number\\s+${card.pan.slice(0, 6)}\\*+${card.pan.slice(-4)}$`, 'm'));
    assert.match(human.stdout, /^\s+48 .* 92 CVV2 \(not shown\)$/m);
    assert.match(human.stdout, /^received in \d+ ms: 0110 authorization response$/m);
    assert.match(human.stdout, /^\s+39 {2}response code\s+00 {2}\(approved\)$/m);
    assert.match(human.stdout, /^00 approved$/m);
    assert.deepEqual(await balances(h, cardId), { available: 87.5, ledger: 100, status: 'active' });

    const balance = await json('--type', 'balance');
    assert.equal(balance.answer.fields['54'], '0002978C000000008750');
    assert.equal(balance.request.fields['2'], `${card.pan.slice(0, 6)}${'*'.repeat(card.pan.length - 10)}${card.pan.slice(-4)}`);

    // The card's last authorization sent by the simulator: the purchase (not the balance inquiry).
    const clear = await json('--type', 'clear');
    assert.deepEqual([clear.request.mti, clear.answer.mti, clear.code], ['0220', '0230', '00']);
    assert.equal(clear.request.fields['4'], '000000001250');
    assert.deepEqual(await balances(h, cardId), { available: 87.5, ledger: 87.5, status: 'active' });

    const second = await json('--type', 'purchase', '--amount', '5', '--mcc', '5812', '--acceptor', 'Cafe Central, Vienna AT');
    assert.equal(second.request.fields['43'], `${'Cafe Central'.padEnd(25)}${'Vienna'.padEnd(13)}AT`);
    const partial = await json('--type', 'reverse', '--amount', '2');
    assert.equal(partial.request.fields['95'], `000000000300${'0'.repeat(30)}`);
    assert.equal((await balances(h, cardId)).available, 84.5);
    const full = await json('--type', 'reverse', '--original', second.request.fields['11']);
    assert.deepEqual([full.request.mti, full.answer.mti, full.code], ['0400', '0410', '00']);
    assert.equal((await balances(h, cardId)).available, 87.5);

    // The refund names the payment: the clearing's.
    const refund = await json('--type', 'refund', '--amount', '2.50');
    assert.deepEqual(
      [refund.request.fields['3'], refund.request.fields['90'].slice(0, 10)],
      ['200000', `0220${clear.request.fields['11']}`],
    );
    assert.deepEqual(await balances(h, cardId), { available: 90, ledger: 90, status: 'active' });

    const declined = await send('--type', 'purchase', '--amount', '1000');
    assert.equal(declined.code, 2);
    assert.match(declined.stdout, /^51 insufficient funds$/m);
    assert.equal(declined.stderr.trim(), 'cardprogram: answered 51: insufficient funds');
    // An advice is a forced post (decisions §12.7): posted whatever the rules say, answered 00.
    const advice = await send('--type', 'advice', '--amount', '1');
    assert.equal(advice.code, 0, advice.stderr);
    assert.match(advice.stdout, /^sent to .*: 0120 authorization advice$/m);

    // --pan without the database's help needs --expiry; no link: one line, exit 1.
    const noExpiry = await runCli(
      ['network', 'send', '--pan', card.pan, '--type', 'purchase', '--amount', '1', '--port', String(link.port)],
      env,
    );
    assert.deepEqual([noExpiry.code, noExpiry.stderr.trim()], [1, 'cardprogram: --pan needs --expiry YYMM']);
    const byPan = await runCli(
      [
        'network',
        'send',
        '--pan',
        card.pan,
        '--expiry',
        card.expiry,
        '--type',
        'purchase',
        '--amount',
        '1',
        '--port',
        String(link.port),
        '--json',
      ],
      env,
    );
    assert.equal(byPan.code, 0, byPan.stderr);
    assert.equal(JSON.parse(byPan.stdout).request.fields['48'], undefined, 'no CVV2 sent when none is given');
    const closed = await runCli(['network', 'send', '--card', cardId, '--type', 'balance', '--port', '1'], env);
    assert.equal(closed.code, 1);
    assert.match(closed.stderr, /^cardprogram: nothing listens at 127\.0\.0\.1:1 /);
  });

  it('network send over TLS with a client certificate (--cert/--key/--ca); without one the link refuses it, exit 1', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'cp-net-cli-tls-'));
    const server = selfSigned(dir, 'localhost');
    const client = selfSigned(dir, 'acquirer');
    const tls = { ca: client.certFile, cert: server.certFile, key: server.keyFile };
    const h = await build(t, dialect, { network: { ...slow.network, tls } });
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const link = await linkOf(t, h);
    const env = cliEnv(h);
    const args = ['network', 'send', '--card', cardId, '--type', 'balance', '--port', String(link.port)];
    const res = await runCli(
      [...args, '--cert', client.certFile, '--key', client.keyFile, '--ca', server.certFile, '--servername', 'localhost'],
      env,
    );
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /^sent to 127\.0\.0\.1:\d+ \(TLS\): 0100 authorization request$/m);
    assert.match(res.stdout, /^\s+54 {2}additional amounts\s+0002978C000000010000$/m);
    const plain = await runCli(args, env);
    assert.equal(plain.code, 1);
    assert.match(plain.stderr, /^cardprogram: the link (closed the connection|connection failed)/);
    const half = await runCli([...args, '--cert', client.certFile], env);
    assert.deepEqual(
      [half.code, half.stderr.trim()],
      [1, 'cardprogram: --cert, --key and --ca go together (TLS with a client certificate)'],
    );
  });

  it('network import: a clearing file posts once (imported twice); the reconciliation is the hand-computed one; the settlement agrees with the journal and ledger check', async (t) => {
    const h = await build(t, dialect, slow);
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const card = await cardSecrets(h, cardId);
    const link = await linkOf(t, h);
    const peer = await Peer.open(t, link.port);
    const env = cliEnv(h);
    // Three authorizations over the link: 20, 30 and 10 EUR.
    const auths: IsoMessage[] = [];
    for (const minor of [2000, 3000, 1000]) {
      const req = authorizationRequest(card, { amount: minor });
      assert.equal((await peer.ask(req)).fields.get(39), '00');
      auths.push(req);
    }
    const [a, b, c] = auths as [IsoMessage, IsoMessage, IsoMessage];
    let stan = 500000;
    const advice = (mti: string, processing: string, minor: number, original: string, extra: Record<number, string> = {}) =>
      message(mti, {
        2: card.pan,
        3: processing,
        4: amount12(minor),
        7: a.fields.get(7) as string,
        11: String(++stan),
        32: '12345678',
        49: '978',
        90: original,
        ...extra,
      });
    const exact = advice('0220', '000000', 2000, f90(a));
    const lower = advice('0220', '000000', 2500, f90(b));
    const unknown = advice('0220', '000000', 700, `0100999999${a.fields.get(7)}${'12345678'.padStart(11, '0')}${'0'.repeat(11)}`);
    const reversal = advice('0420', '000000', 1000, f90(c));
    const refund = advice('0220', '200000', 500, f90(exact));
    const messages = [exact, lower, exact, unknown, reversal, refund];
    const list = join(h.db.dataDir, 'messages.json');
    writeFileSync(list, JSON.stringify(messages.map((m) => ({ mti: m.mti, fields: Object.fromEntries(m.fields) }))));
    const file = join(h.db.dataDir, 'clearing.bin');
    const made = await runCli(['network', 'file', file, '--from', list], env);
    assert.equal(made.code, 0, made.stderr);
    assert.equal(made.stdout.trim(), `6 messages written to ${file}`);

    const first = await runCli(['network', 'import', file, '--json'], env);
    assert.equal(first.code, 0, first.stderr);
    const report = JSON.parse(first.stdout);
    assert.ok(!first.stdout.includes(card.pan), 'PAN masked');
    const outcomes = report.lines.map((l: { outcome: string; kind: string; amount: number; code: string }) => [
      l.outcome,
      l.kind,
      l.amount,
      l.code,
    ]);
    assert.deepEqual(outcomes, [
      ['matched', 'clearing', 20, '00'],
      ['matched-difference', 'clearing', 25, '00'],
      ['duplicate', 'clearing', 20, '00'],
      ['forced', 'clearing', 7, '00'],
      ['matched', 'reversal', 10, '00'],
      ['matched', 'refund', 5, '00'],
    ]);
    assert.deepEqual(
      report.lines.map((l: { posted?: { movement: string; amount: number } }) => l.posted && [l.posted.movement, l.posted.amount]),
      [['cleared', 20], ['cleared', 25], undefined, ['cleared', 7], ['reversed', 10], ['refunded', 5]],
    );
    assert.equal(report.lines[1].difference, -5);
    assert.equal(report.lines[1].reason, 'cleared 25, authorized 30');
    assert.equal(report.lines[3].reason, 'no approved authorization matches field 90');
    assert.deepEqual(report.totals, [
      {
        currency: 'EUR',
        messages: 6,
        matched: 3,
        matchedDifference: 1,
        forced: 1,
        held: 0,
        duplicate: 1,
        refused: 0,
        cleared: 52,
        refunded: 5,
        reversed: 10,
      },
    ]);
    // 100 − 20 − 25 − 7 (the forced clearing) + 5; nothing held any more.
    assert.deepEqual(await balances(h, cardId), { available: 53, ledger: 53, status: 'active' });

    const before = await Promise.all([count(h, 'network_messages'), count(h, 'trades'), count(h, 'ledger_postings')]);
    const again = await runCli(['network', 'import', file], env);
    assert.equal(again.code, 0, again.stderr);
    const rows = again.stdout.split('\n').slice(1, 7);
    assert.deepEqual(
      rows.map((l) => l.trim().split(/\s+/)[6]),
      ['duplicate', 'duplicate', 'duplicate', 'duplicate', 'duplicate', 'duplicate'],
      again.stdout,
    );
    assert.match(
      again.stdout,
      /^EUR: 6 messages \(0 matched, 0 matched-difference, 0 forced, 0 held, 6 duplicate, 0 refused\); posted: cleared 0, refunded 0, reversed 0$/m,
    );
    assert.deepEqual(
      await Promise.all([count(h, 'network_messages'), count(h, 'trades'), count(h, 'ledger_postings')]),
      before,
      'posted once',
    );
    assert.deepEqual(await balances(h, cardId), { available: 53, ledger: 53, status: 'active' });

    // The settlement of the business day the payments were posted on.
    const payment = await withTrades(h.db.database.db)
      .selectFrom('trades')
      .select('business_date')
      .where('trade_type', '=', 151)
      .executeTakeFirstOrThrow();
    const day = payment.business_date;
    const settled = await runCli(['network', 'settlement', '--date', day, '--json'], env);
    assert.equal(settled.code, 0, settled.stderr);
    const s = JSON.parse(settled.stdout);
    const expected = {
      currency: 'EUR',
      lines: [
        { line: 'cleared', count: 3, amount: 52, net: 52 },
        { line: 'refunded', count: 1, amount: 5, net: -5 },
        { line: 'reversed', count: 1, amount: 10, net: 0 },
        { line: 'disputes-won', count: 0, amount: 0, net: 0 },
        { line: 'disputes-lost', count: 0, amount: 0, net: 0 },
        { line: 'exceptions-held', count: 0, amount: 0, net: 0 },
        { line: 'exceptions-returned', count: 0, amount: 0, net: 0 },
      ],
      net: 47,
    };
    assert.deepEqual(s.rows, [{ ...expected, merchantId: h.merchant.appId }]);
    assert.deepEqual(s.totals, [expected]);
    // The journal's settlement account moved by exactly the net (every posting here came through the link).
    const journal = await h.db.database.db
      .selectFrom('ledger_postings')
      .select((eb) => eb.fn.sum<number>('amount').as('sum'))
      .where('account', '=', 'program:settlement')
      .executeTakeFirstOrThrow();
    assert.equal(Number(journal.sum), 4700);
    const check = await runCli(['ledger', 'check', '--json'], env);
    assert.equal(check.code, 0, check.stdout);
    assert.deepEqual(JSON.parse(check.stdout).problems, []);
    const csv = await runCli(['network', 'settlement', '--date', day, '--csv'], env);
    const m = `${day},EUR,${h.merchant.appId}`;
    assert.equal(
      csv.stdout,
      `date,currency,merchant_id,line,count,amount,net\n${m},cleared,3,52,52\n${m},refunded,1,5,-5\n${m},reversed,1,10,0\n${m},disputes-won,0,0,0\n${m},disputes-lost,0,0,0\n${m},exceptions-held,0,0,0\n${m},exceptions-returned,0,0,0\n`,
    );
    // Not a clearing file: refused whole, nothing posted; an 0100 in one is refused, not decided.
    const broken = join(h.db.dataDir, 'broken.bin');
    writeFileSync(broken, Buffer.concat([readFileSync(file), Buffer.from([0x00, 0x40, 0x30])]));
    const cut = await runCli(['network', 'import', broken], env);
    assert.deepEqual(
      [cut.code, cut.stderr.trim()],
      [1, `cardprogram: ${broken}: not a clearing file: it ends inside a frame after 6 whole messages`],
    );
    const odd = join(h.db.dataDir, 'odd.bin');
    writeFileSync(odd, clearingFile([authorizationRequest(card, { amount: 100 })]));
    const oddReport = JSON.parse((await runCli(['network', 'import', odd, '--json'], env)).stdout);
    assert.deepEqual(
      oddReport.lines.map((l: { outcome: string; reason: string }) => [l.outcome, l.reason]),
      [['refused', 'not a clearing advice: MTI 0100 (a clearing file holds 0220 and 0420)']],
    );
    assert.deepEqual(await Promise.all([count(h, 'network_messages'), count(h, 'trades'), count(h, 'ledger_postings')]), before);

    const empty = await runCli(['network', 'settlement', '--date', '2001-01-01'], env);
    assert.equal(empty.stdout, 'settlement of 2001-01-01\nnothing cleared, refunded, reversed or disputed with the network that day\n');
  });
});
