import assert from 'node:assert/strict';
import { it } from 'node:test';
import { build, randomStr } from '../helpers/app.js';
import { fundedCard, ok } from '../helpers/cards.js';
import { childDatabaseUrl, runCli } from '../helpers/cli.js';
import { eachDialect } from '../helpers/dialects.js';
import { seedToken } from '../helpers/tokens.js';

/*
 * `cardprogram tokens list|suspend|resume|delete` (decisions §15.6): the operator's view of any
 * merchant's tokens, and its changes, each told to the TSP (queued) and to the merchant, and each
 * in the audit trail with the state before it.
 */

eachDialect('cardprogram tokens', (dialect) => {
  it('lists any merchant’s tokens, suspends (only the operator resumes), resumes, deletes: audited, queued for the TSP', async (t) => {
    const h = await build(t, dialect);
    const env = { DATABASE_URL: childDatabaseUrl(h.db), CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex') };
    const { cardId } = await fundedCard(h);
    const tok = await seedToken(h.app.svc, { cardId, walletProvider: 'google_pay' });

    const listed = await runCli(['tokens', 'list', '--card', cardId, '--json'], env);
    assert.equal(listed.code, 0, listed.stderr);
    const rows = JSON.parse(listed.stdout);
    assert.deepEqual(
      rows.map((r: Record<string, unknown>) => [r.tokenId, r.merchantId, r.status, r.walletProvider]),
      [[tok.tokenId, h.merchant.appId, 'active', 'google_pay']],
    );
    const human = await runCli(['tokens', 'list', '--merchant', h.merchant.appId, '--status', 'active'], env);
    assert.match(human.stdout, new RegExp(`^${tok.tokenId}\\s+active\\s+google_pay\\s+${cardId}`));

    const suspended = await runCli(['tokens', 'suspend', tok.tokenId, '--reason', 'fraud hold', '--json'], env);
    assert.equal(suspended.code, 0, suspended.stderr);
    const s = JSON.parse(suspended.stdout);
    assert.equal(s.status, 'suspended');
    assert.deepEqual([s.history.at(-1).source, s.history.at(-1).reason], ['operator', 'fraud hold']);
    // The merchant cannot lift the operator's suspension.
    const refused = await h.call('/api/network/tokenResume.html', { tokenId: tok.tokenId, randomStr: randomStr() });
    assert.equal(refused.body.code, '2761');

    assert.equal((await runCli(['tokens', 'resume', tok.tokenId], env)).code, 0);
    assert.equal((await ok(h, '/api/network/tokenQuery.html', { tokenId: tok.tokenId })).status, 'active');
    const deleted = await runCli(['tokens', 'delete', tok.tokenId, '--reason', 'card reissued', '--json'], env);
    assert.equal(JSON.parse(deleted.stdout).status, 'deleted');

    const audit = await h.db.database.db
      .selectFrom('audit_events')
      .select(['action', 'target', 'source', 'before_json'])
      .where('target', '=', tok.tokenId)
      .orderBy('created_at')
      .execute();
    assert.deepEqual(
      audit.map((a) => [a.action, a.source, JSON.parse(a.before_json ?? 'null')?.status]),
      [
        ['token.suspend', 'cli', 'active'],
        ['token.resume', 'cli', 'suspended'],
        ['token.delete', 'cli', 'active'],
      ],
    );
    const calls = await h.db.database.db
      .selectFrom('tsp_calls')
      .select(['action', 'reason'])
      .where('token_id', '=', tok.tokenId)
      .orderBy('created_at')
      .execute();
    assert.deepEqual(
      calls.map((c) => [c.action, c.reason]),
      [
        ['suspend', 'fraud hold'],
        ['resume', null],
        ['delete', 'card reissued'],
      ],
    );

    const unknown = await runCli(['tokens', 'suspend', 'tok_nosuchtoken'], env);
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /Token not found/);
    const bad = await runCli(['tokens', 'suspend', tok.tokenId, '--reason', 'x'.repeat(201)], env);
    assert.notEqual(bad.code, 0);
  });
});
