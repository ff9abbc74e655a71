import assert from 'node:assert/strict';
import type { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { hmacSign, signingString } from '../src/http/signing.js';
import { holderBody, randomStr } from './helpers/app.js';
import { childDatabaseUrl } from './helpers/cli.js';
import { isolatedDatabase } from './helpers/db.js';
import { eachDialect } from './helpers/dialects.js';
import { killAll, startService, stopped } from './helpers/service.js';

// Issue 31, attack review: a captured write (cardholder creation, its key claimed in the verb's own
// statement) replayed after a SIGKILL of the service answers its stored answer, with one cardholder;
// a captured read replayed after the restart is refused (1007, the memory store's watermark, or
// 1008, PostgreSQL's unlogged store outliving the service).

const CREATE = '/api/network/holderCreate.html';
const BALANCE = '/api/network/merchantBalance.html';

function signed(demo: { appId: string; secret: string }, fields: Record<string, unknown>): string {
  const body: Record<string, unknown> = { ...fields, appId: demo.appId, randomStr: randomStr(), timestamp: Date.now() };
  body.sign = hmacSign(demo.secret, signingString(body));
  return JSON.stringify(body);
}

function post(base: string, path: string, body: string): Promise<{ status: number; body: Record<string, any> }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (d) => {
        text += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

eachDialect('captured requests replayed after a SIGKILL of the service (issue 31, attack pass)', (dialect) => {
  it('the cardholder creation replays its stored answer, once; the read is refused', async (t) => {
    const db = await isolatedDatabase(dialect);
    const dataDir = mkdtempSync(join(tmpdir(), 'cardprogram-replay-restart-'));
    const children: Array<ReturnType<typeof spawn>> = [];
    t.after(async () => {
      await killAll(children);
      await db.cleanup();
      rmSync(dataDir, { recursive: true, force: true });
    });
    const env = {
      DATABASE_URL: childDatabaseUrl(db),
      CARDPROGRAM_DATA_DIR: dataDir,
      CARDPROGRAM_REQUIRE_TIMESTAMP: 'on',
      CARDPROGRAM_WORKER: 'off',
    };
    let service = await startService(env);
    children.push(service.child);
    const demo = JSON.parse(readFileSync(join(dataDir, 'demo-merchant.json'), 'utf8')) as { appId: string; secret: string };
    const create = signed(demo, holderBody());
    const read = signed(demo, {});
    const first = await post(service.url, CREATE, create);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal((await post(service.url, BALANCE, read)).status, 200);
    await new Promise((r) => setTimeout(r, 5));

    const exited = stopped(service.child);
    service.child.kill('SIGKILL');
    await exited;
    service = await startService({ ...env, CARDPROGRAM_DEMO_MERCHANT: 'off' });
    children.push(service.child);

    for (let i = 0; i < 2; i++) {
      const again = await post(service.url, CREATE, create);
      assert.equal(again.status, 200, JSON.stringify(again.body));
      assert.equal(again.body.holderId, first.body.holderId);
      assert.deepEqual({ ...again.body, traceId: null }, { ...first.body, traceId: null });
    }
    const holders = await db.database.db
      .selectFrom('cardholders')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('merchant_id', '=', demo.appId)
      .executeTakeFirstOrThrow();
    assert.equal(Number(holders.n), 1);
    const replayed = await post(service.url, BALANCE, read);
    assert.equal(replayed.body.code, dialect.name === 'postgres' ? '1008' : '1007', JSON.stringify(replayed.body));
  });
});
