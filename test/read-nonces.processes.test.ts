import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { it, type TestContext } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { hmacSign, signingString } from '../src/http/signing.js';
import { WATERMARK_REFUSAL } from '../src/idempotency/read-nonces.js';
import { readNonceFile } from '../src/idempotency/read-nonces-file.js';
import { randomStr } from './helpers/app.js';
import { ROOT } from './helpers/cli.js';
import type { IsolatedDatabase, isolatedDatabase } from './helpers/db.js';
import { eachDialect } from './helpers/dialects.js';
import { eventually } from './helpers/receiver.js';
import { freePort, startService, stopped } from './helpers/service.js';
import { type Demo, postAlone, timestampedSetUp } from './helpers/timestamped-service.js';

// Issue 31, decision 1, across processes: the read-nonce store after a SIGKILL of the service, and
// shared by the service's processes or instances. A read's randomStr here is kept in the store
// (CARDPROGRAM_REQUIRE_TIMESTAMP=on), not in idempotency_keys.

const BALANCE = '/api/network/merchantBalance.html';

function signed(demo: Demo, timestamp = Date.now()): string {
  const body: Record<string, unknown> = { appId: demo.appId, randomStr: randomStr(), timestamp };
  body.sign = hmacSign(demo.secret, signingString(body));
  return JSON.stringify(body);
}

/** POSTs on a connection of its own (no keep-alive: with several processes, each may take it). */
const post = (base: string, body: string) => postAlone(base, BALANCE, body);

const setUp = (t: TestContext, dialect: Parameters<typeof isolatedDatabase>[0]) => timestampedSetUp(t, dialect, 'nonces');

/** What PostgreSQL's crash recovery does to the store: every unlogged table comes back empty. */
async function emptyLikeCrashRecovery(db: IsolatedDatabase): Promise<void> {
  await sql`truncate read_nonces, read_nonce_store`.execute(db.database.db as unknown as Kysely<unknown>);
}

function refused(res: { status: number; body: Record<string, any> }, code: string, what: string) {
  assert.equal(res.body.code, code, `${what}: ${JSON.stringify(res.body)}`);
}

/** Each body, sent now, is refused by the store's watermark. */
async function beforeTheWatermark(base: string, bodies: Array<[string, string]>) {
  for (const [body, what] of bodies) {
    const res = await post(base, body);
    refused(res, '1007', what);
    assert.ok(String(res.body.msg).startsWith(WATERMARK_REFUSAL), res.body.msg);
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

eachDialect('read nonces across processes (issue 31)', (dialect) => {
  it('after a SIGKILL of the service, a spent read stays refused, and one signed before the store last started empty is 1007', async (t) => {
    const { db, env, children, demo } = await setUp(t, dialect);
    let service = await startService(env);
    children.push(service.child);
    const merchant = demo();
    const used = signed(merchant);
    assert.equal((await post(service.url, used)).status, 200);
    refused(await post(service.url, used), '1008', 'a replay');
    const before = [signed(merchant), signed(merchant)];
    await pause(5); // the restart below is at a later millisecond than these were signed

    const exited = stopped(service.child);
    service.child.kill('SIGKILL');
    await exited;
    service = await startService({ ...env, CARDPROGRAM_DEMO_MERCHANT: 'off' });
    children.push(service.child);

    if (dialect.name === 'sqlite') {
      // Memory: the store started empty with the new process; its watermark refuses what came before.
      await beforeTheWatermark(service.url, [
        [used, 'the spent read'],
        [before[0] as string, 'a read signed before the restart'],
      ]);
    } else {
      // The unlogged table outlives the service's crash: the spent read is still spent, and a read
      // signed before the restart that was never sent is no replay.
      refused(await post(service.url, used), '1008', 'the spent read');
      assert.equal((await post(service.url, before[0] as string)).status, 200);
      // PostgreSQL's own crash empties the store: the next request finds its sentinel gone, and the
      // watermark moves to that moment.
      await pause(5);
      await emptyLikeCrashRecovery(db);
      await beforeTheWatermark(service.url, [
        [used, 'the spent read'],
        [before[1] as string, 'a read signed before the store was emptied'],
      ]);
    }
    assert.equal((await post(service.url, signed(merchant))).status, 200, 'a read signed after is served');
  });

  it('the service’s processes share the store: a read spent on one is refused on the other', async (t) => {
    const { env, children, demo } = await setUp(t, dialect);
    let out = '';
    const bases: string[] = [];
    if (dialect.name === 'sqlite') {
      // SQLite: `serve --processes 2`, which share a read-nonce file beside the database.
      const port = await freePort();
      const child = spawn(process.execPath, ['bin/cardprogram.js', 'serve', '--processes', '2'], {
        cwd: ROOT,
        env: { ...process.env, ...env, PORT: String(port), LOG_LEVEL: 'info' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      child.stdout.on('data', (d) => {
        out += d;
      });
      child.stderr.on('data', (d) => {
        out += d;
      });
      await eventually(() => (out.match(/"msg":"cardprogram ready"/g) ?? []).length >= 2, 30_000, 'two ready processes');
      bases.push(`http://127.0.0.1:${port}`);
    } else {
      // PostgreSQL: two instances on one database.
      for (const e of [env, { ...env, CARDPROGRAM_DEMO_MERCHANT: 'off' }]) {
        const s = await startService({ ...e, LOG_LEVEL: 'info' });
        children.push(s.child);
        bases.push(s.url);
      }
    }
    const merchant = demo();
    const at = (i: number) => bases[i % bases.length] as string;
    for (let round = 0; round < 3; round++) {
      const body = signed(merchant);
      assert.equal((await post(at(0), body)).status, 200);
      // Each on a connection of its own: the cluster hands connections to its processes in turn.
      for (let i = 1; i <= 4; i++) refused(await post(at(i), body), '1008', `replay ${i} of round ${round}`);
    }
    if (dialect.name === 'sqlite') {
      const pids = new Set([...out.matchAll(/"pid":(\d+)[^\n]*merchantBalance[^\n]*"msg":"request completed"/g)].map((m) => m[1]));
      assert.equal(pids.size, 2, `both processes answered:\n${out.slice(-2000)}`);
      assert.ok(existsSync(readNonceFile(env.DATABASE_URL.slice('file:'.length))), 'the shared file beside the database');
    }
  });
});
