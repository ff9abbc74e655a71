import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { build } from './helpers/app.js';
import { childDatabaseUrl } from './helpers/cli.js';
import { isolatedDatabase } from './helpers/db.js';
import { eachDialect } from './helpers/dialects.js';
import { startService as start, stopped } from './helpers/service.js';

eachDialect('the service process', (dialect) => {
  it('first start creates the demo merchant, prints a working signed request; SIGTERM stops it cleanly; a restart keeps the merchant', async (t) => {
    const db = await isolatedDatabase(dialect);
    const dataDir = mkdtempSync(join(tmpdir(), 'cardprogram-serve-'));
    t.after(async () => {
      await db.cleanup();
      rmSync(dataDir, { recursive: true, force: true });
    });
    const env = { DATABASE_URL: childDatabaseUrl(db), CARDPROGRAM_DATA_DIR: dataDir };
    const first = await start(env);
    const demoFile = join(dataDir, 'demo-merchant.json');
    assert.ok(existsSync(demoFile));
    assert.equal(statSync(demoFile).mode & 0o777, 0o600);
    const demo = JSON.parse(readFileSync(demoFile, 'utf8'));
    assert.deepEqual(Object.keys(demo).sort(), ['appId', 'baseUrl', 'secret', 'webhookSecret']);
    assert.ok(first.output().includes(`appId ${demo.appId}`));
    assert.ok(existsSync(join(dataDir, 'master.key')), 'sandbox generates its master key into the data dir');

    // The printed request, sent as printed, is accepted (against the actual port).
    const m = /-d '(\{.*\})'/.exec(first.output());
    assert.ok(m?.[1], first.output());
    const res = await fetch(`${first.url}/api/network/holderCreate.html`, {
      method: 'POST',
      body: m[1],
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as { firstName: string }).firstName, 'Alice');
    const health = await fetch(`${first.url}/healthz`);
    assert.deepEqual(await health.json(), { status: 'ok', database: dialect.name });

    first.child.kill('SIGTERM');
    assert.equal(await stopped(first.child), 0);

    const second = await start(env);
    t.after(() => {
      second.child.kill('SIGKILL');
    });
    assert.ok(!second.output().includes('Demo merchant created'), 'no second demo merchant');
    const again = await fetch(`${second.url}/api/network/holderCreate.html`, {
      method: 'POST',
      body: m[1],
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(again.status, 200, 'the acknowledged write and its key survived the restart');
    assert.equal(again.headers.get('x-idempotent-replay'), 'true');
    second.child.kill('SIGTERM');
    assert.equal(await stopped(second.child), 0);
  });

  it('/healthz answers 503 "starting" until start-up is complete (the demo merchant written), then 200', async (t) => {
    const h = await build(t, dialect);
    h.app.starting = true;
    const starting = await h.app.inject({ method: 'GET', url: '/healthz' });
    assert.deepEqual([starting.statusCode, starting.json().status], [503, 'starting']);
    h.app.starting = false;
    const ready = await h.app.inject({ method: 'GET', url: '/healthz' });
    assert.deepEqual([ready.statusCode, ready.json().status], [200, 'ok']);
  });

  it('CARDPROGRAM_DEMO_MERCHANT=off creates no demo merchant; a wrong master key refuses to start with a clear message', async (t) => {
    const db = await isolatedDatabase(dialect);
    const dataDir = mkdtempSync(join(tmpdir(), 'cardprogram-serve-'));
    t.after(async () => {
      await db.cleanup();
      rmSync(dataDir, { recursive: true, force: true });
    });
    const key = randomBytes(32).toString('hex');
    const env = {
      DATABASE_URL: childDatabaseUrl(db),
      CARDPROGRAM_DATA_DIR: dataDir,
      CARDPROGRAM_DEMO_MERCHANT: 'off',
      CARDPROGRAM_MASTER_KEY: key,
    };
    const first = await start(env);
    assert.ok(!first.output().includes('Demo merchant created'));
    assert.ok(!existsSync(join(dataDir, 'demo-merchant.json')));
    first.child.kill('SIGTERM');
    await stopped(first.child);
    await assert.rejects(
      start({ ...env, CARDPROGRAM_MASTER_KEY: randomBytes(32).toString('hex') }),
      /cardprogram: stored secrets are sealed under master key \S+, but CARDPROGRAM_MASTER_KEY is \S+/,
    );
  });

  it('production refuses to start without CARDPROGRAM_MASTER_KEY', async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'cardprogram-prod-'));
    t.after(() => rmSync(dataDir, { recursive: true, force: true }));
    await assert.rejects(
      start({
        CARDPROGRAM_ENV: 'production',
        CARDPROGRAM_DATA_DIR: dataDir,
        DATABASE_URL: dialect.name === 'sqlite' ? `file:${dataDir}/x.sqlite` : dialect.url,
      }),
      /CARDPROGRAM_MASTER_KEY is required in production/,
    );
    assert.ok(!existsSync(join(dataDir, 'master.key')));
  });
});
