// Attacks on disputes found by the attack review (issue 29): each a regression test on both databases.
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { checkLedger } from '../src/ledger/check.js';
import { build, randomStr } from './helpers/app.js';
import { balances, ok } from './helpers/cards.js';
import { childDatabaseUrl, runCli } from './helpers/cli.js';
import { eachDialect } from './helpers/dialects.js';
import { clearedPurchase, disputeOk, disputeRefused } from './helpers/disputes.js';

eachDialect('disputes: attacks', (dialect) => {
  it('a purchase refunded while its dispute is unsubmitted cannot be submitted for more than is left (2723)', async (t) => {
    const h = await build(t, dialect);
    const { cardId, tradeId } = await clearedPurchase(h, { topUp: 100, amount: 40 });
    const d = await disputeOk(h, 'create', { tradeId, reason: 'fraudulent', explanation: 'not me' });
    // The acceptor refunds 30 of the 40 after the dispute was opened for all 40.
    await ok(h, '/sandbox/network/refund', { tradeId, amount: 30 });
    assert.deepEqual(await balances(h, cardId), { available: 90, ledger: 90, status: 'active' });
    const msg = await disputeRefused(h, 'submit', { disputeId: d.disputeId }, 400, '2723');
    assert.match(msg, /^amount: at most 10 EUR/);
    const q = await disputeOk(h, 'query', { disputeId: d.disputeId });
    assert.equal(q.status, 'unsubmitted');
    // Lowered to what is left, it is submitted; won, the card gets back no more than it paid.
    await disputeOk(h, 'update', { disputeId: d.disputeId, amount: 10 });
    await disputeOk(h, 'submit', { disputeId: d.disputeId });
    await disputeOk(h, 'decide', { disputeId: d.disputeId, outcome: 'won' });
    assert.deepEqual(await balances(h, cardId), { available: 100, ledger: 100, status: 'active' });
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
  });

  it('a purchase refunded in full while its dispute is unsubmitted: nothing left to submit (2723)', async (t) => {
    const h = await build(t, dialect);
    const { cardId, tradeId } = await clearedPurchase(h, { topUp: 100, amount: 40 });
    const d = await disputeOk(h, 'create', { tradeId, reason: 'fraudulent', explanation: 'not me' });
    await ok(h, '/sandbox/network/refund', { tradeId, amount: 40 });
    const msg = await disputeRefused(h, 'submit', { disputeId: d.disputeId }, 400, '2723');
    assert.match(msg, /^amount: nothing is left to dispute/);
    // The same signed submission again (a replay) answers the same and writes nothing.
    const res = await h.call('/api/network/disputeSubmit.html', { randomStr: randomStr(), disputeId: d.disputeId });
    assert.equal(res.body.code, '2723');
    await disputeOk(h, 'withdraw', { disputeId: d.disputeId });
    assert.deepEqual(await balances(h, cardId), { available: 100, ledger: 100, status: 'active' });
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
  });

  it('disputes export --out over an existing world-readable file leaves it readable by its owner only (explanations are personal data)', async (t) => {
    const h = await build(t, dialect);
    const { tradeId } = await clearedPurchase(h, { topUp: 100, amount: 40 });
    const d = await disputeOk(h, 'create', { tradeId, reason: 'fraudulent', explanation: 'my card was stolen in Lyon' });
    await disputeOk(h, 'submit', { disputeId: d.disputeId });
    const out = join(h.db.dataDir, 'export.jsonl');
    writeFileSync(out, 'old\n', { mode: 0o644 });
    const env = {
      DATABASE_URL: childDatabaseUrl(h.db),
      CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex'),
      CARDPROGRAM_DATA_DIR: h.db.dataDir,
    };
    const res = await runCli(['disputes', 'export', '--date', new Date().toISOString().slice(0, 10), '--out', out], env);
    assert.equal(res.code, 0, res.stderr);
    assert.match(readFileSync(out, 'utf8'), /my card was stolen in Lyon/);
    assert.equal(statSync(out).mode & 0o777, 0o600);
  });
});
