import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { healthy } from '../src/callbacks/breaker.js';
import { emitEvent } from '../src/callbacks/outbox.js';
import { CallbackWorker } from '../src/callbacks/worker.js';
import type { Harness } from './helpers/app.js';
import { build } from './helpers/app.js';
import { eachDialect } from './helpers/dialects.js';
import { eventually } from './helpers/receiver.js';

/** Issue 46: a slow answer is not health. The breaker counts 5xx and slow refusals as it counts silence. */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A receiver whose answer (status, after how long) the test sets, and may change; counts requests. */
async function scripted(t: { after(fn: () => unknown): void }, answer: { status: number; afterMs: number }) {
  let requests = 0;
  const now = { ...answer };
  const server = http.createServer((req, res) => {
    requests++;
    req.resume();
    const timer = setTimeout(() => res.writeHead(now.status).end(), now.afterMs);
    res.on('close', () => clearTimeout(timer));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    requests: () => requests,
    answer: (a: { status: number; afterMs: number }) => Object.assign(now, a),
  };
}

async function queue(h: Harness, merchantId: string, url: string, n: number): Promise<void> {
  await h.db.database.withTx(async (tx) => {
    for (let i = 0; i < n; i++)
      await emitEvent(tx, { merchantId, type: 'holder.audit', subject: `s:${url}:${i}`, url, body: { i }, now: Date.now() });
  });
}

const breakerOf = (h: Harness, merchantId: string) =>
  h.db.database.db.selectFrom('callback_endpoints').selectAll().where('merchant_id', '=', merchantId).executeTakeFirst();

describe('the breaker’s rule of health', () => {
  it('a 2xx is well however slow; a 5xx never; another answer only when quick; no answer never', () => {
    const slowMs = 500;
    assert.equal(healthy({ status: 200, durationMs: 5 }, slowMs), true);
    assert.equal(healthy({ status: 204, durationMs: 900 }, slowMs), true, 'delivered: slow, but delivered');
    assert.equal(healthy({ status: 404, durationMs: 5 }, slowMs), true, 'a quick refusal: the receiver is there');
    assert.equal(healthy({ status: 404, durationMs: 500 }, slowMs), false, 'a slow refusal holds a slot and delivers nothing');
    assert.equal(healthy({ status: 500, durationMs: 5 }, slowMs), false);
    assert.equal(healthy({ status: 503, durationMs: 900 }, slowMs), false);
    assert.equal(healthy({ status: null, durationMs: 1000 }, slowMs), false);
  });
});

eachDialect('callbacks: the breaker counts slow failures (issue 46)', (dialect) => {
  it('an endpoint answering 500 just before the timeout opens its breaker: its events wait, the time it held is counted, and it closes once it answers well', async (t) => {
    // Timeout 1 s: the breaker's slow threshold is half of it.
    const h = await build(t, dialect, {
      callbacks: {
        worker: false,
        retryScheduleMs: [100],
        maxAgeMs: 60_000,
        timeoutMs: 1000,
        pollMs: 20,
        slots: 8,
        breaker: { failures: 3, openMs: 400, maxOpenMs: 800 },
      },
    });
    const rx = await scripted(t, { status: 500, afterMs: 800 });
    const m = await h.newMerchant();
    await queue(h, m.appId, rx.url, 40);
    const worker = new CallbackWorker(h.app.svc);
    worker.start();
    t.after(() => worker.stop());
    await eventually(async () => (await breakerOf(h, m.appId))?.state === 'open', 10_000, 'the breaker open');
    const open = await breakerOf(h, m.appId);
    assert.ok(Number(open?.failures) >= 3, `${open?.failures} failures`);
    // Every failure held its slot about 800 ms, and the breaker counted it.
    assert.ok(Number(open?.held_ms) >= Number(open?.failures) * 700, `held ${open?.held_ms} ms in ${open?.failures} failures`);
    assert.match(String(open?.last_error), /^HTTP 500 after \d+ ms$/);
    // Open: one probe per back-off (400 ms, then 800 ms), where eight slots would have sent ten a second.
    await sleep(300); // the attempts in flight when it opened end
    const before = rx.requests();
    await sleep(2000);
    const during = rx.requests() - before;
    assert.ok(during <= 5, `${during} requests in 2 s while open`);
    const waiting = await h.db.database.db
      .selectFrom('callback_events')
      .select(['attempts'])
      .where('merchant_id', '=', m.appId)
      .where('attempts', '=', 0)
      .execute();
    assert.ok(waiting.length >= 20, `${waiting.length} events deferred, never attempted`);

    // It answers well again: the next probe closes the breaker and every event goes.
    rx.answer({ status: 200, afterMs: 5 });
    await eventually(
      async () =>
        (await h.db.database.db.selectFrom('callback_events').select('status').where('merchant_id', '=', m.appId).execute()).every(
          (e) => e.status === 'delivered',
        ),
      15_000,
      'every event delivered',
    );
    assert.equal(await breakerOf(h, m.appId), undefined, 'closed');
    await worker.stop();
  });

  it('a quick 503 opens the breaker; a quick 404 and a slow 200 do not', async (t) => {
    const h = await build(t, dialect, {
      callbacks: {
        worker: false,
        retryScheduleMs: [50],
        maxAgeMs: 60_000,
        timeoutMs: 1000,
        pollMs: 20,
        slots: 2,
        breaker: { failures: 3, openMs: 60_000, maxOpenMs: 60_000 },
      },
    });
    const [down, refusing, slowOk] = [await h.newMerchant(), await h.newMerchant(), await h.newMerchant()];
    const r503 = await scripted(t, { status: 503, afterMs: 0 });
    const r404 = await scripted(t, { status: 404, afterMs: 0 });
    const r200 = await scripted(t, { status: 200, afterMs: 700 });
    await queue(h, down.appId, r503.url, 6);
    await queue(h, refusing.appId, r404.url, 6);
    await queue(h, slowOk.appId, r200.url, 6);
    const worker = new CallbackWorker(h.app.svc);
    worker.start();
    t.after(() => worker.stop());
    await eventually(async () => (await breakerOf(h, down.appId))?.state === 'open', 10_000, 'the 503 endpoint’s breaker open');
    const atOpen = r503.requests();
    // The 404s go on failing on the retry schedule (quick: the receiver is there), the slow 200s are delivered.
    await eventually(() => r404.requests() >= 18, 10_000, 'three attempts of each 404 event');
    await eventually(
      async () =>
        (await h.db.database.db.selectFrom('callback_events').select('status').where('merchant_id', '=', slowOk.appId).execute()).every(
          (e) => e.status === 'delivered',
        ),
      10_000,
      'the slow 200s delivered',
    );
    assert.equal(await breakerOf(h, refusing.appId), undefined, 'a quick 404 is an answer');
    assert.equal(await breakerOf(h, slowOk.appId), undefined, 'a slow 200 is a delivery');
    // Deferred once its breaker opened (those in flight then aside): no attempt since.
    assert.ok(r503.requests() <= atOpen + 2, `${r503.requests()} requests to the 503 endpoint, ${atOpen} when it opened`);
    const deferred = await h.db.database.db
      .selectFrom('callback_events')
      .select('status')
      .where('merchant_id', '=', down.appId)
      .where('status', '=', 'pending')
      .execute();
    assert.equal(deferred.length, 6, 'deferred, not failed');
    await worker.stop();
  });
});
