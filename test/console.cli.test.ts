import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { build } from './helpers/app.js';
import { childDatabaseUrl, runCli } from './helpers/cli.js';
import { formBody } from './helpers/console.js';
import { eachDialect } from './helpers/dialects.js';
import { startService, stopped } from './helpers/service.js';

// Issue 17: operators are made from the command line (the first admin of a production console
// comes from here), and the sandbox starts with a ready-made admin when the console is on.

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

eachDialect('console operators from the command line', (dialect) => {
  it('operator create and reset --url: the set-up link on the console’s own address; a bad one refused before anything is written (issue 30.9)', async (t) => {
    const h = await build(t, dialect, { console: true });
    const env = {
      DATABASE_URL: childDatabaseUrl(h.db),
      CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex'),
      CARDPROGRAM_PUBLIC_URL: 'https://cards.example',
    };
    const made = await runCli(
      ['operator', 'create', 'ops@example.com', '--role', 'viewer', '--url', 'https://console.issuer.example/'],
      env,
    );
    assert.equal(made.code, 0, made.stderr);
    assert.match(made.stdout, /^ {2}https:\/\/console\.issuer\.example\/console\/setup\?token=[A-Za-z0-9_-]{43}$/m);
    assert.match(made.stdout, /the --url given/);
    const reset = await runCli(['operator', 'reset', 'ops@example.com', '--url', 'https://console.issuer.example', '--json'], env);
    assert.equal(reset.code, 0, reset.stderr);
    assert.match(JSON.parse(reset.stdout).setupUrl, /^https:\/\/console\.issuer\.example\/console\/setup\?token=/);
    for (const url of ['not a url', 'ftp://console.issuer.example']) {
      const bad = await runCli(['operator', 'create', 'x@example.com', '--role', 'viewer', '--url', url], env);
      assert.notEqual(bad.code, 0);
      assert.match(bad.stderr, /--url must be/);
    }
    const plain = await runCli(['operator', 'create', 'y@example.com', '--role', 'viewer', '--url', 'http://console.internal'], {
      ...env,
      CARDPROGRAM_ENV: 'production',
      CARDPROGRAM_BINS: '{"EUR":"41000001","USDT":"51000001"}',
    });
    assert.notEqual(plain.code, 0);
    assert.match(plain.stderr, /--url must be an https:\/\/ address in production, got "http:\/\/console\.internal"/);
    const emails = (await h.db.database.db.selectFrom('operators').select('email').execute()).map((o) => o.email);
    assert.deepEqual(emails, ['ops@example.com'], 'nothing written by a refused --url');
  });

  it('operator create prints a one-time set-up link; list, update and reset; each change in the audit trail', async (t) => {
    const h = await build(t, dialect, { console: true });
    const env = {
      DATABASE_URL: childDatabaseUrl(h.db),
      CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex'),
      CARDPROGRAM_PUBLIC_URL: 'https://cards.example',
    };
    const created = await runCli(['operator', 'create', 'Ops@Example.com', '--role', 'reviewer'], env);
    assert.equal(created.code, 0, created.stderr);
    const link = /https:\/\/cards\.example\/console\/setup\?token=([A-Za-z0-9_-]{43})/.exec(created.stdout);
    assert.ok(link, created.stdout);
    // The link opens the set-up page of the running service.
    const page = await h.app.inject({ method: 'GET', url: `/console/setup?token=${link[1]}` });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /ops@example\.com/);

    const bad = await runCli(['operator', 'create', 'ops@example.com', '--role', 'reviewer'], env);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /exists already/);
    const noRole = await runCli(['operator', 'create', 'x@example.com', '--role', 'boss'], env);
    assert.notEqual(noRole.code, 0);

    const list = JSON.parse((await runCli(['operator', 'list', '--json'], env)).stdout);
    assert.deepEqual(
      list.map((o: Record<string, unknown>) => [o.email, o.role, o.status, o.setup, o.totp]),
      [['ops@example.com', 'reviewer', 'active', 'pending', false]],
    );
    assert.ok(!JSON.stringify(list).includes(link[1] as string), 'the list never shows a link');

    const updated = await runCli(['operator', 'update', 'ops@example.com', '--role', 'support'], env);
    assert.equal(updated.code, 0, updated.stderr);
    // A new role ends the link issued for the old one (issue 26, finding 10), and says how to get one.
    assert.match(updated.stdout, /no open set-up link: `operator reset` makes one/);
    assert.equal((await h.app.inject({ method: 'GET', url: `/console/setup?token=${link[1]}` })).statusCode, 410, 'ended by the new role');
    const reset = await runCli(['operator', 'reset', 'ops@example.com'], env);
    assert.equal(reset.code, 0, reset.stderr);
    const newLink = /token=([A-Za-z0-9_-]{43})/.exec(reset.stdout)?.[1];
    assert.ok(newLink && newLink !== link[1]);
    assert.equal((await h.app.inject({ method: 'GET', url: `/console/setup?token=${link[1]}` })).statusCode, 410, 'the old link is dead');

    const trail = JSON.parse((await runCli(['audit', 'list', '--json'], env)).stdout) as Array<Record<string, any>>;
    assert.deepEqual(
      trail.map((e) => [e.action, e.target, e.source]),
      [
        ['operator.reset', 'ops@example.com', 'cli'],
        ['operator.update', 'ops@example.com', 'cli'],
        ['operator.create', 'ops@example.com', 'cli'],
      ],
    );
    assert.deepEqual(trail[1]?.before, { role: 'reviewer', status: 'active' });
    assert.equal(trail[1]?.after.role, 'support');
    assert.ok(!JSON.stringify(trail).includes(newLink as string), 'no set-up token in the trail');

    // The one-time code command is the sandbox's alone.
    const prod = await runCli(['operator', 'code', 'ops@example.com'], { ...env, CARDPROGRAM_ENV: 'production' });
    assert.notEqual(prod.code, 0);
  });

  it('the sandbox with CARDPROGRAM_CONSOLE=on starts with a ready-made admin who logs in with the printed code', async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'cardprogram-console-'));
    const h = await build(t, dialect);
    const env = {
      DATABASE_URL: childDatabaseUrl(h.db),
      CARDPROGRAM_DATA_DIR: dataDir,
      CARDPROGRAM_CONSOLE: 'on',
      CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex'),
    };
    const service = await startService(env);
    t.after(async () => {
      service.child.kill('SIGTERM');
      await stopped(service.child);
    });
    assert.match(service.output(), /Console: http:\/\/127\.0\.0\.1:\d+\/console/);
    const file = join(dataDir, 'console-admin.json');
    assert.match(service.output(), new RegExp(`sandbox admin admin@sandbox\\.test: password and authenticator key in ${file}`));
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const admin = JSON.parse(readFileSync(file, 'utf8'));
    const code = await runCli(['operator', 'code', 'admin@sandbox.test'], env);
    assert.equal(code.code, 0, code.stderr);
    const six = /^(\d{6}) /.exec(code.stdout)?.[1];
    assert.ok(six, code.stdout);
    const res = await fetch(`${service.url}/console/login`, {
      method: 'POST',
      headers: FORM,
      body: formBody({ email: admin.email, password: admin.password, code: six }),
      redirect: 'manual',
    });
    assert.equal(res.status, 303);
    const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0] as string;
    const overview = await fetch(`${service.url}/console`, { headers: { cookie } });
    assert.equal(overview.status, 200);
    assert.match(await overview.text(), /admin@sandbox\.test/);
  });
});
