import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { type Claimed, claimDue } from '../src/callbacks/claim.js';
import { emitEvent } from '../src/callbacks/outbox.js';
import { SlotBook } from '../src/callbacks/slots.js';
import { CallbackWorker } from '../src/callbacks/worker.js';
import type { Harness } from './helpers/app.js';
import { build } from './helpers/app.js';
import { eachDialect } from './helpers/dialects.js';
import { eventually, receiver } from './helpers/receiver.js';

/** Issue 46: one merchant's many endpoints must not starve another merchant's events. */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * `n` receivers, each its own endpoint (its own port), that answer 500 after `delayMs`: just before
 * the delivery timeout, the worst a receiver can do while still answering. Counts the requests.
 */
async function slow500s(t: { after(fn: () => unknown): void }, n: number, delayMs: number) {
  let requests = 0;
  let open = 0;
  let mostOpen = 0;
  const servers: http.Server[] = [];
  for (let i = 0; i < n; i++) {
    const server = http.createServer((req, res) => {
      requests++;
      mostOpen = Math.max(mostOpen, ++open);
      let done = false;
      // Written (or cut): the attempt is over for the receiver, before the worker frees its slot.
      const end = () => {
        if (!done) open--;
        done = true;
      };
      req.resume();
      const timer = setTimeout(() => res.writeHead(500).end('try later'), delayMs);
      res.on('finish', end);
      res.on('close', () => {
        clearTimeout(timer);
        end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    servers.push(server);
  }
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await Promise.all(
      servers.map(
        (s) =>
          new Promise<void>((r) => {
            s.closeAllConnections();
            s.close(() => r());
          }),
      ),
    );
  };
  t.after(close);
  return {
    urls: servers.map((s) => `http://127.0.0.1:${(s.address() as AddressInfo).port}/hooks`),
    requests: () => requests,
    /** The most requests the receivers had open at once: the merchant's attempts in flight, seen from outside. */
    mostOpen: () => mostOpen,
    close,
  };
}

async function queue(h: Harness, merchantId: string, urls: string[], perUrl: number): Promise<string[]> {
  return h.db.database.withTx(async (tx) => {
    const ids: string[] = [];
    for (let round = 0; round < perUrl; round++)
      for (const [i, url] of urls.entries())
        ids.push(
          await emitEvent(tx, {
            merchantId,
            type: 'kyc.result',
            subject: `kyc:${i}`,
            url,
            body: { i },
            now: Date.now(),
            sealWith: h.app.svc.box,
          }),
        );
    return ids;
  });
}

function p99(samples: number[]): number {
  const s = [...samples].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(0.99 * s.length))] ?? Number.POSITIVE_INFINITY;
}

eachDialect('callbacks: fair by merchant (issue 46)', (dialect) => {
  it('300 endpoints of one merchant answering 500 just before the timeout take a quarter of the worker; another merchant’s events arrive within 1 s at p99', async (t) => {
    // A short timeout keeps the test short; the receivers answer at 90 % of it, as the did.
    const timeoutMs = 4000;
    const h = await build(t, dialect, {
      callbacks: { worker: false, retryScheduleMs: [2000, 10_000], maxAgeMs: 3_600_000, timeoutMs, pollMs: 1000 },
    });
    const bad = await slow500s(t, 300, timeoutMs * 0.9);
    const good = await receiver(t, h.merchant.webhookSecret);
    const attacker = await h.newMerchant();
    // KYC callbacks: their URL is the merchant's choice per request, so one merchant has as many
    // endpoints as it has ports. Four events each: the retry schedule keeps the pressure up.
    const badIds = await queue(h, attacker.appId, bad.urls, 4);
    const worker = new CallbackWorker(h.app.svc);
    h.app.svc.notifier.poke = () => worker.poke();
    worker.start();
    let stopped = false;
    const stop = async () => {
      if (stopped) return;
      stopped = true;
      await bad.close();
      await worker.stop();
    };
    t.after(stop);
    const db = h.db.database.db;
    // The worker is busy with the attacker's endpoints before the other merchant's first event.
    await eventually(() => bad.requests() >= 50, 10_000, 'the attacker’s receivers busy');
    await sleep(300);

    const written = new Map<string, number>();
    for (let i = 0; i < 30; i++) {
      const id = await h.db.database.withTx((tx) =>
        emitEvent(tx, {
          merchantId: h.merchant.appId,
          type: 'holder.audit',
          subject: `good:${i}`,
          url: good.url,
          body: { i },
          now: Date.now(),
        }),
      );
      written.set(id, performance.now());
      worker.poke(); // what the runner does after a commit that wrote an event
      await sleep(150);
    }
    await eventually(() => [...written.keys()].every((id) => good.received.some((r) => r.body.eventId === id)), 20_000, 'the 30 callbacks');
    const latency = [...written].map(([id, at]) => (good.received.find((r) => r.body.eventId === id)?.at ?? Number.POSITIVE_INFINITY) - at);
    t.diagnostic(
      `p99 ${Math.round(p99(latency))} ms, max ${Math.round(Math.max(...latency))} ms; the attacker had at most ${bad.mostOpen()} attempts in flight; its receivers got ${bad.requests()} requests`,
    );
    // docs/callbacks.md promises 1 s at p99; before issue 46 these waited for the attacker's 3.6 s answers.
    assert.ok(p99(latency) < 1000, `p99 ${Math.round(p99(latency))} ms (max ${Math.round(Math.max(...latency))} ms)`);
    assert.equal(good.received.length, 30, 'each of the good merchant’s events was sent once');
    assert.ok(good.received.every((r) => r.verified));
    // A quarter of the worker's 256 (CARDPROGRAM_CALLBACK_MERCHANT_SHARE).
    assert.ok(bad.mostOpen() <= 64, `the attacker had ${bad.mostOpen()} of the worker’s 256 attempts in flight`);
    assert.ok(bad.requests() >= 64, 'the attacker’s endpoints were attempted all along');

    await stop();
    // Nothing of the attacker's is lost: attempted and due again, or waiting; each attempt recorded once.
    const rows = await db.selectFrom('callback_events').select(['id', 'status', 'attempts']).where('id', 'in', badIds).execute();
    assert.equal(rows.length, badIds.length);
    assert.ok(rows.every((r) => r.status === 'pending'));
    const attempts = await db.selectFrom('callback_attempts').select('event_id').where('event_id', 'in', badIds).execute();
    assert.equal(
      attempts.length,
      rows.reduce((n, r) => n + Number(r.attempts), 0),
    );
  });
});

eachDialect('callbacks: fair claims by merchant, then endpoint (issue 46)', (dialect) => {
  const lease = (h: Harness) => ({ now: Date.now(), leaseUntil: Date.now() + 60_000, db: h.db.database });
  const emitAt = (h: Harness, merchantId: string, url: string, at: number, i: number) =>
    h.db.database.withTx((tx) => emitEvent(tx, { merchantId, type: 'holder.audit', subject: `s${i}`, url, body: { i }, now: at }));

  it('round-robin over merchants, then over each merchant’s endpoints; a merchant gets at most its share, less what the worker holds of it', async (t) => {
    const h = await build(t, dialect);
    const [b, c] = [await h.newMerchant(), await h.newMerchant()];
    const at = Date.now() - 60_000;
    let i = 0;
    // The oldest: 50 endpoints of one merchant, two events each; then another merchant's two
    // endpoints, three each; then a third merchant's one event, the newest.
    for (let round = 0; round < 2; round++)
      for (let p = 0; p < 50; p++) await emitAt(h, h.merchant.appId, `http://127.0.0.1:${1000 + p}/a`, at + i, i++);
    for (let round = 0; round < 3; round++) for (const p of [2000, 2001]) await emitAt(h, b.appId, `http://127.0.0.1:${p}/b`, at + i, i++);
    await emitAt(h, c.appId, 'http://127.0.0.1:3000/c', at + i, i++);
    const { now, leaseUntil, db } = lease(h);
    const claimed = await claimDue(db, { owner: 'wrk_a', now, leaseUntil, limit: 20, slots: 4, perMerchant: 5, busy: [] });
    const port = (e: { url: string }) => Number(new URL(e.url).port);
    assert.deepEqual(
      claimed.map((e) => [e.merchant_id, port(e)]),
      [
        // Round 1: each merchant's oldest, oldest first.
        [h.merchant.appId, 1000],
        [b.appId, 2000],
        [c.appId, 3000],
        // Then the first merchant's next endpoints (never its second event of an endpoint while
        // another of its endpoints has a first), and the second merchant's endpoints in turn.
        [h.merchant.appId, 1001],
        [b.appId, 2001],
        [h.merchant.appId, 1002],
        [b.appId, 2000],
        [h.merchant.appId, 1003],
        [b.appId, 2001],
        [h.merchant.appId, 1004],
        [b.appId, 2000],
      ],
    );
    // What the worker holds already counts: a merchant it holds 3 of (of 5) gets 2 more; one that
    // holds its whole share none; an endpoint with 3 of its 4 one more.
    const more = await claimDue(db, {
      owner: 'wrk_a',
      now,
      leaseUntil,
      limit: 20,
      slots: 4,
      perMerchant: 5,
      busy: [],
      busyMerchants: [b.appId],
      merchantRoom: [{ merchantId: h.merchant.appId, room: 2 }],
    });
    assert.deepEqual(
      more.map((e) => [e.merchant_id, port(e)]),
      [
        [h.merchant.appId, 1005],
        [h.merchant.appId, 1006],
      ],
    );
    const endpointHeld = await claimDue(db, {
      owner: 'wrk_a',
      now,
      leaseUntil,
      limit: 20,
      slots: 1,
      perMerchant: 50,
      busy: [],
      busyMerchants: [h.merchant.appId],
      endpointRoom: [{ merchantId: b.appId, endpoint: 'http://127.0.0.1:2000', room: 0 }],
    });
    assert.deepEqual(
      endpointHeld.map((e) => [e.merchant_id, port(e)]),
      [[b.appId, 2001]],
    );
  });

  it('workers claiming at once never claim one event twice, and each claim keeps the shares', async (t) => {
    const h = await build(t, dialect);
    const merchants = [h.merchant.appId, ...(await Promise.all([1, 2, 3, 4].map(() => h.newMerchant()))).map((m) => m.appId)];
    const at = Date.now() - 60_000;
    await h.db.database.withTx(async (tx) => {
      let i = 0;
      for (const merchantId of merchants)
        for (let p = 0; p < 10; p++)
          for (let k = 0; k < 5; k++)
            await emitEvent(tx, {
              merchantId,
              type: 'holder.audit',
              subject: `s${i}`,
              url: `http://127.0.0.1:${1000 + p}/x`,
              body: { i },
              now: at + i++,
            });
    });
    const seen = new Map<string, string>();
    // Rounds of six claims at once, until every event is claimed (on PostgreSQL two claims that
    // rank the same events first meet on their row locks: one takes them, the other skips them).
    for (let round = 0; seen.size < 250 && round < 30; round++) {
      const { now, leaseUntil, db } = lease(h);
      const owners = Array.from({ length: 6 }, (_, w) => `wrk_${round}_${w}`);
      const claims = await Promise.all(
        owners.map((owner) => claimDue(db, { owner, now, leaseUntil, limit: 30, slots: 3, perMerchant: 8, busy: [] })),
      );
      for (const [w, claim] of claims.entries()) {
        const perMerchant = new Map<string, number>();
        const perEndpoint = new Map<string, number>();
        for (const e of claim) {
          assert.equal(seen.get(e.id), undefined, `${e.id} claimed by ${seen.get(e.id)} and ${owners[w]}`);
          seen.set(e.id, owners[w] as string);
          perMerchant.set(e.merchant_id, (perMerchant.get(e.merchant_id) ?? 0) + 1);
          perEndpoint.set(`${e.merchant_id} ${e.endpoint}`, (perEndpoint.get(`${e.merchant_id} ${e.endpoint}`) ?? 0) + 1);
        }
        assert.ok(Math.max(0, ...perMerchant.values()) <= 8, `${owners[w]}: ${[...perMerchant.values()]}`);
        assert.ok(Math.max(0, ...perEndpoint.values()) <= 3);
      }
    }
    // Every event claimed is leased to the one worker that got it.
    const leased = await h.db.database.db
      .selectFrom('callback_events')
      .select(['id', 'lease_owner'])
      .where('lease_owner', 'is not', null)
      .execute();
    assert.equal(leased.length, seen.size);
    for (const e of leased) assert.equal(e.lease_owner, seen.get(e.id));
    assert.equal(seen.size, 250);
  });
});

eachDialect('callbacks: attempts in flight per merchant, in the metrics (issue 46)', (dialect) => {
  it('cardprogram_callback_in_flight names the 10 merchants with most in flight, and sums the rest as other', async (t) => {
    const h = await build(t, dialect, {
      callbacks: { worker: true, retryScheduleMs: [60_000], maxAgeMs: 3_600_000, timeoutMs: 5000, pollMs: 50 },
    });
    const bad = await slow500s(t, 78, 4000);
    t.after(() => bad.close());
    const merchants = await Promise.all(Array.from({ length: 12 }, () => h.newMerchant()));
    // Merchant k has k+1 endpoints, one event each: k+1 attempts in flight.
    let next = 0;
    for (const [k, m] of merchants.entries()) {
      await queue(h, m.appId, bad.urls.slice(next, next + k + 1), 1);
      next += k + 1;
    }
    h.app.svc.notifier.poke();
    await eventually(() => bad.requests() >= 78, 10_000, 'every attempt in flight');
    const text = await h.app.svc.metrics.text();
    const series = [...text.matchAll(/^cardprogram_callback_in_flight\{merchant="([^"]+)"\} (\d+)$/gm)].map((m) => [m[1], Number(m[2])]);
    assert.deepEqual(
      new Map(series as Array<[string, number]>),
      new Map([...merchants.slice(2).map((m, k): [string, number] => [m.appId, k + 3]), ['other', 1 + 2]]),
    );
    await bad.close();
  });
});

describe('a worker’s book of slots (src/callbacks/slots.ts)', () => {
  const event = (merchant: string, port: number, n: number) =>
    ({ id: `${merchant}-${port}-${n}`, merchant_id: merchant, endpoint: `http://127.0.0.1:${port}` }) as Claimed;
  it('takes a merchant’s endpoints in turn, within its share and each endpoint’s slots, and holds no more than its share claimed', () => {
    const book = new SlotBook({ total: 8, perMerchant: 4, perEndpoint: 1, prefetch: 4 });
    for (const e of [event('a', 1, 1), event('a', 1, 2), event('a', 1, 3), event('a', 2, 1)]) assert.equal(book.enqueue(e), true);
    assert.equal(book.enqueue(event('a', 3, 1)), false, 'the merchant holds its share claimed');
    assert.equal(book.enqueue(event('b', 1, 1)), true);
    assert.deepEqual(book.shape([]).busyMerchants, ['a']);
    assert.equal(book.room(), 3);
    const first = book.next('a');
    const second = book.next('a');
    assert.deepEqual([first?.id, second?.id], ['a-1-1', 'a-2-1'], 'its endpoints in turn');
    if (first) book.started(first);
    if (second) book.started(second);
    assert.equal(book.next('a'), null, 'each endpoint has its one slot in flight');
    if (first) book.ended(first);
    assert.equal(book.next('a')?.id, 'a-1-2');
    assert.deepEqual(book.inFlightByMerchant(), [{ merchant: 'a', n: 1 }]);
  });
});
