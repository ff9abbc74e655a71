import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { it } from 'node:test';
import { retryCallbacks } from '../src/callbacks/manage.js';
import { emitEvent } from '../src/callbacks/outbox.js';
import { CallbackWorker } from '../src/callbacks/worker.js';
import { setCardFrozen } from '../src/cards/status.js';
import { updateMerchant } from '../src/merchants/manage.js';
import { runVerb } from '../src/runner.js';
import { build, type Harness, holderBody, kycBody, randomStr } from './helpers/app.js';
import { fundedCard, ok } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';
import { eventually, receiver } from './helpers/receiver.js';

async function events(h: Harness) {
  return h.db.database.db.selectFrom('callback_events').selectAll().orderBy('created_at').orderBy('sequence').execute();
}

async function attempts(h: Harness, eventId: string) {
  return h.db.database.db.selectFrom('callback_attempts').selectAll().where('event_id', '=', eventId).orderBy('attempt').execute();
}

/** Runs worker passes until every event is settled (delivered or failed). */
async function drain(h: Harness, worker: CallbackWorker, timeoutMs = 10_000) {
  await eventually(
    async () => {
      await worker.pass();
      return (await events(h)).every((e) => e.status !== 'pending');
    },
    timeoutMs,
    'all callbacks settled',
  );
}

const kyc = (callbackUrl: string, email = 'bob@example.com') => kycBody({ callbackUrl, email });

eachDialect('signed callbacks, delivered at least once', (dialect) => {
  it('kyc.result, holder.audit and trade events arrive signed per Standard Webhooks, in sequence per subject', async (t) => {
    const h = await build(t, dialect);
    const rx = await receiver(t, h.merchant.webhookSecret);
    await runVerb(h.app.svc, updateMerchant, { input: { appId: h.merchant.appId, notifyUrl: rx.url }, actor: 'test' });
    const worker = new CallbackWorker(h.app.svc);
    const body = kyc(rx.url);
    await h.call('/open/api/kyc/share/information', body);
    const decided = await h.call('/sandbox/kyc/review', {
      requestNo: body.requestNo,
      kycStatus: 'approved',
      reason: 'Looks good',
      randomStr: randomStr(),
    });
    const kycHolder = decided.body.model.holderId;
    assert.match(kycHolder, /^hld_/);
    const { cardId } = await fundedCard(h, { topUp: 50 });
    const auth = await ok(h, '/sandbox/network/authorize', { cardId, amount: 5 });
    await ok(h, '/sandbox/network/reverse', { tradeId: auth.tradeId });
    await drain(h, worker);
    assert.ok(
      rx.received.every((r) => r.verified),
      'every callback verifies with standardwebhooks',
    );
    for (const r of rx.received) {
      assert.equal(r.headers['webhook-id'], r.body.eventId);
      assert.match(String(r.headers['webhook-signature']), /^v1,[A-Za-z0-9+/]+=*$/);
      assert.equal(r.headers['content-type'], 'application/json');
    }
    const kycEvents = rx.received.filter((r) => r.body.type === 'kyc.result').map((r) => r.body);
    assert.equal(kycEvents.length, 1);
    assert.deepEqual(
      { ...kycEvents[0], eventId: 'x', occurredAt: 'x' },
      {
        type: 'kyc.result',
        requestNo: body.requestNo,
        email: 'bob@example.com',
        kycStatus: 'approved',
        reason: 'Looks good',
        holderId: kycHolder,
        eventId: 'x',
        sequence: 1,
        occurredAt: 'x',
      },
    );
    const audits = rx.received.filter((r) => r.body.type === 'holder.audit').map((r) => r.body);
    assert.ok(
      audits.some((a) => a.auditStatus === 2),
      'approval of the KYC-created holder and of the test holder',
    );
    const trades = rx.received
      .filter((r) => r.body.type === 'trade')
      .map((r) => r.body)
      .sort((x, y) => x.sequence - y.sequence);
    // One card, one sequence: top-up, authorization, the original becoming 3 (Reversed), the reversal record.
    assert.deepEqual(
      trades.map((x) => [x.sequence, x.tradeType, x.tradeStatus]),
      [
        [1, 100, 1],
        [2, 150, 1],
        [3, 150, 3],
        [4, 150, 2],
      ],
    );
    assert.ok(trades.every((x) => x.cardId === cardId && /^\d{6}\*{6}\d{4}$/.test(x.cardNo)));
  });

  it('a receiver answering 500 then 200 gets the event on the second attempt, with the same eventId; every attempt is recorded', async (t) => {
    const h = await build(t, dialect);
    const rx = await receiver(t, h.merchant.webhookSecret);
    rx.respond((res) => res.writeHead(500).end('boom'));
    const body = kyc(rx.url);
    await h.call('/open/api/kyc/share/information', body);
    await h.call('/sandbox/kyc/review', { requestNo: body.requestNo, kycStatus: 'rejected', randomStr: randomStr() });
    await drain(h, new CallbackWorker(h.app.svc));
    assert.equal(rx.received.length, 2);
    assert.equal(rx.received[0]?.body.eventId, rx.received[1]?.body.eventId, 'a duplicate carries the same eventId');
    const [event] = await events(h);
    assert.equal(event?.status, 'delivered');
    const tries = await attempts(h, event?.id ?? '');
    assert.deepEqual(
      tries.map((a) => [a.attempt, a.http_status]),
      [
        [1, 500],
        [2, 200],
      ],
    );
    assert.equal(tries[0]?.response_excerpt, 'boom');
  });

  it('a receiver that is down for a while gets the event after it comes back', async (t) => {
    const h = await build(t, dialect);
    const rx = await receiver(t, h.merchant.webhookSecret);
    const port = rx.port;
    await new Promise<void>((r) => {
      rx.server.close(() => r());
      rx.server.closeAllConnections();
    });
    const body = kyc(`http://127.0.0.1:${port}/hooks`);
    await h.call('/open/api/kyc/share/information', body);
    await h.call('/sandbox/kyc/review', { requestNo: body.requestNo, kycStatus: 'approved', randomStr: randomStr() });
    const worker = new CallbackWorker(h.app.svc);
    await eventually(
      async () => {
        await worker.pass();
        return (await events(h))[0]?.attempts === 2;
      },
      5000,
      'two failed attempts',
    );
    const [down] = await events(h);
    assert.equal(down?.status, 'pending');
    assert.match(down?.last_error ?? '', /ECONNREFUSED/);
    await new Promise<void>((r) => rx.server.listen(port, '127.0.0.1', r));
    await drain(h, worker);
    assert.equal((await events(h))[0]?.status, 'delivered');
    assert.equal(rx.received.length, 1);
  });

  it('redirects are not followed, responses are read up to a cap, slow receivers time out', async (t) => {
    const h = await build(t, dialect, {
      callbacks: { worker: false, retryScheduleMs: [10_000], maxAgeMs: 60_000, timeoutMs: 300, pollMs: 20 },
    });
    let internalHits = 0;
    const internal = http.createServer((_q, s) => {
      internalHits++;
      s.end('secret');
    });
    await new Promise<void>((r) => internal.listen(0, '127.0.0.1', r));
    t.after(() => {
      internal.closeAllConnections();
      internal.close();
    });
    const rx = await receiver(t, h.merchant.webhookSecret);
    rx.respond(
      (res) => res.writeHead(302, { location: `http://127.0.0.1:${(internal.address() as AddressInfo).port}/admin` }).end(),
      (res) => res.writeHead(500).end('x'.repeat(1_000_000)),
      () => undefined, // never answers
    );
    for (let i = 0; i < 3; i++) {
      const body = kyc(rx.url, `p${i}@example.com`);
      await h.call('/open/api/kyc/share/information', body);
      await h.call('/sandbox/kyc/review', { requestNo: body.requestNo, kycStatus: 'approved', randomStr: randomStr() });
      await new CallbackWorker(h.app.svc).pass();
    }
    const all = await events(h);
    const first = await attempts(h, all[0]?.id ?? '');
    assert.equal(first[0]?.http_status, 302);
    assert.equal(internalHits, 0, 'the redirect target was never contacted');
    const second = await attempts(h, all[1]?.id ?? '');
    assert.equal(second[0]?.http_status, 500);
    assert.ok((second[0]?.response_excerpt ?? '').length <= 500);
    const third = await attempts(h, all[2]?.id ?? '');
    assert.equal(third[0]?.http_status, null);
    assert.match(third[0]?.error ?? '', /timed out after 300 ms/);
    assert.ok(
      all.every((e) => e.status === 'pending'),
      'all three will be retried',
    );
  });

  it('an event that keeps failing is given up after its time, and an operator can send it again', async (t) => {
    // A window long enough for several attempts even on a loaded machine. A receiver answering 503
    // opens its breaker (issue 46): a short back-off here, so that its probes carry on the schedule.
    const h = await build(t, dialect, {
      callbacks: {
        worker: false,
        retryScheduleMs: [30],
        maxAgeMs: 1500,
        timeoutMs: 500,
        pollMs: 20,
        breaker: { openMs: 50, maxOpenMs: 100 },
      },
    });
    const rx = await receiver(t, h.merchant.webhookSecret);
    rx.respond(...Array.from({ length: 1000 }, () => (res: http.ServerResponse) => res.writeHead(503).end()));
    const body = kyc(rx.url);
    await h.call('/open/api/kyc/share/information', body);
    await h.call('/sandbox/kyc/review', { requestNo: body.requestNo, kycStatus: 'approved', randomStr: randomStr() });
    const worker = new CallbackWorker(h.app.svc);
    await drain(h, worker);
    const [failed] = await events(h);
    assert.equal(failed?.status, 'failed');
    assert.ok((failed?.attempts ?? 0) >= 2);
    rx.reset(); // the receiver is fixed: 200 from now on
    const queued = await runVerb(h.app.svc, retryCallbacks, { input: { allFailed: true }, actor: 'test' });
    assert.equal(queued, 1);
    await eventually(async () => {
      await worker.pass();
      return rx.received.some((r) => r.body.eventId === failed?.id && r.verified);
    }, 5000);
  });

  it('two workers at once deliver each event once per attempt', async (t) => {
    const h = await build(t, dialect);
    const rx = await receiver(t, h.merchant.webhookSecret);
    await h.db.database.withTx(async (tx) => {
      for (let i = 0; i < 40; i++) {
        await emitEvent(tx, {
          merchantId: h.merchant.appId,
          type: 'holder.audit',
          subject: `holder:h${i % 5}`,
          url: rx.url,
          body: { i },
          now: Date.now(),
        });
      }
    });
    const a = new CallbackWorker(h.app.svc, { batch: 3 });
    const b = new CallbackWorker(h.app.svc, { batch: 3 });
    await Promise.all([a.pass(), b.pass(), a.pass(), b.pass()]);
    await drain(h, a);
    const ids = rx.received.map((r) => r.body.eventId);
    assert.equal(ids.length, 40, 'no event sent twice');
    assert.equal(new Set(ids).size, 40);
    const bySubject = new Map<string, number[]>();
    for (const r of rx.received) bySubject.set(String(r.body.i % 5), [...(bySubject.get(String(r.body.i % 5)) ?? []), r.body.sequence]);
    for (const seqs of bySubject.values())
      assert.deepEqual(
        [...seqs].sort((x, y) => x - y),
        [1, 2, 3, 4, 5, 6, 7, 8],
      );
  });

  it('retry names events all-or-nothing; the sandbox refuses link-local and private receivers at delivery too', async (t) => {
    const h = await build(t, dialect);
    const rx = await receiver(t, h.merchant.webhookSecret);
    let id = '';
    await h.db.database.withTx(async (tx) => {
      id = await emitEvent(tx, {
        merchantId: h.merchant.appId,
        type: 'kyc.result',
        subject: 's',
        url: rx.url,
        body: {},
        now: Date.now(),
        sealWith: h.app.svc.box,
      });
      await emitEvent(tx, {
        merchantId: h.merchant.appId,
        type: 'kyc.result',
        subject: 'm',
        url: 'http://169.254.169.254/latest/meta-data',
        body: {},
        now: Date.now(),
        sealWith: h.app.svc.box,
      });
      await emitEvent(tx, {
        merchantId: h.merchant.appId,
        type: 'kyc.result',
        subject: 'p',
        url: 'http://metadata.example/x',
        body: {},
        now: Date.now(),
        sealWith: h.app.svc.box,
      });
    });
    const worker = new CallbackWorker(h.app.svc, { resolver: async () => [{ address: '10.1.2.3', family: 4 }] });
    await worker.pass();
    const byUrl = new Map((await events(h)).map((e) => [e.url, e]));
    assert.equal(byUrl.get(rx.url)?.status, 'delivered');
    for (const url of ['http://169.254.169.254/latest/meta-data', 'http://metadata.example/x']) {
      const [a] = await attempts(h, byUrl.get(url)?.id ?? '');
      assert.match(a?.error ?? '', /^blocked: /, url);
    }
    await assert.rejects(
      runVerb(h.app.svc, retryCallbacks, { input: { eventIds: [id, 'evt_nope'] }, actor: 'test' }),
      /no such event: evt_nope/,
    );
    assert.equal((await events(h)).find((e) => e.id === id)?.status, 'delivered', 'nothing was queued');
    assert.equal(await runVerb(h.app.svc, retryCallbacks, { input: { eventIds: [id] }, actor: 'test' }), 1);
  });

  it('changing the notify URL re-targets the undelivered notify events; a KYC callbackUrl stays', async (t) => {
    const h = await build(t, dialect);
    const rx = await receiver(t, h.merchant.webhookSecret);
    await runVerb(h.app.svc, updateMerchant, { input: { appId: h.merchant.appId, notifyUrl: 'http://127.0.0.1:9/dead' }, actor: 'test' });
    const { holderId } = (await h.call('/api/network/holderCreate.html', holderBody())).body;
    await h.call('/sandbox/holder/review', { holderId, auditStatus: 1, randomStr: randomStr() });
    const body = kyc('http://127.0.0.1:9/kyc-dead');
    await h.call('/open/api/kyc/share/information', body);
    await h.call('/sandbox/kyc/review', { requestNo: body.requestNo, kycStatus: 'rejected', randomStr: randomStr() });
    const { cardId } = await fundedCard(h, { topUp: 10 });
    await runVerb(h.app.svc, setCardFrozen, { input: { cardId, frozen: true, source: 'operator' }, actor: 'cli' });
    await new CallbackWorker(h.app.svc).pass();
    await runVerb(h.app.svc, updateMerchant, { input: { appId: h.merchant.appId, notifyUrl: rx.url }, actor: 'test' });
    const all = await events(h);
    assert.deepEqual(all.map((e) => [e.type, e.url]).sort(), [
      ['card.status', rx.url],
      ['holder.audit', rx.url],
      ['holder.audit', rx.url],
      ['kyc.result', 'http://127.0.0.1:9/kyc-dead'],
      ['trade', rx.url],
    ]);
    await runVerb(h.app.svc, retryCallbacks, { input: { eventIds: all.map((e) => e.id) }, actor: 'test' });
    await new CallbackWorker(h.app.svc).pass();
    assert.deepEqual(rx.received.map((r) => r.body.type).sort(), ['card.status', 'holder.audit', 'holder.audit', 'trade']);
  });

  it('a notify URL set or removed by another process (the CLI) applies to the next event, whatever the merchant cache holds', async (t) => {
    // A long cache, as in production (5 s by default); the tests' own config has none.
    const h = await build(t, dialect, { merchantCacheMs: 600_000 });
    const rx = await receiver(t, h.merchant.webhookSecret);
    const { cardId } = await fundedCard(h, { topUp: 50 });
    assert.deepEqual(await events(h), [], 'no notify URL yet');
    // The CLI's update, in another process: this one's cache still says there is no URL.
    const setUrl = (url: string | null) =>
      h.db.database.db.updateTable('merchants').set({ notify_url: url }).where('id', '=', h.merchant.appId).execute();
    await setUrl(rx.url);
    await ok(h, '/api/network/cardTopUp.html', { cardId, amount: 25 });
    const after = await events(h);
    assert.deepEqual(
      after.map((e) => [e.type, e.url, JSON.parse(e.payload).amount]),
      [['trade', rx.url, 25]],
    );
    await setUrl(null);
    await ok(h, '/sandbox/network/authorize', { cardId, amount: 5 });
    assert.equal((await events(h)).length, 1, 'no event once the URL is removed');
  });

  it('a notify event written with the URL of a moment before a change goes to the URL as it is now', async (t) => {
    const h = await build(t, dialect);
    const rx = await receiver(t, h.merchant.webhookSecret);
    await runVerb(h.app.svc, updateMerchant, { input: { appId: h.merchant.appId, notifyUrl: rx.url }, actor: 'test' });
    // A transaction that read the old URL just before the change committed, and committed after it
    // (PostgreSQL read committed): the change's re-targeting could not see its event.
    const id = await h.db.database.withTx((tx) =>
      emitEvent(tx, {
        merchantId: h.merchant.appId,
        type: 'trade',
        subject: 'card:x',
        url: 'http://127.0.0.1:9/old',
        body: { cardId: 'x' },
        now: Date.now(),
      }),
    );
    await new CallbackWorker(h.app.svc).pass();
    assert.deepEqual(
      rx.received.map((r) => r.body.eventId),
      [id],
    );
    const [row] = await events(h);
    assert.deepEqual([row?.status, row?.url], ['delivered', rx.url], 'the event records where it went');
  });

  it('no notify URL, no holder.audit or trade events', async (t) => {
    const h = await build(t, dialect);
    const { holderId } = (await h.call('/api/network/holderCreate.html', holderBody())).body;
    await h.call('/sandbox/holder/review', { holderId, auditStatus: 1, randomStr: randomStr() });
    assert.deepEqual(await events(h), []);
  });
});

eachDialect('callback SSRF guard at delivery (production)', (dialect) => {
  it('a name resolving to a private address and a private literal are refused at connect time', async (t) => {
    const h = await build(t, dialect, { env: 'production' });
    const rx = await receiver(t, h.merchant.webhookSecret);
    await h.db.database.withTx(async (tx) => {
      // As if they passed the submission check and the DNS changed since (rebinding), or a row was edited.
      for (const url of [
        `https://rebind.example:${rx.port}/hooks`,
        `https://127.0.0.1:${rx.port}/hooks`,
        `https://[::ffff:127.0.0.1]:${rx.port}/hooks`,
      ]) {
        await emitEvent(tx, {
          merchantId: h.merchant.appId,
          type: 'kyc.result',
          subject: url,
          url,
          body: {},
          now: Date.now(),
          sealWith: h.app.svc.box,
        });
      }
    });
    const worker = new CallbackWorker(h.app.svc, { resolver: async () => [{ address: '127.0.0.1', family: 4 }] });
    await worker.pass();
    for (const e of await events(h)) {
      const [a] = await attempts(h, e.id);
      assert.match(a?.error ?? '', /^blocked: /, e.url);
    }
    assert.equal(rx.received.length, 0);
  });
});
