import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { hmacSign, signingString } from '../src/http/signing.js';
import { holderBody, randomStr } from './helpers/app.js';
import { childDatabaseUrl, ROOT } from './helpers/cli.js';
import { dialectSkip, isolatedDatabase, testDialects } from './helpers/db.js';
import { eventually, receiver } from './helpers/receiver.js';
import { freePort, killAll, startService, stopped } from './helpers/service.js';

// Several instances on one PostgreSQL (SQLite serves one host; its several processes are tested by
// `serve --processes` below on the same database).
const pgDialect = testDialects().find((d) => d.name === 'postgres');

function client(base: string, demo: { appId: string; secret: string }) {
  return async (path: string, body: Record<string, unknown>) => {
    const signed: Record<string, unknown> = { ...body, appId: demo.appId };
    signed.sign = hmacSign(demo.secret, signingString(signed));
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(signed),
    });
    return { status: res.status, body: (await res.json()) as Record<string, any>, headers: res.headers };
  };
}

it('two instances on one PostgreSQL behave as one service', { skip: dialectSkip('postgres') }, async (t) => {
  const db = await isolatedDatabase(pgDialect ?? { name: 'postgres', url: '' });
  const dataDir = mkdtempSync(join(tmpdir(), 'cardprogram-instances-'));
  const services: Array<Awaited<ReturnType<typeof startService>>> = [];
  t.after(async () => {
    // The services first: their workers' statements must not meet the schema's drop.
    await killAll(services.map((s) => s.child));
    await db.cleanup();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const env = {
    DATABASE_URL: childDatabaseUrl(db),
    CARDPROGRAM_DATA_DIR: dataDir,
    CARDPROGRAM_WORKER_POLL_MS: '20',
    CARDPROGRAM_MERCHANT_CACHE_MS: '0',
  };
  const a = await startService(env);
  services.push(a);
  const b = await startService({ ...env, CARDPROGRAM_DEMO_MERCHANT: 'off' });
  services.push(b);
  const demo = JSON.parse(readFileSync(join(dataDir, 'demo-merchant.json'), 'utf8'));
  const callA = client(a.url, demo);
  const callB = client(b.url, demo);

  // A funded card, made through A.
  const holder = await callA('/api/network/holderCreate.html', holderBody());
  assert.equal(holder.status, 200, JSON.stringify(holder.body));
  await callA('/sandbox/holder/review', { holderId: holder.body.holderId, auditStatus: 2, randomStr: randomStr() });
  const card = await callA('/api/network/cardApply.html', { holderId: holder.body.holderId, currency: 'EUR', randomStr: randomStr() });
  const cardId = card.body.model.cardId as string;

  // The same randomStr sent at once to both instances: one top-up, the same answer twice.
  for (let round = 0; round < 5; round++) {
    const body = { cardId, amount: 10, randomStr: randomStr() };
    const [ra, rb] = await Promise.all([callA('/api/network/cardTopUp.html', body), callB('/api/network/cardTopUp.html', body)]);
    assert.equal(ra.status, 200, JSON.stringify(ra.body));
    assert.equal(rb.status, 200, JSON.stringify(rb.body));
    assert.equal(ra.body.model.tradeId, rb.body.model.tradeId, 'one effect, replayed to the other');
  }
  const query = await callB('/api/network/cardQuery.html', { cardId, randomStr: randomStr() });
  assert.equal(query.body.model.availableBalance, 50, 'five top-ups, not ten');

  // Rate limits are shared: 6 links through A and 4 through B use up the 10 a minute.
  for (let i = 0; i < 10; i++) {
    const r = await (i % 2 ? callB : callA)('/open/merchant/api/v2', { email: 'shared@example.com' });
    assert.equal(r.status, 200, `link ${i + 1}`);
  }
  const eleventh = await callB('/open/merchant/api/v2', { email: 'shared@example.com' });
  assert.equal(eleventh.status, 429);
  assert.equal(eleventh.body.code, '1009');

  // Callbacks: both instances run a worker; every event is delivered once per attempt.
  const rx = await receiver(t, demo.webhookSecret);
  const cli = spawn(process.execPath, ['bin/cardprogram.js', 'merchant', 'update', demo.appId, '--notify-url', rx.url], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: 'ignore',
  });
  assert.equal(await new Promise((resolve) => cli.once('exit', resolve)), 0);
  const topUps = 30;
  await Promise.all(
    Array.from({ length: topUps }, (_, i) =>
      (i % 2 ? callB : callA)('/api/network/cardTopUp.html', { cardId, amount: 1, randomStr: randomStr() }),
    ),
  );
  await eventually(() => rx.received.filter((r) => r.body.type === 'trade').length >= topUps, 20_000, 'every trade callback');
  await new Promise((r) => setTimeout(r, 300)); // time for a duplicate to show up, if there were one
  const ids = rx.received.filter((r) => r.body.type === 'trade').map((r) => r.body.eventId as string);
  assert.equal(ids.length, topUps);
  assert.equal(new Set(ids).size, topUps, 'no event delivered twice');
  assert.ok(rx.received.every((r) => r.verified));
  const attempts = await db.database.db.selectFrom('callback_attempts').select('event_id').execute();
  assert.equal(attempts.length, topUps, 'one attempt per event');
});

it('serve --processes 2: two processes share the port, serve requests, and stop together', async (t) => {
  const [dialect] = testDialects();
  assert.ok(dialect);
  const db = await isolatedDatabase(dialect);
  const dataDir = mkdtempSync(join(tmpdir(), 'cardprogram-cluster-'));
  t.after(async () => {
    await db.cleanup();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const port = await freePort();
  const child = spawn(process.execPath, ['bin/cardprogram.js', 'serve', '--processes', '2'], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: childDatabaseUrl(db), CARDPROGRAM_DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.after(() => child.kill('SIGKILL'));
  let out = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  child.stderr.on('data', (d) => {
    out += d;
  });
  await eventually(() => (out.match(/"msg":"cardprogram ready"/g) ?? []).length >= 2, 30_000, 'two ready processes');
  const pids = new Set([...out.matchAll(/"pid":(\d+)[^\n]*"msg":"cardprogram ready"/g)].map((m) => m[1]));
  assert.equal(pids.size, 2, out);
  const demo = JSON.parse(readFileSync(join(dataDir, 'demo-merchant.json'), 'utf8'));
  const call = client(`http://127.0.0.1:${port}`, demo);
  const results = await Promise.all(
    Array.from({ length: 20 }, () =>
      call('/api/network/holderCreate.html', holderBody({ idno: `C${randomStr().slice(0, 8).toUpperCase()}` })),
    ),
  );
  assert.ok(
    results.every((r) => r.status === 200),
    JSON.stringify(results.find((r) => r.status !== 200)?.body),
  );
  const merchants = await db.database.db.selectFrom('merchants').select('id').execute();
  assert.equal(merchants.length, 1, 'one demo merchant, made by the primary');
  child.kill('SIGTERM');
  assert.equal(await stopped(child), 0);
});
