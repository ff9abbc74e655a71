import assert from 'node:assert/strict';
import { it } from 'node:test';
import { buildApp } from '../src/app.js';
import { TIMESTAMP_REQUIRED } from '../src/http/auth.js';
import { reapKeys } from '../src/idempotency/keys.js';
import { createMerchant } from '../src/merchants/create.js';
import { runVerb } from '../src/runner.js';
import { build, type Harness, holderBody, randomStr, sign, testConfig } from './helpers/app.js';
import { isolatedDatabase } from './helpers/db.js';
import { eachDialect } from './helpers/dialects.js';
import { testLogging } from './helpers/log-audit.js';

const LINK = '/open/merchant/api/v2';
const CREATE = '/api/network/holderCreate.html';

async function count(h: Harness, table: 'page_links' | 'cardholders' | 'idempotency_keys'): Promise<number> {
  const r = await h.db.database.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

function assertRefused(res: { status: number; body: Record<string, any> }, status: number, code: string, msg?: string | RegExp) {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.code, code, JSON.stringify(res.body));
  assert.equal(res.body.success, false);
  if (typeof msg === 'string') assert.equal(res.body.msg, msg);
  else if (msg) assert.match(res.body.msg, msg);
}

eachDialect('freshness (decisions §11, issue 14.1)', (dialect) => {
  it('production: a replayed 4.4 body is 1008, one older than 5 minutes 1007, one without timestamp 1007, one without randomStr 1002; one link minted', async (t) => {
    const h = await build(t, dialect, { env: 'production' });
    assert.equal(h.config.requireTimestamp, true);
    const email = 'alice@example.com';
    const captured = sign({ email, timestamp: Date.now(), randomStr: randomStr() }, h.merchant);
    const first = await h.call(LINK, captured, { raw: true });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.match(first.body.model.webUrl, /\/page\/open\?token=/);
    const links = await count(h, 'page_links');

    // The captured body sent again: its randomStr is spent.
    assertRefused(await h.call(LINK, captured, { raw: true }), 409, '1008', 'randomStr: already used');
    // Re-signed bodies (a merchant's own mistakes): too old, no timestamp, no randomStr.
    const old = sign({ email, timestamp: Date.now() - 5 * 60_000 - 5_000, randomStr: randomStr() }, h.merchant);
    assertRefused(await h.call(LINK, old, { raw: true }), 401, '1007');
    const undated = sign({ email, randomStr: randomStr() }, h.merchant);
    assertRefused(await h.call(LINK, undated, { raw: true }), 401, '1007', TIMESTAMP_REQUIRED);
    assert.match(TIMESTAMP_REQUIRED, /required.*Unix time in milliseconds.*5 minutes/);
    // The interface's sample body as it is: no timestamp, no randomStr.
    assertRefused(await h.call(LINK, sign({ email }, h.merchant), { raw: true }), 401, '1007', TIMESTAMP_REQUIRED);
    const nonce = sign({ email, timestamp: Date.now() }, h.merchant);
    assertRefused(await h.call(LINK, nonce, { raw: true }), 400, '1002', 'randomStr: is required');
    assertRefused(
      await h.call(LINK, sign({ email, timestamp: Date.now(), randomStr: 'short' }, h.merchant), { raw: true }),
      400,
      '1002',
      /^randomStr: /,
    );
    assert.equal(await count(h, 'page_links'), links, 'no refused request minted a link');
  });

  it('production: every signed operation without a signed timestamp is 1007 before anything is written', async (t) => {
    const h = await build(t, dialect, { env: 'production' });
    await h.app.ready();
    const before = { keys: await count(h, 'idempotency_keys'), holders: await count(h, 'cardholders') };
    assert.ok(h.app.operations.length >= 8);
    for (const op of h.app.operations) {
      // Any body: the timestamp is checked right after the signature, before the schema.
      const res = await h.call(op.url, sign({ randomStr: randomStr(), holderId: 'hld_x', cardId: 'card_x' }, h.merchant), { raw: true });
      assertRefused(res, 401, '1007', TIMESTAMP_REQUIRED);
    }
    // A valid holder creation without timestamp: refused, nothing stored.
    assertRefused(await h.call(CREATE, sign(holderBody(), h.merchant), { raw: true }), 401, '1007');
    // A timestamp that was not signed is no timestamp: the signature fails first.
    const unsigned = { ...sign(holderBody(), h.merchant), timestamp: Date.now() };
    assertRefused(await h.call(CREATE, unsigned, { raw: true }), 401, '1006');
    assert.deepEqual({ keys: await count(h, 'idempotency_keys'), holders: await count(h, 'cardholders') }, before);
    // Signed with one, it works.
    assert.equal((await h.call(CREATE, sign({ ...holderBody(), timestamp: Date.now() }, h.merchant), { raw: true })).status, 200);
  });

  it('production: a captured write whose randomStr was reaped is refused by its old timestamp', async (t) => {
    const db = await isolatedDatabase(dialect);
    let now = Date.now();
    const app = await buildApp(testConfig(db.dataDir, { env: 'production', requireTimestamp: true }), {
      database: db.database,
      ...testLogging(),
      clock: () => now,
    });
    t.after(async () => {
      await app.close();
      await db.cleanup();
    });
    const m = await runVerb(app.svc, createMerchant, { input: { name: 'Shop', signType: 'HMAC-SHA256' }, actor: 'test' });
    const merchant = { appId: m.appId, secret: m.secret ?? '', webhookSecret: m.webhookSecret };
    const post = async (payload: Record<string, unknown>) => {
      const res = await app.inject({ method: 'POST', url: CREATE, payload, headers: { 'content-type': 'application/json' } });
      return { status: res.statusCode, body: res.json() as Record<string, any> };
    };
    const captured = sign({ ...holderBody(), timestamp: now }, merchant);
    assert.equal((await post(captured)).status, 200);
    // Within the window and the retention, the replay gets the first answer (idempotency).
    const replay = await post(captured);
    assert.equal(replay.status, 200);
    // 49 hours later the key is reaped (retention 48 h): only the timestamp still stands in the way.
    now += 49 * 3_600_000;
    assert.ok((await reapKeys(app.svc, now - app.svc.config.idempotencyRetentionMs)) >= 1);
    const holders = await app.svc.database.db.selectFrom('cardholders').select('id').execute();
    assertRefused(await post(captured), 401, '1007', 'timestamp is outside the allowed window of 5 minutes');
    assert.deepEqual(await app.svc.database.db.selectFrom('cardholders').select('id').execute(), holders);
  });

  it('sandbox: the interface’s sample 4.4 body works as written; a sent randomStr is single-use and a sent timestamp checked', async (t) => {
    const h = await build(t, dialect);
    assert.equal(h.config.requireTimestamp, false);
    const sample = sign({ email: 'alice@example.com' }, h.merchant);
    assert.equal((await h.call(LINK, sample, { raw: true })).status, 200);
    assert.equal((await h.call(LINK, sample, { raw: true })).status, 200, 'without randomStr there is nothing to spend');
    const withNonce = sign({ email: 'alice@example.com', randomStr: randomStr() }, h.merchant);
    assert.equal((await h.call(LINK, withNonce, { raw: true })).status, 200);
    assertRefused(await h.call(LINK, withNonce, { raw: true }), 409, '1008', 'randomStr: already used');
    const old = sign({ email: 'alice@example.com', timestamp: Date.now() - 6 * 60_000 }, h.merchant);
    assertRefused(await h.call(LINK, old, { raw: true }), 401, '1007');
  });

  it('CARDPROGRAM_REQUIRE_TIMESTAMP=on in the sandbox requires it there too', async (t) => {
    const h = await build(t, dialect, { requireTimestamp: true });
    assertRefused(await h.call(LINK, sign({ email: 'a@example.com' }, h.merchant), { raw: true }), 401, '1007', TIMESTAMP_REQUIRED);
    assert.equal(
      (await h.call(LINK, { email: 'a@example.com', randomStr: randomStr() })).status,
      200,
      'the harness signs one, as the SDK does',
    );
  });
});
