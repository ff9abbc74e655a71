import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { it, type TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.js';
import type { RateLimit } from '../src/config.js';
import { type Database, openDatabase } from '../src/db/index.js';
import { migrateToLatest } from '../src/db/migrate.js';
import type { DomainError } from '../src/errors.js';
import { RateLimiter } from '../src/http/rate-limit.js';
import { createMerchant } from '../src/merchants/create.js';
import { updateMerchant } from '../src/merchants/manage.js';
import { runVerb } from '../src/runner.js';
import { holderBody, randomStr, sign, type TestMerchant, testConfig } from './helpers/app.js';
import { type IsolatedDatabase, isolatedDatabase } from './helpers/db.js';
import { eachDialect } from './helpers/dialects.js';
import { testLogging } from './helpers/log-audit.js';

const masterKey = randomBytes(32);

/** One service instance over `db`, with its own connection and its own clock. */
async function instance(t: TestContext, db: IsolatedDatabase, rateLimit: RateLimit, clock: () => number): Promise<FastifyInstance> {
  const database = openDatabase(db.url, db.pgSchema ? { pgSchema: db.pgSchema } : {});
  const app = await buildApp(testConfig(db.dataDir, { rateLimit, masterKey }), { database, ...testLogging(), clock });
  t.after(async () => {
    await app.close();
    await database.close();
  });
  return app;
}

async function merchant(app: FastifyInstance): Promise<TestMerchant> {
  const m = await runVerb(app.svc, createMerchant, { input: { name: 'Rate test', signType: 'HMAC-SHA256' }, actor: 'test' });
  return { appId: m.appId, secret: m.secret ?? '', webhookSecret: m.webhookSecret };
}

async function createHolder(app: FastifyInstance, m: TestMerchant, opts: { badSign?: boolean } = {}) {
  const body = sign(holderBody({ randomStr: randomStr() }), m);
  if (opts.badSign) body.sign = sign(holderBody(), { ...m, secret: 'sk_test_wrong' }).sign;
  const res = await app.inject({ method: 'POST', url: '/api/network/holderCreate.html', payload: body });
  return { status: res.statusCode, body: res.json(), retryAfter: res.headers['retry-after'] };
}

async function holders(db: IsolatedDatabase): Promise<number> {
  const r = await db.database.db
    .selectFrom('cardholders')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

eachDialect('per-merchant rate limit (1009, decisions §5)', (dialect) => {
  it('past the burst: 429 with 1009, Retry-After and nothing written; tokens come back with time; each merchant has its own', async (t) => {
    const db = await isolatedDatabase(dialect);
    t.after(() => db.cleanup());
    let now = Date.UTC(2026, 10, 22, 12);
    const app = await instance(t, db, { perSecond: 2, burst: 4 }, () => now);
    const [a, b] = [await merchant(app), await merchant(app)];

    for (let i = 0; i < 4; i++) assert.equal((await createHolder(app, a)).status, 200);
    const refused = await createHolder(app, a);
    assert.equal(refused.status, 429);
    assert.equal(refused.retryAfter, '1');
    assert.deepEqual(
      { code: refused.body.code, success: refused.body.success, error: refused.body.error, model: refused.body.model },
      { code: '1009', success: false, error: true, model: null },
    );
    assert.match(refused.body.msg, /at most 2 requests a second \(bursts of 4\); retry after 1 s/);
    assert.equal(refused.body.errMsg, refused.body.msg);
    assert.equal(await holders(db), 4, 'the refused request wrote nothing');

    // Another merchant is not affected, and requests failing the signature do not spend its budget.
    for (let i = 0; i < 10; i++) assert.equal((await createHolder(app, b, { badSign: true })).status, 401);
    for (let i = 0; i < 4; i++) assert.equal((await createHolder(app, b)).status, 200, `merchant b, request ${i + 1}`);
    assert.equal((await createHolder(app, b)).status, 429);

    // Half a second later one token is back (2 a second), a whole second later two.
    now += 500;
    assert.equal((await createHolder(app, a)).status, 200);
    assert.equal((await createHolder(app, a)).status, 429);
    now += 1000;
    assert.equal((await createHolder(app, a)).status, 200);
    assert.equal((await createHolder(app, a)).status, 200);
    assert.equal((await createHolder(app, a)).status, 429);
    assert.equal(await holders(db), 4 + 4 + 3);
  });

  it("a merchant's own limit overrides the default, and back", async (t) => {
    const db = await isolatedDatabase(dialect);
    t.after(() => db.cleanup());
    let now = Date.UTC(2026, 10, 22, 12);
    const app = await instance(t, db, { perSecond: 1000, burst: 1000 }, () => now);
    const a = await merchant(app);
    await runVerb(app.svc, updateMerchant, { input: { appId: a.appId, rateLimit: 1 }, actor: 'test' });
    // Its own rate of 1 a second allows bursts of 2.
    assert.equal((await createHolder(app, a)).status, 200);
    assert.equal((await createHolder(app, a)).status, 200);
    const refused = await createHolder(app, a);
    assert.equal(refused.status, 429);
    assert.match(refused.body.msg, /at most 1 requests a second \(bursts of 2\)/);
    // Back to the default: the bucket keeps its (empty) level, capped by the new burst, and refills
    // at the new rate: 10 ms at 1000 a second is 10 tokens.
    await runVerb(app.svc, updateMerchant, { input: { appId: a.appId, rateLimit: null }, actor: 'test' });
    assert.equal((await createHolder(app, a)).status, 429);
    now += 10;
    for (let i = 0; i < 10; i++) assert.equal((await createHolder(app, a)).status, 200);
    assert.equal((await createHolder(app, a)).status, 429);
    await assert.rejects(
      runVerb(app.svc, updateMerchant, { input: { appId: a.appId, rateLimit: 0 }, actor: 'test' }),
      /rateLimit: must be a whole number/,
    );
  });

  it('two instances on one database share one budget: together they admit exactly the burst', async (t) => {
    const db = await isolatedDatabase(dialect);
    t.after(() => db.cleanup());
    // The clock stands still: no token comes back during the test, so the burst is all there is.
    const now = Date.UTC(2026, 10, 22, 12);
    const limit = { perSecond: 1, burst: 40 };
    const first = await instance(t, db, limit, () => now);
    const second = await instance(t, db, limit, () => now);
    const a = await merchant(first);
    const replies = await Promise.all(Array.from({ length: 100 }, (_, i) => createHolder(i % 2 ? first : second, a)));
    const statuses = replies.map((r) => r.status);
    assert.deepEqual(
      { ok: statuses.filter((s) => s === 200).length, limited: statuses.filter((s) => s === 429).length },
      { ok: 40, limited: 60 },
    );
    assert.equal(await holders(db), 40);
  });
});

/** The limiter alone on a real database, with a clock the test moves and its leases counted. */
async function limiterOn(t: TestContext, dialect: Parameters<typeof isolatedDatabase>[0], opts: { leaseTakesMs?: number } = {}) {
  const db = await isolatedDatabase(dialect);
  t.after(() => db.cleanup());
  await migrateToLatest(db.database);
  const clock = { now: Date.UTC(2026, 10, 22, 12) };
  let leases = 0;
  const counted: Database = {
    ...db.database,
    withTx: (fn, o) => {
      leases++;
      // A slow database: the clock moves while the lease is taken.
      clock.now += opts.leaseTakesMs ?? 0;
      return db.database.withTx(fn, o);
    },
  };
  const make = (skewMs = 0) =>
    new RateLimiter(
      counted,
      () => clock.now + skewMs,
      () => clock.now,
    );
  const tryTake = (limiter: RateLimiter, limit: RateLimit) =>
    limiter.take('mch_test', limit).then(
      () => true,
      (err: DomainError) => {
        assert.equal(err.code, '1009');
        return false;
      },
    );
  return { clock, make, tryTake, leases: () => leases };
}

eachDialect('rate limiter: slow databases, changing limits, clocks', (dialect) => {
  it('a lease slower than a lease lasts still admits the request, with one transaction', async (t) => {
    const l = await limiterOn(t, dialect, { leaseTakesMs: 1500 });
    const limiter = l.make();
    assert.equal(await l.tryTake(limiter, { perSecond: 10, burst: 20 }), true);
    assert.equal(l.leases(), 1);
  });

  it('instances that disagree on the burst (a limit being changed) admit no more than the larger burst', async (t) => {
    const l = await limiterOn(t, dialect);
    const [small, large] = [l.make(), l.make()];
    let admitted = 0;
    for (let i = 0; i < 200; i++) {
      if (await l.tryTake(i % 2 ? small : large, i % 2 ? { perSecond: 1, burst: 10 } : { perSecond: 1, burst: 40 })) admitted++;
    }
    assert.ok(admitted >= 10 && admitted <= 40, `admitted ${admitted}`);
  });

  it('a clock far ahead on one instance does not lock the merchant out on the others', async (t) => {
    const l = await limiterOn(t, dialect);
    const ahead = l.make(3_600_000);
    const right = l.make();
    const limit = { perSecond: 2, burst: 4 };
    for (let i = 0; i < 4; i++) assert.equal(await l.tryTake(ahead, limit), true);
    assert.equal(await l.tryTake(right, limit), false);
    l.clock.now += 1000;
    assert.equal(await l.tryTake(right, limit), true, 'a second later the right clock gets tokens again, not an hour later');
  });

  it('a merchant held at its limit costs a database write per batch of requests, not per request', async (t) => {
    const l = await limiterOn(t, dialect);
    const limiter = l.make();
    const limit = { perSecond: 100, burst: 200 };
    // Spend the burst, then send 1,000 a second for two seconds: ten times the rate.
    while (await l.tryTake(limiter, limit));
    const before = l.leases();
    let admitted = 0;
    for (let i = 0; i < 2000; i++) {
      l.clock.now += 1;
      if (await l.tryTake(limiter, limit)) admitted++;
    }
    const leases = l.leases() - before;
    assert.ok(admitted >= 180 && admitted <= 202, `admitted ${admitted} in 2 s at 100 a second`);
    assert.ok(leases * 5 <= admitted, `${leases} lease transactions for ${admitted} admitted requests`);
  });
});
