import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HashingQueue, hashingQueueOf } from '../src/console/hashing.js';
import { deviceOperator, deviceToken } from '../src/console/known-device.js';
import { queueKey } from '../src/console/login-throttle.js';
import { codeAt, stepOf } from '../src/console/totp.js';
import { SecretBox } from '../src/crypto/secretbox.js';
import { buildConsole, type ConsoleHarness, formBody, makeOperator, type TestOperator } from './helpers/console.js';
import { eachDialect } from './helpers/dialects.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const BUSY = /Too many logins are being checked just now/;

/** A login form posted from `from`, with the cookies given (the known-device cookie, if any). */
function attempt(h: ConsoleHarness, from: string, fields: Record<string, string>, cookie?: string) {
  return h.app.inject({
    method: 'POST',
    url: '/console/login',
    headers: cookie ? { ...FORM, cookie } : FORM,
    remoteAddress: from,
    payload: formBody({ next: '/console', ...fields }),
  });
}

/** The operator's own login (a fresh TOTP step each time). */
function ownLogin(h: ConsoleHarness, op: TestOperator, from: string, cookie?: string) {
  h.advance();
  return attempt(h, from, { email: op.email, password: op.password, code: codeAt(op.secret as string, stepOf(h.now.ms)) }, cookie);
}

function setCookies(res: { headers: Record<string, unknown> }): string[] {
  const v = res.headers['set-cookie'];
  return Array.isArray(v) ? v.map(String) : v === undefined ? [] : [String(v)];
}

// After an attack pass on issue 26, finding 3: logins from rotating addresses (each under its
// per-address limit) filled the hashing queue, and a real operator got 429 thirty times out of 31.
eachDialect('the hashing queue under a login flood: known devices and throttled clients', (dialect) => {
  it('a flood from many addresses while an operator logs in from a known device: every one of its logins succeeds', async (t) => {
    const h = await buildConsole(t, dialect);
    const admin = await makeOperator(h, 'ada@example.com', 'admin');
    // The first login (no flood yet) gives the browser its known-device cookie: signed, HttpOnly, long-lived.
    const first = await ownLogin(h, admin, '203.0.113.5');
    assert.equal(first.statusCode, 303, first.body);
    const device = setCookies(first).find((c) => c.startsWith('cp_console_device='));
    assert.ok(device, `a known-device cookie: ${JSON.stringify(setCookies(first))}`);
    assert.match(device, /; HttpOnly/);
    assert.match(device, /; SameSite=Strict/);
    assert.match(device, /; Max-Age=34560000/);
    const cookie = device.split(';')[0] as string;
    assert.match(cookie, /^cp_console_device=v1\.op_[^.]+\.\d+\.[A-Za-z0-9_-]{43}$/);

    let flooding = true;
    let sent = 0;
    const statuses = new Map<number, number>();
    const flooder = async (lane: number) => {
      while (flooding) {
        const i = sent++;
        const res = await attempt(h, `198.51.${lane}.${i % 250}`, { email: `nobody${i}@example.com`, password: 'any guess at all' });
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
      }
    };
    const lanes = Array.from({ length: 60 }, (_, lane) => flooder(lane));
    const results: number[] = [];
    let withoutDevice = 0;
    try {
      while (sent < 120) await new Promise((resolve) => setTimeout(resolve, 10));
      for (let n = 0; n < 8; n++) {
        const res = await ownLogin(h, admin, '203.0.113.5', cookie);
        results.push(res.statusCode);
        assert.equal(res.statusCode, 303, `login ${n + 1} from the known device during the flood: ${res.body.slice(0, 200)}`);
      }
      // The same password without the cookie (another browser) is in the general lane, with the flood.
      for (let n = 0; n < 8; n++) if ((await ownLogin(h, admin, '203.0.113.6')).statusCode === 429) withoutDevice += 1;
    } finally {
      flooding = false;
      await Promise.all(lanes);
    }
    assert.deepEqual(results, Array(8).fill(303));
    assert.ok((statuses.get(429) ?? 0) > 0, `the flood was refused beyond the queue: ${JSON.stringify([...statuses])}`);
    assert.ok(withoutDevice > 0, 'without the cookie, the flood takes the places (so the lane is what let the known device in)');
  });

  it('a known-device cookie is for its own account: another account’s login with it, or an altered one, gets no reserved place', async (t) => {
    const h = await buildConsole(t, dialect, { consoleHashes: 1 });
    const ada = await makeOperator(h, 'ada@example.com', 'admin');
    const bob = await makeOperator(h, 'bob@example.com', 'admin');
    const res = await ownLogin(h, ada, '203.0.113.5');
    const cookie = (setCookies(res).find((c) => c.startsWith('cp_console_device=')) as string).split(';')[0] as string;
    const box = h.app.svc.box;
    const adaId = deviceOperator(box, cookie.slice('cp_console_device='.length), h.now.ms);
    assert.match(String(adaId), /^op_/);
    // Altered, under another master key, for another account, or too old: no lane.
    const token = cookie.slice('cp_console_device='.length);
    assert.equal(deviceOperator(box, `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`, h.now.ms), null);
    assert.equal(deviceOperator(new SecretBox(Buffer.alloc(32, 7)), token, h.now.ms), null);
    assert.equal(deviceOperator(box, token.replace(String(adaId), 'op_someoneelse'), h.now.ms), null);
    assert.equal(deviceOperator(box, token, h.now.ms + 401 * 24 * 3600_000), null);
    assert.equal(deviceOperator(box, deviceToken(box, 'op_x', h.now.ms), h.now.ms), 'op_x');
    // The general lane full (1 at once, 8 waiting, held here by nine other networks): Bob, with
    // Ada's cookie, is in the general lane and refused; Ada, with her own, takes a reserved place.
    const q = hashingQueueOf(h.app.svc);
    const held = Array.from({ length: 9 }, (_, i) => q.reserve({ client: `v4:198.51.${i}.0/24` }));
    assert.ok(held.every((p) => p !== null));
    h.advance();
    const b = await attempt(
      h,
      '203.0.113.7',
      { email: bob.email, password: bob.password, code: codeAt(bob.secret as string, stepOf(h.now.ms)) },
      cookie,
    );
    assert.equal(b.statusCode, 429, 'Bob, with Ada’s cookie, is in the general lane: full');
    assert.match(b.body, BUSY);
    const altered = await ownLogin(h, ada, '203.0.113.5', `${cookie.slice(0, -1)}${cookie.endsWith('A') ? 'B' : 'A'}`);
    assert.equal(altered.statusCode, 429, 'an altered cookie: the general lane');
    assert.equal((await ownLogin(h, ada, '203.0.113.5')).statusCode, 429, 'no cookie: the general lane');
    assert.equal((await ownLogin(h, ada, '203.0.113.5', cookie)).statusCode, 303, 'Ada, with her own cookie, takes a reserved place');
    for (const p of held) p?.release();
    assert.equal(q.held, 0);
  });

  it('a throttled client never holds a place: its logins at once leave room for a real one', async (t) => {
    const h = await buildConsole(t, dialect, { consoleHashes: 1 });
    const admin = await makeOperator(h, 'ada@example.com', 'admin');
    const from = '192.0.2.7';
    for (let i = 0; i < 20; i++) {
      assert.equal((await attempt(h, from, { email: `guess${i}@example.com`, password: 'a wrong guess' })).statusCode, 401);
    }
    // Thirty more at once from the throttled client (more than the queue's nine places), then the
    // operator's. The queue is watched: not one of the thirty takes a place, even for a moment.
    const q = hashingQueueOf(h.app.svc);
    const reserve = q.reserve.bind(q);
    let taken = 0;
    q.reserve = (who = {}) => {
      if (who.client === queueKey(from)) taken += 1;
      return reserve(who);
    };
    const throttled = Array.from({ length: 30 }, (_, i) => attempt(h, from, { email: `more${i}@example.com`, password: 'a wrong guess' }));
    const own = ownLogin(h, admin, '203.0.113.5');
    const answers = await Promise.all([...throttled, own]);
    const real = answers.pop();
    assert.equal(real?.statusCode, 303, `the operator is let in: ${real?.body.slice(0, 200)}`);
    for (const r of answers) {
      assert.equal(r.statusCode, 429);
      assert.doesNotMatch(r.body, BUSY, 'refused as throttled, never as busy');
    }
    assert.equal(taken, 0, 'a throttled client never took a place');
  });

  it('one network (an IPv4 /24, an IPv6 /64) holds one place at a time', async (t) => {
    const h = await buildConsole(t, dialect, { consoleHashes: 1 });
    const admin = await makeOperator(h, 'ada@example.com', 'admin');
    // Nine addresses of one /24 (each under its own limit) at once: one place between them, so the
    // rest are refused as busy and the queue keeps room for the operator from another network.
    const same = Array.from({ length: 9 }, (_, i) => attempt(h, `198.51.100.${i + 1}`, { email: `n${i}@example.com`, password: 'guess' }));
    const own = ownLogin(h, admin, '203.0.113.5');
    const answers = await Promise.all([...same, own]);
    assert.equal(answers.pop()?.statusCode, 303);
    assert.ok(answers.filter((r) => r.statusCode === 429 && BUSY.test(r.body)).length >= 1, 'the /24 held one place');
  });
});

describe('the hashing queue’s lanes', () => {
  it('one place per client network; reserved places for known devices, one per account; every place given back', () => {
    assert.equal(queueKey('198.51.100.7'), queueKey('198.51.100.200'));
    assert.notEqual(queueKey('198.51.100.7'), queueKey('198.51.101.7'));
    assert.equal(queueKey('::ffff:198.51.100.9'), queueKey('198.51.100.7'));
    assert.equal(queueKey('2001:db8::1'), queueKey('2001:db8:0:0:ffff::2'));
    const q = new HashingQueue(1, 2, 2);
    const a = q.reserve({ client: 'n1' });
    assert.ok(a);
    assert.equal(q.reserve({ client: 'n1' }), null, 'the network holds its place');
    const b = q.reserve({ client: 'n2' });
    const c = q.reserve({ client: 'n3' });
    assert.ok(b && c);
    assert.equal(q.reserve({ client: 'n4' }), null, 'the general lane is full');
    const k1 = q.reserve({ client: 'n4', knownDevice: 'op_1' });
    assert.ok(k1, 'a known device takes a reserved place');
    assert.equal(q.reserve({ client: 'n5', knownDevice: 'op_1' }), null, 'one reserved place per account; the general lane is full');
    const k2 = q.reserve({ client: 'n1', knownDevice: 'op_2' });
    assert.ok(k2);
    assert.equal(q.reserve({ client: 'n6', knownDevice: 'op_3' }), null, 'the reserved lane is full too');
    for (const p of [a, b, c, k1, k2]) p.release();
    assert.equal(q.held, 0);
    assert.ok(q.reserve({ client: 'n1' }));
  });

  it('a known device’s hashing goes ahead of the general lane’s waiting turns', async () => {
    const q = new HashingQueue(1, 4, 1);
    const order: string[] = [];
    const gates: Array<() => void> = [];
    const job = (name: string) => () =>
      new Promise<void>((resolve) => {
        order.push(name);
        gates.push(resolve);
      });
    const runs = ['g1', 'g2', 'g3'].map((n, i) => q.runOrRefuse(job(n), { client: `n${i}` }));
    const known = q.runOrRefuse(job('known'), { knownDevice: 'op_1' });
    while (order.length < 4) {
      await new Promise((resolve) => setImmediate(resolve));
      gates.shift()?.();
    }
    while (gates.length) gates.shift()?.();
    await Promise.all([...runs, known]);
    assert.deepEqual(order, ['g1', 'known', 'g2', 'g3']);
  });
});
