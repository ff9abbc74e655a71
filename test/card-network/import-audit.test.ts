import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { clearingFile } from '../../src/card-network/clearing-file.js';
import { type IsoMessage, message } from '../../src/iso8583/codec.js';
import { build, type Harness, testConfig } from '../helpers/app.js';
import { fundedCard } from '../helpers/cards.js';
import { childDatabaseUrl, runCli } from '../helpers/cli.js';
import { eachDialect } from '../helpers/dialects.js';
import { authorizationRequest, cardSecrets, linkOf, Peer, trace } from '../helpers/link.js';

/**
 * `cardprogram network import` moves money, so each message it posts is in the audit trail (issue
 * 43, item 9), in the transaction that posts it, as `disputes import` and `holds expire` are: the
 * operator, the card, its balances before, the answer after. A duplicate posts nothing and records
 * nothing; the link's own messages are not recorded (the network is their actor).
 */
const cliEnv = (h: Harness) => ({
  DATABASE_URL: childDatabaseUrl(h.db),
  CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex'),
  CARDPROGRAM_DATA_DIR: h.db.dataDir,
});
const f90 = (m: IsoMessage) =>
  `${m.mti}${m.fields.get(11)}${m.fields.get(7)}${(m.fields.get(32) as string).padStart(11, '0')}${'0'.repeat(11)}`;

eachDialect('network import in the audit trail', (dialect) => {
  it('each posted message is a network.import record under its card; importing again adds none; audit list shows them', async (t) => {
    const h = await build(t, dialect, { network: { ...testConfig('').network, deadlineMs: 15_000 } });
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const card = await cardSecrets(h, cardId);
    const peer = await Peer.open(t, (await linkOf(t, h)).port);
    const auth = authorizationRequest(card, { amount: 4250 });
    assert.equal((await peer.ask(auth)).fields.get(39), '00');
    const clear = () =>
      message('0220', { 2: card.pan, 3: '000000', 4: '000000004250', ...trace(), 32: '12345678', 49: '978', 90: f90(auth) });
    const file = join(h.db.dataDir, 'clearing.bin');
    writeFileSync(file, clearingFile([clear(), clear()]));

    const records = () =>
      h.db.database.db.selectFrom('audit_events').selectAll().where('action', '=', 'network.import').orderBy('created_at').execute();
    assert.equal((await records()).length, 0, 'the link’s own 0100 is not an operator’s change');
    const env = cliEnv(h);
    const first = await runCli(['network', 'import', file, '--json'], env);
    assert.equal(first.code, 0, first.stderr);
    const lines = JSON.parse(first.stdout).lines as Array<{ outcome: string; tradeId: string }>;
    assert.deepEqual(
      lines.map((l) => l.outcome),
      ['matched', 'forced'],
    );
    const rows = await records();
    assert.equal(rows.length, 2);
    for (const [i, r] of rows.entries()) {
      assert.deepEqual([r.source, r.target], ['cli', cardId]);
      const after = JSON.parse(r.after_json ?? '{}');
      assert.equal(after.tradeId, lines[i]?.tradeId);
      assert.equal(after.code, '00');
    }
    assert.equal(JSON.parse(rows[1]?.after_json ?? '{}').forced, true);
    // The balances before each: 57.50 available and 100 ledger before the clearing, 57.50 and 57.50 before the forced one.
    assert.deepEqual(
      rows.map((r) => {
        const b = JSON.parse(r.before_json ?? '{}');
        return [b.available_balance, b.ledger_balance];
      }),
      [
        [5750, 10000],
        [5750, 5750],
      ],
    );

    const again = await runCli(['network', 'import', file], env);
    assert.equal(again.code, 0, again.stderr);
    assert.equal((await records()).length, 2, 'a duplicate records nothing');

    const listed = await runCli(['audit', 'list', '--action', 'network.import', '--json'], env);
    assert.equal(listed.code, 0, listed.stderr);
    assert.equal(JSON.parse(listed.stdout).length, 2);
  });
});
