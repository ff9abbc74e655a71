import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { buildApp } from '../src/app.js';
import { emitEvent } from '../src/callbacks/outbox.js';
import { MIGRATIONS } from '../src/db/migrate.js';
import { build, holderBody, testConfig } from './helpers/app.js';
import { childDatabaseUrl, ROOT, runCli } from './helpers/cli.js';
import { isolatedDatabase } from './helpers/db.js';
import { eachDialect } from './helpers/dialects.js';
import { eventually, receiver } from './helpers/receiver.js';

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
    const app = await buildApp(testConfig(fresh.dataDir), { database: fresh.database, logger: false });
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
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/index.ts', 'worker'], {
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
});
