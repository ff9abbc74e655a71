import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { openDatabase } from '../../src/db/index.js';
import { sendTspCalls } from '../../src/tokens/tsp-calls.js';
import { build, type Harness, randomStr, sign } from '../helpers/app.js';
import { fundedCard } from '../helpers/cards.js';
import { eachDialect } from '../helpers/dialects.js';
import { seedToken } from '../helpers/tokens.js';
import { flushTsp, tspSimulator } from '../helpers/tsp.js';

/*
 * Two instances of the service on one database (decisions §10; a SQLite file shared by two
 * processes' connections, or one PostgreSQL schema): a token's change made through one is what the
 * other answers, and each call to the TSP is sent once, whichever instance's sender claims it.
 */

async function call(app: FastifyInstance, h: Harness, path: string, body: Record<string, unknown>) {
  const res = await app.inject({
    method: 'POST',
    url: path,
    payload: sign({ ...body, randomStr: randomStr() }, h.merchant, { timestamp: h.config.requireTimestamp }),
    headers: { 'content-type': 'application/json' },
  });
  const json = res.json();
  assert.equal(res.statusCode, 200, `${path} ${JSON.stringify(json)}`);
  return json.model;
}

eachDialect('tokens on two instances', (dialect) => {
  it('a change through one instance is seen by the other, and each TSP call is sent once though both senders run at once', async (t) => {
    const tsp = await tspSimulator(t);
    const h = await build(t, dialect, { tspClient: { url: tsp.url, cert: null, key: null } });
    // The second instance: its own connections to the same database, its own app (and sender, lease owner, caches).
    const database = openDatabase(h.db.url, h.db.pgSchema ? { pgSchema: h.db.pgSchema } : {});
    const b = await buildApp(h.config, { database });
    t.after(async () => {
      await b.close();
      await database.close();
    });
    const a = h.app;

    const { cardId } = await fundedCard(h);
    const tokens = [];
    for (let i = 0; i < 6; i++) tokens.push(await seedToken(a.svc, { cardId }));

    await call(a, h, '/api/network/cardFreeze.html', { cardId });
    for (const { tokenId } of tokens) assert.equal((await call(b, h, '/api/network/tokenQuery.html', { tokenId })).status, 'suspended');
    const [first] = tokens;
    assert.ok(first);
    await call(b, h, '/api/network/tokenDelete.html', { tokenId: first.tokenId, reason: 'removed' });
    assert.equal((await call(a, h, '/api/network/tokenQuery.html', { tokenId: first.tokenId })).status, 'deleted');
    const listed = await call(a, h, '/api/network/tokenList.html', { cardId, start: 0, status: 'suspended' });
    assert.equal(listed.total, 5);

    // Both senders at once, a few passes each: 6 suspends, then the delete (after its token's suspend).
    for (let round = 0; round < 4; round++) await Promise.all([sendTspCalls(a.svc), sendTspCalls(b.svc), sendTspCalls(a.svc)]);
    // And whatever the instances' own timers (the reaper's, every second) have under way.
    await Promise.all([flushTsp(a.svc), flushTsp(b.svc)]);
    const byKey = new Map<string, number>();
    for (const c of tsp.calls) byKey.set(c.idempotencyKey ?? '', (byKey.get(c.idempotencyKey ?? '') ?? 0) + 1);
    assert.equal(tsp.calls.length, 7, JSON.stringify(tsp.calls.map((c) => [c.action, c.idempotencyKey])));
    assert.ok(
      [...byKey.values()].every((n) => n === 1),
      'no call sent twice',
    );
    const calls = await h.db.database.db.selectFrom('tsp_calls').select(['status', 'attempts']).execute();
    assert.deepEqual(
      calls.map((c) => [c.status, Number(c.attempts)]),
      calls.map(() => ['done', 1]),
    );
    const attempts = await h.db.database.db.selectFrom('tsp_call_attempts').select(['call_id']).execute();
    assert.equal(attempts.length, 7);
    assert.deepEqual(
      tsp.calls.filter((c) => c.tokenReferenceId === first.tokenReferenceId).map((c) => c.action),
      ['suspend', 'delete'],
    );
  });
});
