import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { buildApp } from '../src/app.js';
import { emitEvent } from '../src/callbacks/outbox.js';
import { MIGRATIONS } from '../src/db/migrate.js';
import { withTrades } from '../src/db/trades-table.js';
import { build, holderBody, randomStr, testConfig } from './helpers/app.js';
import { fundedCard } from './helpers/cards.js';
import { childDatabaseUrl, ROOT, runCli } from './helpers/cli.js';
import { isolatedDatabase } from './helpers/db.js';
import { eachDialect } from './helpers/dialects.js';
import { testLogging } from './helpers/log-audit.js';
import { eventually, receiver } from './helpers/receiver.js';

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

eachDialect('cardprogram CLI', (dialect) => {
  it('merchant create (HMAC) prints credentials that sign requests the service accepts', async (t) => {
    const h = await build(t, dialect);
    const masterKey = h.config.masterKey.toString('hex');
    const env = { DATABASE_URL: childDatabaseUrl(h.db), CARDPROGRAM_MASTER_KEY: masterKey, CARDPROGRAM_DATA_DIR: h.db.dataDir };
    const res = await runCli(['merchant', 'create', '--name', 'Acme Wallet', '--login-free', '--json'], env);
    assert.equal(res.code, 0, res.stderr);
    const created = JSON.parse(res.stdout);
    assert.match(created.appId, /^mch_[0-9a-z]{16}$/);
    assert.match(created.secret, /^sk_test_[0-9a-f]{32}$/);
    assert.match(created.webhookSecret, /^whsec_/);
    const call = await h.call('/api/network/holderCreate.html', holderBody(), { merchant: created });
    assert.equal(call.status, 200, JSON.stringify(call.body));

    const list = await runCli(['merchant', 'list', '--json'], env);
    assert.equal(list.code, 0, list.stderr);
    const listed = JSON.parse(list.stdout).find((m: { appId: string }) => m.appId === created.appId);
    assert.equal(listed.loginFree, true);
    assert.ok(!list.stdout.includes(created.secret), 'list never shows secrets');

    const upd = await runCli(
      ['merchant', 'update', created.appId, '--login-free', 'off', '--notify-url', 'https://acme.example/hooks', '--json'],
      env,
    );
    assert.equal(upd.code, 0, upd.stderr);
    assert.equal(JSON.parse(upd.stdout).loginFree, false);
    assert.equal(JSON.parse(upd.stdout).notifyUrl, 'https://acme.example/hooks');
    assert.equal(JSON.parse(upd.stdout).rateLimit, null);

    const limited = await runCli(['merchant', 'update', created.appId, '--rate-limit', '25'], env);
    assert.equal(limited.code, 0, limited.stderr);
    assert.match(limited.stdout, /rate limit 25\/s, authorization endpoint none, dispute provisional credit off$/m);
    const credit = await runCli(['merchant', 'update', created.appId, '--dispute-provisional-credit', 'on', '--json'], env);
    assert.equal(JSON.parse(credit.stdout).disputeProvisionalCredit, true);
    const back = await runCli(['merchant', 'update', created.appId, '--rate-limit', 'default', '--json'], env);
    assert.equal(JSON.parse(back.stdout).rateLimit, null);
    const zero = await runCli(['merchant', 'update', created.appId, '--rate-limit', '0'], env);
    assert.deepEqual([zero.code, zero.stderr], [1, 'cardprogram: rateLimit: must be a whole number of requests a second, 1 to 1000000\n']);
    const word = await runCli(['merchant', 'update', created.appId, '--rate-limit', 'fast'], env);
    assert.equal(word.code, 1);
    assert.match(word.stderr, /option '--rate-limit <n\|default>' argument 'fast' is invalid/);

    // The real-time authorization endpoint (issue 16).
    const endpoint = await runCli(
      ['merchant', 'update', created.appId, '--authorization-url', 'https://acme.example/authorize', '--authorization-timeout', '1500'],
      env,
    );
    assert.equal(endpoint.code, 0, endpoint.stderr);
    assert.match(
      endpoint.stdout,
      /authorization endpoint https:\/\/acme\.example\/authorize \(1500 ms, default decline\), dispute provisional credit on$/m,
    );
    const approve = await runCli(['merchant', 'update', created.appId, '--authorization-default', 'approve', '--json'], env);
    assert.deepEqual(
      [JSON.parse(approve.stdout).authorizationUrl, JSON.parse(approve.stdout).authorizationDefault],
      ['https://acme.example/authorize', 'approve'],
    );
    const slow = await runCli(['merchant', 'update', created.appId, '--authorization-timeout', '9000'], env);
    assert.deepEqual([slow.code, slow.stderr], [1, 'cardprogram: timeoutMs: must be a whole number of milliseconds, 100 to 5000\n']);
    const none = await runCli(['merchant', 'update', created.appId, '--authorization-url', 'none', '--json'], env);
    assert.equal(JSON.parse(none.stdout).authorizationUrl, null);
  });

  it('card controls: shows a card’s controls and what its limits have left; --set replaces them, checked', async (t) => {
    const h = await build(t, dialect);
    const env = { DATABASE_URL: childDatabaseUrl(h.db), CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex') };
    const { cardId } = await fundedCard(h, { topUp: 50 });
    const set = await runCli(
      ['card', 'controls', cardId, '--set', '{"spendingLimits":[{"amount":30,"interval":"daily"}],"channels":["pos"]}'],
      env,
    );
    assert.equal(set.code, 0, set.stderr);
    assert.match(
      set.stdout,
      /^card_\w+: controls \{"spendingLimits":\[\{"amount":30,"interval":"daily"\}\],"channels":\["pos"\]\}\n {2}daily limit 30 \(card\): spent 0, 30 left\n$/,
    );
    const auth = await h.call('/sandbox/network/authorize', { cardId, amount: 40, channel: 'pos', randomStr: randomStr() });
    assert.equal(auth.body.code, '2728', 'the operator’s controls decide');
    const shown = await runCli(['card', 'controls', cardId, '--json'], env);
    assert.deepEqual(JSON.parse(shown.stdout).spending[0].remaining, 30);
    const bad = await runCli(['card', 'controls', cardId, '--set', '{"channels":["phone"]}'], env);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^cardprogram: --set: \/channels\/0 /);
    const unknown = await runCli(['card', 'controls', 'card_nope', '--set', '{}'], env);
    assert.deepEqual([unknown.code, unknown.stderr], [1, 'cardprogram: Card not found\n']);
  });

  it('merchant create with RSA-SHA256 and a public key prints no secret', async (t) => {
    const h = await build(t, dialect);
    const pemFile = join(h.db.dataDir, 'merchant.pub.pem');
    const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    writeFileSync(pemFile, publicKey.export({ type: 'spki', format: 'pem' }));
    const env = { DATABASE_URL: childDatabaseUrl(h.db), CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex') };
    const res = await runCli(
      ['merchant', 'create', '--name', 'RSA Co', '--sign-type', 'RSA-SHA256', '--public-key', pemFile, '--json'],
      env,
    );
    assert.equal(res.code, 0, res.stderr);
    const created = JSON.parse(res.stdout);
    assert.equal(created.secret, undefined);
    assert.match(created.webhookSecret, /^whsec_/);
    const bad = await runCli(['merchant', 'create', '--name', 'RSA Co', '--sign-type', 'RSA-SHA256', '--json'], env);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /publicKey: is required/);
    // Exponent 3: refused with the rule, and no merchant is created.
    const e3File = join(h.db.dataDir, 'e3.pub.pem');
    writeFileSync(
      e3File,
      generateKeyPairSync('rsa', { modulusLength: 2048, publicExponent: 3 }).publicKey.export({ type: 'spki', format: 'pem' }),
    );
    const e3 = await runCli(['merchant', 'create', '--name', 'E3 Co', '--sign-type', 'RSA-SHA256', '--public-key', e3File, '--json'], env);
    assert.equal(e3.code, 1);
    assert.match(e3.stderr, /publicKey: must have the public exponent 65537, has 3/);
    const names = await h.db.database.db.selectFrom('merchants').select('name').execute();
    assert.ok(!names.some((m) => m.name === 'E3 Co'));
  });

  it('holder review sets the audit status; errors exit non-zero with a message', async (t) => {
    const h = await build(t, dialect);
    const created = await h.call('/api/network/holderCreate.html', holderBody());
    const env = { DATABASE_URL: childDatabaseUrl(h.db), CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex') };
    const ok = await runCli(['holder', 'review', created.body.holderId, '--status', '2', '--json'], env);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(JSON.parse(ok.stdout).auditStatus, 2);
    const query = await h.call('/api/network/holderQuery.html', {
      holderId: created.body.holderId,
      randomStr: randomBytes(16).toString('hex'),
    });
    assert.equal(query.body.model.auditStatus, 2);

    const illegal = await runCli(['holder', 'review', created.body.holderId, '--status', '1'], env);
    assert.equal(illegal.code, 1);
    assert.match(illegal.stderr, /cannot change from 2/);
    const unknown = await runCli(['holder', 'review', 'hld_nope', '--status', '2', '--json'], env);
    assert.equal(unknown.code, 1);
    assert.equal(JSON.parse(unknown.stderr).code, '2606');
    const usage = await runCli(['holder', 'review', 'hld_nope', '--status', 'two'], env);
    assert.notEqual(usage.code, 0);
    assert.match(usage.stderr, /expected a whole number/);
  });

  it('ledger check passes on sound books and names each broken invariant with exit 1', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 125 });
    await h.call('/sandbox/network/authorize', { cardId, amount: 20, randomStr: randomStr() });
    const env = { DATABASE_URL: childDatabaseUrl(h.db), CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex') };
    const sound = await runCli(['ledger', 'check', '--json'], env);
    assert.equal(sound.code, 0, sound.stderr);
    // Two funding entries (EUR, USDT: every test merchant is funded), the top-up, the authorization.
    assert.deepEqual(JSON.parse(sound.stdout), { entries: 4, postings: 8, cards: 1, trades: 2, debt: {}, problems: [] });

    // Hold expiry by hand (decisions §12.9): not due now; due 8 days on; released once.
    const notYet = await runCli(['holds', 'expire', '--json'], env);
    assert.equal(notYet.code, 0, notYet.stderr);
    assert.deepEqual(JSON.parse(notYet.stdout), { released: 0, tradeIds: [], failed: [] });
    const later = new Date(Date.now() + 8 * 86_400_000).toISOString();
    const expired = await runCli(['holds', 'expire', '--now', later], env);
    assert.equal(expired.code, 0, expired.stderr);
    assert.match(expired.stdout, /^1 holds released: trd_/);
    assert.equal(JSON.parse((await runCli(['holds', 'expire', '--now', later, '--json'], env)).stdout).released, 0);
    assert.equal((await runCli(['holds', 'expire', '--now', 'soon'], env)).code, 1);
    assert.equal((await runCli(['ledger', 'check'], env)).code, 0);

    // A cached balance that no longer replays from the journal, as a bad restore or a bug would leave it.
    await h.db.database.db.updateTable('cards').set({ available_balance: 1 }).where('id', '=', cardId).execute();
    const broken = await runCli(['ledger', 'check'], env);
    assert.equal(broken.code, 1);
    assert.match(broken.stdout, new RegExp(`card ${cardId}: available balance 1, its journal replays to 12500\n`));
    assert.match(broken.stdout, /1 problems$/m);
    assert.equal(broken.stderr, 'cardprogram: ledger check found 1 problems\n');
  });

  it('migrate applies the migrations to a new database, then has nothing to do', async (t) => {
    const fresh = await isolatedDatabase(dialect);
    t.after(() => fresh.cleanup());
    const env = { DATABASE_URL: childDatabaseUrl(fresh), CARDPROGRAM_MASTER_KEY: randomBytes(32).toString('hex') };
    const first = await runCli(['migrate', '--json'], env);
    assert.equal(first.code, 0, first.stderr);
    assert.deepEqual(JSON.parse(first.stdout), { applied: MIGRATIONS.map(([name]) => name) });
    const second = await runCli(['migrate'], env);
    assert.equal(second.code, 0, second.stderr);
    assert.equal(second.stdout.trim(), 'database is up to date');
    // The app starts on the migrated database without migrating again.
    const app = await buildApp(testConfig(fresh.dataDir), { database: fresh.database, ...testLogging() });
    await app.close();
  });

  it('worker runs on its own: it stays up, delivers, and stops cleanly on SIGTERM', async (t) => {
    const h = await build(t, dialect);
    const rx = await receiver(t, h.merchant.webhookSecret);
    await h.db.database.withTx((tx) =>
      emitEvent(tx, {
        merchantId: h.merchant.appId,
        type: 'holder.audit',
        subject: 'holder:x',
        url: rx.url,
        body: { holderId: 'x' },
        now: Date.now(),
      }),
    );
    const child = spawn(process.execPath, ['bin/cardprogram.js', 'worker'], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: childDatabaseUrl(h.db),
        CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex'),
        CARDPROGRAM_WORKER_POLL_MS: '50',
      },
      stdio: 'ignore',
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    t.after(() => {
      child.kill('SIGKILL');
    });
    await eventually(() => rx.received.length === 1, 15_000, 'delivery by the worker process');
    assert.equal(rx.received[0]?.verified, true);
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(child.exitCode, null, 'still running');
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
  });

  it('call signs and sends any operation to the running service; its errors are one line and exit 1', async (t) => {
    const h = await build(t, dialect);
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`;
    const env = {
      DATABASE_URL: childDatabaseUrl(h.db),
      CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex'),
      CARDPROGRAM_DATA_DIR: h.db.dataDir,
      CARDPROGRAM_PUBLIC_URL: url,
    };
    const created = await runCli(['call', 'holderCreate', '--merchant', h.merchant.appId, '--data', JSON.stringify(holderBody())], env);
    assert.equal(created.code, 0, created.stderr);
    const holderId = JSON.parse(created.stdout).holderId;
    assert.match(holderId, /^hld_/);
    const byPath = await runCli(
      ['call', '/api/network/holderQuery.html', '--merchant', h.merchant.appId, '--data', `{"holderId":"${holderId}"}`],
      env,
    );
    assert.equal(byPath.code, 0, byPath.stderr);
    assert.equal(JSON.parse(byPath.stdout).model.holderId, holderId);
    // An error reply is printed and exits 1.
    const missing = await runCli(['call', 'cardQuery', '--merchant', h.merchant.appId, '--data', '{"cardId":"card_nope"}'], env);
    assert.equal(missing.code, 1);
    assert.equal(JSON.parse(missing.stdout).code, '2648');
    const refusals: Array<[string[], RegExp]> = [
      [['call', 'nothing', '--merchant', h.merchant.appId], /^cardprogram: no operation "nothing"; one of: holderCreate, /],
      [['call', 'cardQuery', '--merchant', h.merchant.appId, '--data', '{nope'], /^cardprogram: --data must be a JSON object$/],
      [['call', 'cardQuery', '--merchant', 'mch_nobody'], /^cardprogram: no merchant mch_nobody$/],
      [
        ['call', 'cardQuery'],
        new RegExp(
          `^cardprogram: no --merchant, and no sandbox demo merchant in ${escapeRegExp(join(h.db.dataDir, 'demo-merchant.json'))}: `,
        ),
      ],
      [
        ['call', 'cardQuery', '--merchant', h.merchant.appId, '--url', 'http://127.0.0.1:9'],
        /^cardprogram: cannot read http:\/\/127\.0\.0\.1:9\/openapi\.json/,
      ],
    ];
    for (const [args, message] of refusals) {
      const r = await runCli(args, env);
      assert.equal(r.code, 1, args.join(' '));
      assert.match(r.stderr.trim(), message);
      assert.equal(r.stderr.trim().split('\n').length, 1);
    }
  });

  it('demo fills the sandbox through the API: approved cardholders, cards, and transactions the 4.1 list returns', async (t) => {
    const h = await build(t, dialect);
    const env = {
      DATABASE_URL: childDatabaseUrl(h.db),
      CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex'),
      CARDPROGRAM_DATA_DIR: h.db.dataDir,
    };
    const res = await runCli(['demo', '--merchant', h.merchant.appId, '--holders', '3', '--days', '10', '--seed', '42', '--json'], env);
    assert.equal(res.code, 0, res.stderr);
    const filled = JSON.parse(res.stdout);
    assert.equal(filled.holders.length, 3);
    const db = h.db.database.db;
    const holders = await db.selectFrom('cardholders').select(['id', 'audit_status']).execute();
    assert.deepEqual(
      holders.map((x) => x.audit_status),
      [2, 2, 2],
    );
    const trades = await withTrades(db).selectFrom('trades').select('id').execute();
    assert.equal(trades.length, filled.trades, 'every transaction it reports is in the ledger');
    // Each card's top-up (100) is dated before the payments it funded.
    for (const holder of filled.holders) {
      for (const card of holder.cards) {
        const rows = await withTrades(db)
          .selectFrom('trades')
          .select(['trade_type', 'business_date'])
          .where('card_id', '=', card.cardId)
          .orderBy('business_date')
          .orderBy('id')
          .execute();
        assert.equal(rows[0]?.trade_type, 100, `${card.cardId}: ${JSON.stringify(rows)}`);
        assert.ok(rows.slice(1).every((row) => row.trade_type !== 100 && row.business_date > (rows[0]?.business_date ?? '')));
      }
    }
    const cardId = filled.holders[0].cards[0].cardId;
    const today = new Date().toISOString().slice(0, 10);
    const list = await h.call('/api/network/networkAuthTradeList.html', {
      cardId,
      beginDate: new Date(Date.now() - 12 * 86_400_000).toISOString().slice(0, 10),
      endDate: today,
      start: 0,
      randomStr: randomStr(),
    });
    assert.ok(list.body.total >= 1, JSON.stringify(list.body));
    // Production has no simulation: the demo refuses to run.
    const prod = await runCli(['demo'], {
      ...env,
      CARDPROGRAM_ENV: 'production',
      CARDPROGRAM_PUBLIC_URL: 'https://cards.example.com',
      CARDPROGRAM_BINS: '{"EUR":"41000001","USDT":"51000001"}',
    });
    assert.equal(prod.code, 1);
    assert.match(prod.stderr, /runs in the sandbox only/);
    const bad = await runCli(['demo', '--holders', '0'], env);
    assert.match(bad.stderr, /--holders must be 1 to 10000/);
    const longAgo = await runCli(['demo', '--days', '400'], env);
    assert.equal(longAgo.code, 1);
    assert.match(longAgo.stderr, /--days must be at most 365/);
    const processes = await runCli(['serve', '--processes', '0'], env);
    assert.equal(processes.code, 1);
    assert.match(processes.stderr, /--processes must be 1 to 64/);
  });
});

it('every subcommand has --help, and says what it does', async () => {
  const { buildCli } = await import('../src/cli/main.js');
  const walk = (cmd: import('commander').Command, path: string[]): string[][] =>
    cmd.commands.flatMap((c) => (c.commands.length ? walk(c, [...path, c.name()]) : [[...path, c.name()]]));
  const all = walk(buildCli(), []);
  const names = all.map((p) => p.join(' '));
  for (const expected of [
    'serve',
    'migrate',
    'worker',
    'merchant create',
    'merchant list',
    'merchant update',
    'holder review',
    'card freeze',
    'card unfreeze',
    'card close',
    'card controls',
    'kyc review',
    'callbacks list',
    'callbacks retry',
    'domain add',
    'domain list',
    'domain remove',
    'call',
    'demo',
    'keys list',
    'keys rotate',
    'keys reseal',
    'audit list',
    'network send',
    'network import',
    'network settlement',
    'network file',
  ]) {
    assert.ok(names.includes(expected), `${expected} exists`);
  }
  for (const path of all) {
    let out = '';
    const cli = buildCli();
    const configure = (c: import('commander').Command) => {
      c.exitOverride().configureOutput({ writeOut: (s) => (out += s), writeErr: (s) => (out += s) });
      for (const sub of c.commands) configure(sub);
    };
    configure(cli);
    await assert.rejects(cli.parseAsync(['node', 'cardprogram', ...path, '--help']), { code: 'commander.helpDisplayed' });
    assert.match(out, new RegExp(`^Usage: cardprogram ${path.join(' ')}`), path.join(' '));
    const description = out.split('\n').find((l, i) => i > 0 && l.trim() !== '');
    assert.ok(description && description.length > 10, `${path.join(' ')} has a description`);
  }
});
