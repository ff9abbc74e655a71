import assert from 'node:assert/strict';
import { it } from 'node:test';
import { emitEvent } from '../src/callbacks/outbox.js';
import { CallbackWorker } from '../src/callbacks/worker.js';
import { serve } from '../src/server.js';
import { build, type Harness, randomStr, testConfig } from './helpers/app.js';
import { fundedCard } from './helpers/cards.js';
import { childDatabaseUrl } from './helpers/cli.js';
import { isolatedDatabase } from './helpers/db.js';
import { eachDialect } from './helpers/dialects.js';
import { receiver } from './helpers/receiver.js';

// Issue 17, monitoring: GET /metrics in Prometheus' text format (behind a token, or on a port of
// its own) and GET /readyz, through the real app on both databases.

const TOKEN = 'metrics-token-0123456789abcdef';
const scrape = (h: Harness, auth?: string) =>
  h.app.inject({ method: 'GET', url: '/metrics', headers: auth ? { authorization: auth } : {} });

/** The value of one sample line of the text format, e.g. value(text, 'x_total{a="b"}'). */
function value(text: string, sample: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
  return line === undefined ? undefined : Number(line.slice(sample.length + 1));
}

eachDialect('metrics and readiness', (dialect) => {
  it('after traffic: requests by operation and code, authorizations by decision, deliveries, transactions, the runtime', async (t) => {
    const h = await build(t, dialect, { metricsToken: TOKEN });
    const rx = await receiver(t, h.merchant.webhookSecret);
    await h.db.database.db.updateTable('merchants').set({ notify_url: rx.url }).execute();
    const { cardId } = await fundedCard(h, { topUp: 10 });
    await h.call('/sandbox/network/authorize', { cardId, amount: 4, randomStr: randomStr() });
    const declined = await h.call('/sandbox/network/authorize', { cardId, amount: 40, randomStr: randomStr() });
    assert.equal(declined.body.code, '2725');
    // A replayed decline is not a second decision.
    await h.call('/sandbox/network/authorize', { cardId, amount: 40, randomStr: randomStr() });
    await h.call('/api/network/cardQuery.html', { cardId: 'card_nope', randomStr: randomStr() });
    const worker = new CallbackWorker(h.app.svc);
    while ((await worker.pass()) > 0);

    const res = await scrape(h, `Bearer ${TOKEN}`);
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    const text = res.body;
    assert.equal(value(text, 'cardprogram_http_requests_total{operation="sandboxAuthorize",code="0",status="200"}'), 1);
    assert.equal(value(text, 'cardprogram_http_requests_total{operation="sandboxAuthorize",code="2725",status="409"}'), 2);
    assert.equal(value(text, 'cardprogram_http_requests_total{operation="cardQuery",code="2648",status="404"}'), 1);
    assert.equal(value(text, 'cardprogram_authorizations_total{decision="approved",reason=""}'), 1);
    assert.equal(value(text, 'cardprogram_authorizations_total{decision="declined",reason="insufficient_funds"}'), 2);
    assert.ok((value(text, 'cardprogram_callback_deliveries_total{outcome="delivered"}') ?? 0) >= 3, 'top-up, authorization, decline');
    assert.equal(value(text, 'cardprogram_callback_queue_oldest_seconds'), 0, 'nothing left to deliver');
    assert.ok((value(text, 'cardprogram_db_transaction_duration_seconds_count') ?? 0) > 5);
    assert.ok((value(text, 'cardprogram_http_request_duration_seconds_count{operation="sandboxAuthorize"}') ?? 0) === 3);
    assert.match(text, /^cardprogram_nodejs_eventloop_lag_seconds \d/m);
    if (dialect.name === 'sqlite') assert.ok((value(text, 'cardprogram_sqlite_group_commit_size_count') ?? 0) > 5);
    else {
      assert.ok((value(text, 'cardprogram_db_pool_connections') ?? 0) >= 1);
      // Idle between requests: nobody waits for a connection, whatever the scrape itself reads (issue 30.11).
      for (let i = 0; i < 3; i++) {
        const again = (await scrape(h, `Bearer ${TOKEN}`)).body;
        assert.equal(value(again, 'cardprogram_db_pool_waiting'), 0, again);
        assert.ok((value(again, 'cardprogram_db_pool_idle') ?? 0) >= 1);
      }
    }
    // No card number (the sandbox BIN), secret or e-mail in what a scraper reads.
    // No card, cardholder or merchant id (the wallet `card_on_file` is a label value, not a card's id).
    assert.doesNotMatch(text, /424242|sk_test_|whsec_|@example\.com|card_(?!on_file)|hld_|mch_/);
  });

  it('callbacks per merchant: queue depth and open breakers, the labels capped at ten merchants and other', async (t) => {
    const h = await build(t, dialect, {
      metricsToken: TOKEN,
      callbacks: {
        worker: false,
        retryScheduleMs: [60_000],
        maxAgeMs: 3_600_000,
        timeoutMs: 2000,
        pollMs: 20,
        breaker: { failures: 1, openMs: 60_000 },
      },
    });
    const merchants = [h.merchant];
    for (let i = 0; i < 11; i++) merchants.push(await h.newMerchant());
    // Merchant i has i + 1 events for a receiver that refuses connections.
    await h.db.database.withTx(async (tx) => {
      for (const [i, m] of merchants.entries()) {
        for (let j = 0; j <= i; j++) {
          await emitEvent(tx, {
            merchantId: m.appId,
            type: 'holder.audit',
            subject: `h${i}`,
            url: 'http://127.0.0.1:9/hooks',
            body: {},
            now: Date.now(),
          });
        }
      }
    });
    await new CallbackWorker(h.app.svc).pass();
    const text = (await scrape(h, `Bearer ${TOKEN}`)).body;
    const samples = (name: string) => text.split('\n').filter((l) => l.startsWith(`${name}{`));
    const depth = samples('cardprogram_callback_queue_depth');
    assert.equal(depth.length, 11, 'ten merchants and other');
    assert.equal(value(text, `cardprogram_callback_queue_depth{merchant="${merchants[11]?.appId}"}`), 12);
    assert.equal(value(text, 'cardprogram_callback_queue_depth{merchant="other"}'), 1 + 2, 'the two smallest queues');
    const open = samples('cardprogram_callback_endpoint_open');
    assert.equal(open.length, 11);
    assert.equal(value(text, 'cardprogram_callback_endpoint_open{merchant="other"}'), 2);
    assert.equal(
      open.reduce((sum, l) => sum + Number(l.split(' ')[1]), 0),
      12,
      'one open breaker per merchant',
    );
  });

  it('/metrics needs its bearer token (401 without, or with another); without a token configured it is not there', async (t) => {
    const h = await build(t, dialect, { metricsToken: TOKEN });
    for (const auth of [undefined, `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, TOKEN, `Basic ${TOKEN}`]) {
      const res = await scrape(h, auth);
      assert.equal(res.statusCode, 401, String(auth));
      assert.doesNotMatch(res.body, /cardprogram_/);
    }
    // Refusals are counted, without the "0" of a success (issue 30.11).
    const text = (await scrape(h, `Bearer ${TOKEN}`)).body;
    assert.equal(value(text, 'cardprogram_http_requests_total{operation="other",code="none",status="401"}'), 5);
    assert.doesNotMatch(text, /code="0",status="401"/);
    const off = await build(t, dialect);
    const res = await scrape(off, `Bearer ${TOKEN}`);
    assert.deepEqual([res.statusCode, res.json().code], [404, '1004']);
  });

  it('/readyz: 200 when the database answers and every migration is applied; 503 with a pending one', async (t) => {
    const h = await build(t, dialect);
    const ready = await h.app.inject({ method: 'GET', url: '/readyz' });
    assert.deepEqual([ready.statusCode, ready.json().status], [200, 'ready']);
    await h.db.database.db
      .deleteFrom('cardprogram_migrations' as never)
      .where('name' as never, '=', '2026_11_24_0011_controls_and_endpoint' as never)
      .execute();
    const pending = await h.app.inject({ method: 'GET', url: '/readyz' });
    assert.deepEqual([pending.statusCode, pending.json().status], [503, 'migrations pending']);
  });

  it('CARDPROGRAM_METRICS_PORT: a listener of its own that serves /metrics without a token, and nothing else', async (t) => {
    const db = await isolatedDatabase(dialect);
    const config = testConfig(db.dataDir, { databaseUrl: childDatabaseUrl(db), metricsPort: 0, logLevel: 'silent' });
    const running = await serve({ ...config, port: 0 }, { handleSignals: false });
    t.after(async () => {
      await running.stop();
      await db.cleanup();
    });
    assert.ok(running.metricsPort);
    const base = `http://127.0.0.1:${running.metricsPort}`;
    const res = await fetch(`${base}/metrics`);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /^# HELP cardprogram_http_requests_total/m);
    assert.equal((await fetch(`${base}/healthz`)).status, 404);
    assert.equal((await fetch(`${running.url}/metrics`)).status, 404, 'not on the main listener without a token');
  });
});
