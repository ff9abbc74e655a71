import assert from 'node:assert/strict';
import { it } from 'node:test';
import { checkLedger } from '../src/ledger/check.js';
import { fundMerchant } from '../src/ledger/funding.js';
import { runVerb } from '../src/runner.js';
import { TEST_FUNDING } from './helpers/app.js';
import { childDatabaseUrl, runCli } from './helpers/cli.js';
import { buildConsole, consoleGet, consolePost, hidden, login, makeOperator } from './helpers/console.js';
import { eachDialect } from './helpers/dialects.js';

// Issue 32, point 1: an operator's credit is applied once per real transfer.
eachDialect('an operator’s credit, once', (dialect) => {
  it('the console’s form posted twice at once, then again a second later, credits once; every post answers the first credit', async (t) => {
    const h = await buildConsole(t, dialect);
    const admin = await makeOperator(h, 'ada@example.com', 'admin');
    const s = await login(h, admin);
    const url = `/console/merchants/${h.merchant.appId}`;
    const page = await consoleGet(h, s, url);
    assert.equal(page.statusCode, 200);
    const once = hidden(page.body, 'once');
    const form = { amount: '1000', currency: 'EUR', reference: 'wire #4712', once };
    const posts = await Promise.all([consolePost(h, s, `${url}/fund`, form), consolePost(h, s, `${url}/fund`, form)]);
    h.advance(1000);
    posts.push(await consolePost(h, s, `${url}/fund`, form));
    for (const p of posts) assert.deepEqual([p.statusCode, p.headers.location], [303, `${url}?done=funded`], p.body.slice(0, 300));
    const credits = await h.db.database.db.selectFrom('funding_credits').selectAll().where('reference', '=', 'wire #4712').execute();
    assert.equal(credits.length, 1);
    const [eur] = await h.db.database.db
      .selectFrom('merchant_balances')
      .select('available')
      .where('merchant_id', '=', h.merchant.appId)
      .where('currency', '=', 'EUR')
      .execute();
    assert.equal(Number(eur?.available), (TEST_FUNDING + 1000) * 100);
    // A new form (a new token) is a new transfer.
    const again = hidden((await consoleGet(h, s, url)).body, 'once');
    assert.notEqual(again, once);
    assert.equal((await consolePost(h, s, `${url}/fund`, { ...form, once: again })).statusCode, 303);
    // Refused, not rounded: more decimals than EUR has; a post without the token.
    const fine = await consolePost(h, s, `${url}/fund`, {
      ...form,
      amount: '100.0000000000000001',
      once: hidden((await consoleGet(h, s, url)).body, 'once'),
    });
    assert.equal(fine.statusCode, 400);
    assert.match(fine.body, /EUR has at most 2 decimal places/);
    const stale = await consolePost(h, s, `${url}/fund`, { amount: '1', currency: 'EUR', reference: 'x' });
    assert.equal(stale.statusCode, 400);
    assert.equal(
      (await h.db.database.db.selectFrom('funding_credits').selectAll().where('merchant_id', '=', h.merchant.appId).execute()).length,
      2 + 2,
    );
    // The trail: three posts of the first form, the repeats marked replayed.
    const trail = await h.db.database.db.selectFrom('audit_events').select('after_json').where('action', '=', 'merchant.fund').execute();
    const outcomes = trail.map((r) => JSON.parse(r.after_json ?? '{}').outcome).sort();
    assert.deepEqual(outcomes, ['credited', 'credited', 'replayed', 'replayed']);
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
  });

  it('cardprogram merchant fund: a repeat within 24 h is refused naming the first, unless --again; --idempotency-key credits once; too many decimals are refused', async (t) => {
    const h = await buildConsole(t, dialect);
    const env = {
      DATABASE_URL: childDatabaseUrl(h.db),
      CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex'),
      CARDPROGRAM_DATA_DIR: h.db.dataDir,
    };
    const fund = (...extra: string[]) =>
      runCli(
        ['merchant', 'fund', h.merchant.appId, '250', '--currency', 'EUR', '--reference', 'wire #4713', '--actor', 'bob', ...extra],
        env,
      );
    const first = await fund('--json');
    assert.equal(first.code, 0, first.stderr);
    const credit = JSON.parse(first.stdout);
    assert.equal(credit.outcome, 'credited');
    const second = await fund();
    assert.equal(second.code, 1);
    assert.match(second.stderr, new RegExp(`refused: this would repeat ${credit.creditId} \\(250 EUR, "wire #4713", by bob at .*--again`));
    const third = await fund('--again', '--json');
    assert.equal(third.code, 0, third.stderr);
    assert.equal(JSON.parse(third.stdout).balance, TEST_FUNDING + 500);

    const keyed = (key: string) =>
      runCli(
        ['merchant', 'fund', h.merchant.appId, '75', '--currency', 'USDT', '--reference', 'wire #4714', '--idempotency-key', key, '--json'],
        env,
      );
    const k1 = await keyed('wire-4714');
    const k2 = await keyed('wire-4714');
    assert.equal(k1.code, 0, k1.stderr);
    assert.equal(k2.code, 0, k2.stderr);
    assert.deepEqual([JSON.parse(k1.stdout).outcome, JSON.parse(k2.stdout).outcome], ['credited', 'replayed']);
    assert.equal(JSON.parse(k2.stdout).creditId, JSON.parse(k1.stdout).creditId);
    assert.equal(JSON.parse(k2.stdout).balance, TEST_FUNDING + 75);
    const otherBody = await runCli(
      ['merchant', 'fund', h.merchant.appId, '76', '--currency', 'USDT', '--reference', 'wire #4714', '--idempotency-key', 'wire-4714'],
      env,
    );
    assert.equal(otherBody.code, 1);
    assert.match(otherBody.stderr, /idempotencyKey: already used for another credit/);

    const decimals = await runCli(
      ['merchant', 'fund', h.merchant.appId, '100.0000000000000001', '--currency', 'EUR', '--reference', 'x'],
      env,
    );
    assert.equal(decimals.code, 1);
    assert.match(decimals.stderr, /amount: EUR has at most 2 decimal places/);

    const credits = await h.db.database.db
      .selectFrom('funding_credits')
      .select(['reference', 'amount'])
      .where('merchant_id', '=', h.merchant.appId)
      .where('reference', 'like', 'wire #%')
      .execute();
    assert.equal(credits.length, 3, 'two of 250 EUR (the second with --again), one of 75 USDT');
    // The audit trail shows the refused repeat, naming the credit it would repeat, and the replay.
    const trail = await h.db.database.db
      .selectFrom('audit_events')
      .select(['after_json', 'source'])
      .where('action', '=', 'merchant.fund')
      .orderBy('created_at')
      .execute();
    const after = trail.map((r) => JSON.parse(r.after_json ?? '{}'));
    assert.deepEqual(
      after.map((a) => a.outcome),
      ['credited', 'refused', 'credited', 'credited', 'replayed'],
    );
    assert.equal(after[1].creditId, credit.creditId);
    assert.ok(trail.every((r) => r.source === 'cli'));
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
  });

  it('twenty concurrent credits with one key, and twenty concurrent repeats refused by the 24-hour rule, credit once each', async (t) => {
    const h = await buildConsole(t, dialect);
    const run = (input: Record<string, unknown>) =>
      runVerb(h.app.svc, fundMerchant, {
        input: { appId: h.merchant.appId, currency: 'EUR', amount: '10', reference: 'race', ...input },
        actor: 'alice',
      });
    const keyed = await Promise.all(Array.from({ length: 20 }, () => run({ idempotencyKey: 'k-1' })));
    assert.deepEqual(keyed.map((c) => c.outcome).sort(), ['credited', ...Array(19).fill('replayed')]);
    assert.equal(new Set(keyed.map((c) => c.creditId)).size, 1);
    const repeats = await Promise.all(Array.from({ length: 20 }, () => run({ reference: 'race 2', refuseRepeat: true })));
    assert.deepEqual(repeats.map((c) => c.outcome).sort(), ['credited', ...Array(19).fill('refused')]);
    const n = await h.db.database.db.selectFrom('funding_credits').select('id').where('reference', 'in', ['race', 'race 2']).execute();
    assert.equal(n.length, 2);
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
  });

  // After an attack pass: the key is unique per merchant, but the lock was per (merchant, currency):
  // the form's token posted at once for EUR and USDT raced to the unique index, a 500 on PostgreSQL.
  it('one form’s token posted at once for two currencies credits once: the other posts answer the credit or are refused (409), never 500; the same for --idempotency-key', async (t) => {
    const h = await buildConsole(t, dialect);
    const admin = await makeOperator(h, 'ada@example.com', 'admin');
    const s = await login(h, admin);
    const url = `/console/merchants/${h.merchant.appId}`;
    const once = hidden((await consoleGet(h, s, url)).body, 'once');
    const currencies = ['EUR', 'USDT', 'EUR', 'USDT', 'EUR', 'USDT', 'EUR', 'USDT'];
    const posts = await Promise.all(
      currencies.map((currency) => consolePost(h, s, `${url}/fund`, { amount: '7', currency, reference: 'mixed', once })),
    );
    const credits = await h.db.database.db.selectFrom('funding_credits').selectAll().where('reference', '=', 'mixed').execute();
    assert.equal(credits.length, 1, 'one credit for one token');
    const won = credits[0]?.currency;
    for (const [i, p] of posts.entries()) {
      if (currencies[i] === won) assert.deepEqual([p.statusCode, p.headers.location], [303, `${url}?done=funded`], p.body.slice(0, 300));
      else {
        assert.equal(p.statusCode, 409, p.body.slice(0, 300));
        assert.match(p.body, /idempotencyKey: already used for another credit/);
      }
    }
    const run = (currency: string) =>
      runVerb(h.app.svc, fundMerchant, {
        input: { appId: h.merchant.appId, currency, amount: '5', reference: 'cli mixed', idempotencyKey: 'k-mixed' },
        actor: 'alice',
      }).then(
        (c) => c.outcome,
        (err: { code?: string; message?: string }) => `${err.code}: ${err.message}`,
      );
    const outcomes = await Promise.all(currencies.map(run));
    const cli = await h.db.database.db.selectFrom('funding_credits').selectAll().where('reference', '=', 'cli mixed').execute();
    assert.equal(cli.length, 1);
    for (const [i, o] of outcomes.entries()) {
      if (currencies[i] === cli[0]?.currency) assert.ok(o === 'credited' || o === 'replayed', o);
      else assert.match(o, /^1008: idempotencyKey: already used for another credit/);
    }
    assert.equal(outcomes.filter((o) => o === 'credited').length, 1);
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
  });
});
