import assert from 'node:assert/strict';
import { it } from 'node:test';
import { hmacSign, signingString } from '../src/http/signing.js';
import { holderBody, randomStr } from './helpers/app.js';
import { eachDialect } from './helpers/dialects.js';
import { startService, stopped } from './helpers/service.js';
import { postAlone, timestampedSetUp } from './helpers/timestamped-service.js';

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

const post = postAlone;

eachDialect('captured requests replayed after a SIGKILL of the service (issue 31, attack pass)', (dialect) => {
  it('the cardholder creation replays its stored answer, once; the read is refused', async (t) => {
    const { db, env, children, demo: demoOf } = await timestampedSetUp(t, dialect, 'replay-restart');
    let service = await startService(env);
    children.push(service.child);
    const demo = demoOf();
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
