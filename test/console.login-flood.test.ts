import assert from 'node:assert/strict';
import type http from 'node:http';
import { describe, it } from 'node:test';
import { HashingQueue } from '../src/console/hashing.js';
import { randomStr } from './helpers/app.js';
import { fundedCard } from './helpers/cards.js';
import { buildConsole, formBody } from './helpers/console.js';
import { eachDialect } from './helpers/dialects.js';
import { receiver } from './helpers/receiver.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/**
 * Issue 26, finding 3: unauthenticated logins (scrypt on libuv's thread pool) once delayed the
 * endpoint's DNS lookup (the same pool) past its deadline, and the merchant's default decision
 * applied instead of the merchant's answer. Nothing an unauthenticated client does may change an
 * authorization decision.
 */
eachDialect('a login flood and the merchant’s real-time decision', (dialect) => {
  it('logins flooding from rotating addresses while authorizations run: the endpoint’s decline is applied every time', async (t) => {
    const h = await buildConsole(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 500 });
    const r = await receiver(t, h.merchant.webhookSecret);
    // A host name (not an address): resolving it is what the flood used to hold up. The merchant's
    // default is approve, so a missed deadline would show as an approval.
    const url = r.url.replace('127.0.0.1', 'localhost');
    const set = await h.call('/api/network/authorizationEndpointUpdate.html', {
      authorizationUrl: url,
      // The longest deadline there is: the flood runs in this same process, and on a loaded machine
      // its event loop alone may hold an answer past a short one (the thread pool is what is tested).
      timeoutMs: 5000,
      defaultDecision: 'approve',
      randomStr: randomStr(),
    });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    const decline = (res: http.ServerResponse) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ approved: false, reason: 'merchant says no' }));

    let flooding = true;
    let sent = 0;
    const statuses = new Map<number, number>();
    let busy: Awaited<ReturnType<typeof h.app.inject>> | undefined;
    const flooder = async (lane: number) => {
      while (flooding) {
        const i = sent++;
        const res = await h.app.inject({
          method: 'POST',
          url: '/console/login',
          headers: FORM,
          // A new address each time: no per-address limit stops this.
          remoteAddress: `198.51.${lane}.${i % 250}`,
          payload: formBody({ email: `nobody${i}@example.com`, password: 'any guess at all', code: '123456' }),
        });
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
        if (res.statusCode === 429) busy ??= res;
      }
    };
    const lanes = Array.from({ length: 60 }, (_, lane) => flooder(lane));
    try {
      // Let the flood build up first.
      while (sent < 120) await new Promise((resolve) => setTimeout(resolve, 10));
      for (let n = 0; n < 5; n++) {
        r.respond(decline);
        const res = await h.call('/sandbox/network/authorize', { cardId, amount: 10, randomStr: randomStr() });
        assert.deepEqual(
          [res.status, res.body.code, res.body.detail?.declineReason],
          [409, '2729', 'merchant_declined'],
          `authorization ${n + 1} during the flood: ${JSON.stringify(res.body)}`,
        );
      }
    } finally {
      flooding = false;
      await Promise.all(lanes);
    }
    assert.equal(r.received.length, 5, 'the endpoint was asked every time');
    assert.ok((statuses.get(429) ?? 0) > 0, `logins beyond what may be hashed at once are refused: ${JSON.stringify([...statuses])}`);
    // The documented answer (docs/console.md, Security): the login page, saying so, and when to come back.
    assert.match(busy?.body ?? '', /Too many logins are being checked just now/);
    assert.equal(busy?.headers['retry-after'], '1');
    const recorded = await h.db.database.db
      .selectFrom('audit_events')
      .select('after_json')
      .where('action', '=', 'operator.login_failed')
      .where('after_json', 'like', '%busy%')
      .execute();
    // Each client's first refusal of its window is recorded; the rest are counted on its throttle row
    // (summed up in one record when the window is over): every refusal is accounted for.
    const counted = await h.db.database.db.selectFrom('console_login_throttle').select('refusals').execute();
    assert.ok(recorded.length > 0 && recorded.length <= (statuses.get(429) ?? 0));
    assert.equal(
      counted.reduce((n, r) => n + Number(r.refusals), 0),
      statuses.get(429),
      'each refused login is recorded or counted, as busy',
    );
  });
});

describe('password hashing’s own queue', () => {
  it('runs at most so many at once, lets so many more wait in order, and refuses the rest before running them', async () => {
    const q = new HashingQueue(2, 3);
    let running = 0;
    let most = 0;
    const order: number[] = [];
    const release: Array<() => void> = [];
    const job = (n: number) => () =>
      new Promise<number>((resolve) => {
        running += 1;
        most = Math.max(most, running);
        order.push(n);
        release.push(() => {
          running -= 1;
          resolve(n);
        });
      });
    const runs = Array.from({ length: 5 }, (_, n) => q.runOrRefuse(job(n)));
    let refusedRan = false;
    assert.equal(
      await q.runOrRefuse(async () => {
        refusedRan = true;
      }),
      null,
      'the sixth is refused at once',
    );
    assert.equal(refusedRan, false);
    while (order.length < 5 || release.length) {
      await new Promise((resolve) => setImmediate(resolve));
      release.shift()?.();
    }
    assert.deepEqual(await Promise.all(runs), [0, 1, 2, 3, 4]);
    assert.equal(most, 2);
    assert.deepEqual(order, [0, 1, 2, 3, 4], 'in the order they came');
    assert.notEqual(q.reserve(), null, 'places are given back');
  });
});
