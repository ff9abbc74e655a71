import assert from 'node:assert/strict';
import { it } from 'node:test';
import { build, type Harness, testConfig } from '../helpers/app.js';
import { balances, fundedCard, ok } from '../helpers/cards.js';
import { childDatabaseUrl, runCli } from '../helpers/cli.js';
import { eachDialect } from '../helpers/dialects.js';
import { linkOf } from '../helpers/link.js';

/**
 * `network send --type clear` (issue 43, item 4): prints the tradeId of the payment it made (and of
 * what any other message made), and refuses a clear of an authorization that holds nothing any more
 * (a second clear posted 2 × 42.50 as a forced post) unless --force.
 */
const cliEnv = (h: Harness) => ({
  DATABASE_URL: childDatabaseUrl(h.db),
  CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex'),
  CARDPROGRAM_DATA_DIR: h.db.dataDir,
});
const slow = { network: { ...testConfig('').network, deadlineMs: 15_000 } };

eachDialect('network send --type clear: the payment’s tradeId, and no second clear without --force', (dialect) => {
  it('prints the ids; a second clear is refused naming the payment; --force sends it, marked forced', async (t) => {
    const h = await build(t, dialect, slow);
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const link = await linkOf(t, h);
    const env = cliEnv(h);
    const send = (...args: string[]) => runCli(['network', 'send', '--card', cardId, '--port', String(link.port), ...args], env);

    const purchase = await send('--type', 'purchase', '--amount', '42.50', '--json');
    assert.equal(purchase.code, 0, purchase.stderr);
    const authId = JSON.parse(purchase.stdout).tradeId as string;
    assert.match(authId, /^trd_/);

    const clear = await send('--type', 'clear');
    assert.equal(clear.code, 0, clear.stderr);
    const line = /^tradeId (trd_\S+) \(payment of (trd_\S+)\)$/m.exec(clear.stdout);
    assert.ok(line, clear.stdout);
    assert.equal(line[2], authId);
    const paymentId = line[1] as string;
    const q = await ok(h, '/api/network/tradeQuery.html', { tradeId: paymentId });
    assert.deepEqual([q.trade.tradeType, q.trade.amount], [151, 42.5]);
    assert.deepEqual(await balances(h, cardId), { available: 57.5, ledger: 57.5, status: 'active' });

    const again = await send('--type', 'clear');
    assert.equal(again.code, 1);
    assert.equal(
      again.stderr.trim(),
      `cardprogram: --type clear: authorization ${authId} holds nothing: it is cleared already (by ${paymentId}). A clearing now is a forced post that charges the card again; add --force to send it anyway, or name another with --original`,
    );
    assert.deepEqual(await balances(h, cardId), { available: 57.5, ledger: 57.5, status: 'active' }, 'nothing sent');

    const forced = await send('--type', 'clear', '--force', '--json');
    assert.equal(forced.code, 0, forced.stderr);
    const out = JSON.parse(forced.stdout);
    assert.equal(out.originalId, authId);
    assert.equal(out.forced, true);
    assert.notEqual(out.tradeId, paymentId);
    assert.deepEqual(await balances(h, cardId), { available: 15, ledger: 15, status: 'active' });

    // A released hold is refused too.
    const other = JSON.parse((await send('--type', 'purchase', '--amount', '5', '--json')).stdout).tradeId as string;
    assert.equal((await send('--type', 'reverse')).code, 0);
    const released = await send('--type', 'clear');
    assert.equal(released.code, 1);
    assert.match(released.stderr, new RegExp(`authorization ${other} holds nothing: it was released \\(reversed or expired\\)`));
  });
});
