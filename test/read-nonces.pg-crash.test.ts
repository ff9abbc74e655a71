import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import pg from 'pg';
import { hmacSign, signingString } from '../src/http/signing.js';
import { WATERMARK_REFUSAL } from '../src/idempotency/read-nonces.js';
import { randomStr } from './helpers/app.js';
import { dialectSkip } from './helpers/db.js';
import { freePort, killAll, startService } from './helpers/service.js';

// Issue 31: PostgreSQL's own crash, for real. A backend killed with SIGKILL makes the postmaster
// reinitialise: crash recovery, which empties every unlogged table (the read nonces and their
// sentinel) while pg_postmaster_start_time() stays what it was (so that time could not serve as the
// watermark). A private PostgreSQL cluster of this test's own (initdb in a temporary directory): the
// shared test server is never crashed.

const BIN = existsSync('/usr/lib/postgresql')
  ? readdirSync('/usr/lib/postgresql')
      .map((v) => join('/usr/lib/postgresql', v, 'bin'))
      .find((d) => existsSync(join(d, 'initdb')))
  : undefined;
const root = userInfo().uid === 0;
// initdb refuses to run as root: then as the postgres user.
const asOwner = (cmd: string, args: string[]) =>
  root ? execFileSync('su', ['postgres', '-c', [cmd, ...args].map((a) => `'${a}'`).join(' ')]) : execFileSync(cmd, args);

// In the PostgreSQL pass only (it needs no shared server, but once is enough).
const skip = BIN === undefined ? 'no PostgreSQL server binaries (initdb) on this machine' : dialectSkip('postgres');

it('after PostgreSQL’s crash recovery, a read spent or signed before it is 1007, one signed after is served', { skip }, async (t) => {
  const bin = BIN as string;
  const dir = mkdtempSync(join(tmpdir(), 'cardprogram-pgcrash-'));
  if (root)
    chownSync(dir, Number(execFileSync('id', ['-u', 'postgres']).toString()), Number(execFileSync('id', ['-g', 'postgres']).toString()));
  const port = await freePort();
  const data = join(dir, 'data');
  asOwner(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres']);
  asOwner(join(bin, 'pg_ctl'), [
    '-D',
    data,
    '-o',
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c shared_buffers=16MB`,
    '-l',
    join(dir, 'log'),
    'start',
    '-w',
  ]);
  const children: Parameters<typeof killAll>[0] = [];
  t.after(async () => {
    await killAll(children);
    asOwner(join(bin, 'pg_ctl'), ['-D', data, 'stop', '-m', 'immediate']);
    rmSync(dir, { recursive: true, force: true });
  });
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const dataDir = join(dir, 'service');
  const service = await startService({
    DATABASE_URL: url,
    CARDPROGRAM_DATA_DIR: dataDir,
    CARDPROGRAM_REQUIRE_TIMESTAMP: 'on',
    CARDPROGRAM_WORKER: 'off',
  });
  children.push(service.child);
  const demo = JSON.parse(readFileSync(join(dataDir, 'demo-merchant.json'), 'utf8')) as { appId: string; secret: string };
  const signed = () => {
    const body: Record<string, unknown> = { appId: demo.appId, randomStr: randomStr(), timestamp: Date.now() };
    body.sign = hmacSign(demo.secret, signingString(body));
    return JSON.stringify(body);
  };
  const post = async (body: string) => {
    const res = await fetch(`${service.url}/api/network/merchantBalance.html`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    return { status: res.status, ...((await res.json()) as { code: string; msg: string }) };
  };

  const used = signed();
  assert.equal((await post(used)).code, '0');
  assert.equal((await post(used)).code, '1008');
  const pending = signed();
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  admin.on('error', () => undefined);
  const started = (await admin.query('select pg_postmaster_start_time()::text as t')).rows[0].t;
  const { rows } = await admin.query(
    `select pid from pg_stat_activity where backend_type = 'client backend' and pid <> pg_backend_pid() limit 1`,
  );
  const pid = rows[0]?.pid ?? (await admin.query('select pg_backend_pid() as pid')).rows[0].pid;
  await new Promise((resolve) => setTimeout(resolve, 5)); // the recovery is at a later millisecond than these were signed
  process.kill(pid, 'SIGKILL');

  // Back after recovery: the unlogged tables are empty, the postmaster's start time unchanged.
  let after: pg.Client | null = null;
  for (let i = 0; i < 100 && after === null; i++) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const c = new pg.Client({ connectionString: url });
    try {
      await c.connect();
      after = c;
    } catch {
      await c.end().catch(() => undefined);
    }
  }
  assert.ok(after, 'PostgreSQL came back');
  t.after(() => after?.end());
  const state = (
    await after.query(
      'select (select count(*)::int from read_nonces) as nonces, (select count(*)::int from read_nonce_store) as sentinels, pg_postmaster_start_time()::text as started',
    )
  ).rows[0];
  assert.deepEqual(state, { nonces: 0, sentinels: 0, started });

  // A connection of the service's pool that the crash cut may answer 503 once; then the store answers.
  const settled = async (body: string) => {
    let res = await post(body);
    for (let i = 0; i < 10 && res.status === 503; i++) res = await post(body);
    return res;
  };
  for (const body of [used, pending]) {
    const res = await settled(body);
    assert.equal(res.code, '1007', JSON.stringify(res));
    assert.ok(res.msg.startsWith(WATERMARK_REFUSAL), res.msg);
  }
  assert.equal((await settled(signed())).code, '0', 'a read signed after is served');
});
