// The acceptance of wallet tokens (issue 45, "Done when"), black box over HTTP and TCP: a token
// service provider written from decisions §15 (./helpers/tsp.ts `tspAt`: plain JSON to the TSP
// endpoint; ../helpers/tsp.ts `tspSimulator`: the TSP's side of the service's calls), the
// merchant's callback receiver (signatures verified with the public standardwebhooks package), the
// merchant's signed operations, and an acquirer on the card network link built on the published
// iso_8583 package. The service runs as in production: its callback worker delivers, its reaper
// sends the calls to the TSP.
//
// It drives: green, yellow by code (a wrong code, then the right one), yellow by the merchant's app
// (tokenActivate), red; notifications (repeated, and one older than the newest arriving late); the
// card's freeze, unfreeze and close reaching its tokens and the TSP; payments with the token on the
// link (field 48 subelements 33/34): approved while active, declined while suspended.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { it, type TestContext } from 'node:test';
import { startTsp } from '../../src/tokens/listener.js';
import { build, randomStr, testConfig } from '../helpers/app.js';
import type { TestDialect } from '../helpers/db.js';
import { eachDialect } from '../helpers/dialects.js';
import { exchange } from '../helpers/iso8583-peer.js';
import { linkOf } from '../helpers/link.js';
import { noteSecret } from '../helpers/log-audit.js';
import { eventually } from '../helpers/receiver.js';
import { tspSimulator } from '../helpers/tsp.js';
import { card, notifyTo, type TestCard } from '../three-ds/helpers/acs.js';
import { type Json, provisionBody, tspAt } from './helpers/tsp.js';

async function world(t: TestContext, dialect: TestDialect) {
  const calls = await tspSimulator(t);
  const defaults = testConfig('');
  const h = await build(t, dialect, {
    callbacks: { ...defaults.callbacks, worker: true },
    tokens: { ...defaults.tokens, port: 0 },
    tspClient: { url: calls.url, cert: null, key: null },
    network: { ...defaults.network, deadlineMs: 15_000 },
  });
  const server = await startTsp(h.app.svc);
  assert.ok(server, 'the TSP endpoint listens');
  t.after(() => server.stop());
  const tsp = tspAt(`http://127.0.0.1:${server.port}`);
  const merchant = await notifyTo(t, h);
  /** The merchant's verified callbacks of a type about a token. */
  const callbacks = (type: string, tokenId: string) =>
    merchant.received.filter((r) => r.body.type === type && (r.body.tokenId ?? r.body.token?.tokenId) === tokenId);
  const callback = async (type: string, tokenId: string, where: (b: Json) => boolean = () => true) => {
    await eventually(() => callbacks(type, tokenId).some((r) => where(r.body)), 15_000, `${type} for ${tokenId}`);
    const got = callbacks(type, tokenId).find((r) => where(r.body));
    assert.equal(got?.verified, true, 'signed by the program (standardwebhooks)');
    if (typeof got?.body.code === 'string') noteSecret('otp', got.body.code);
    return got?.body as Json;
  };
  /** The TSP took the service's call for a token (sent by the service's own reaper). */
  const told = async (tokenReferenceId: string, action: string) =>
    eventually(
      () => calls.taken().some((c) => c.tokenReferenceId === tokenReferenceId && c.action === action),
      15_000,
      `${action} for ${tokenReferenceId} at the TSP`,
    );
  const op = async (path: string, body: Json) => {
    const res = await h.call(`/api/network/${path}.html`, { ...body, randomStr: randomStr() });
    assert.equal(res.status, 200, `${path}: ${JSON.stringify(res.body)}`);
    return res.body.model as Json;
  };
  return { h, tsp, calls, merchant, callback, told, op };
}

/** A provisioning request for the card, answered 200 with a decision. */
async function provision(w: Awaited<ReturnType<typeof world>>, c: TestCard, extra: Json = {}) {
  noteSecret('pan', c.pan);
  const body = provisionBody(c, extra);
  const res = await w.tsp.provision(body);
  assert.equal(res.status, 200, res.text);
  return { body, answer: res.json };
}

eachDialect('wallet tokens: the acceptance (black-box TSP, merchant, acquirer)', (dialect) => {
  it('green, yellow by code and by app, red; notifications; the card’s life; payments with the token on the link', async (t) => {
    const w = await world(t, dialect);
    const { h } = w;
    const a = await card(h);
    const b = await card(h);
    let at = Date.now();
    const later = () => {
      at += 1000;
      return new Date(at).toISOString();
    };

    // 1. Green: approved at once, the merchant told.
    const green = await provision(w, a, { walletRiskScore: 1 });
    assert.deepEqual([green.answer.decision, green.answer.reason], ['approve', undefined]);
    assert.match(green.answer.tokenId, /^tok_/);
    const tokenA = green.answer.tokenId as string;
    const refA = green.body.tokenReferenceId as string;
    assert.equal((await w.callback('token.updated', tokenA)).token.status, 'active');
    // The same request again: the same answer, no second token.
    assert.deepEqual((await w.tsp.provision(green.body)).json, green.answer);

    // 2. Yellow by code: the merchant delivers the code; a wrong one counts, the right one activates.
    const yellow = await provision(w, b, { walletRiskScore: 5 });
    assert.deepEqual([yellow.answer.decision, yellow.answer.reason], ['require_authentication', 'wallet_risk']);
    const methods = yellow.answer.authenticationMethods as Array<{ id: string; type: string; value: string }>;
    assert.deepEqual(
      methods.map((m) => m.type),
      ['otp_sms', 'otp_email'],
    );
    for (const m of methods) assert.match(m.value, /•••/, 'masked');
    const tokenB = yellow.answer.tokenId as string;
    const refB = yellow.body.tokenReferenceId as string;
    assert.equal((await w.tsp.activationCode({ tokenReferenceId: refB, methodId: methods[0]?.id })).status, 200);
    const otp = await w.callback('token.otp', tokenB);
    assert.deepEqual([otp.method, otp.cardId, otp.walletProvider], ['otp_sms', b.cardId, 'apple_pay']);
    const wrongCode = String((Number(otp.code) + 1) % 1_000_000).padStart(6, '0');
    assert.deepEqual((await w.tsp.verify({ tokenReferenceId: refB, code: wrongCode })).json.valid, false);
    const right = await w.tsp.verify({ tokenReferenceId: refB, code: otp.code });
    assert.deepEqual([right.json.valid, right.json.attemptsLeft], [true, 2]);
    assert.equal((await w.op('tokenQuery', { tokenId: tokenB })).status, 'active');
    await w.callback('token.updated', tokenB, (bd) => bd.token.status === 'active');

    // 3. Yellow by the merchant's app: only `app` offered; the merchant's tokenActivate; the TSP told.
    await w.op('tokenSettingsUpdate', { methods: ['app'] });
    const byApp = await provision(w, b, { walletRiskScore: 5, walletProvider: 'google_pay', tokenRequestorName: 'Google Pay' });
    assert.deepEqual(
      (byApp.answer.authenticationMethods as Array<{ type: string }>).map((m) => m.type),
      ['app'],
    );
    const tokenApp = byApp.answer.tokenId as string;
    assert.equal((await w.op('tokenActivate', { tokenId: tokenApp })).status, 'active');
    await w.told(byApp.body.tokenReferenceId, 'activate');
    await w.op('tokenSettingsUpdate', { methods: null });

    // 4. Red: risky, or no such card: no token.
    const red = await provision(w, a, { walletRiskScore: 8 });
    assert.deepEqual([red.answer.decision, red.answer.reason, red.answer.tokenId], ['decline', 'wallet_risk', undefined]);
    const nobody = await w.tsp.provision(provisionBody({ pan: `${a.pan.slice(0, 6)}0000000000`, expiry: a.expiry }));
    assert.equal(nobody.json.decision, 'decline');

    // 5. Payments with token A on the link (field 48 subelements 33, 34), contactless with the phone.
    const link = await linkOf(t, h);
    const socket = connect(link.port, '127.0.0.1');
    t.after(() => socket.destroy());
    await new Promise((resolve) => socket.once('connect', resolve));
    let stan = 470_000;
    const pay = (c: TestCard, minor: number, ref: string, requestor = '40010030273') => {
      stan += 1;
      return exchange(socket, {
        0: '0100',
        2: c.pan,
        3: '000000',
        4: String(minor).padStart(12, '0'),
        7: '1127120000',
        11: String(stan),
        12: '120000',
        13: '1127',
        14: c.expiry,
        18: '5411',
        22: '071',
        32: '987654',
        37: `WALLET${stan}`,
        41: 'TERM0001',
        42: 'ACCEPTOR0000001',
        43: 'Corner Grocery           Berlin       DE',
        48: `33${String(ref.length).padStart(2, '0')}${ref}3411${requestor}`,
        49: '978',
      });
    };
    const first = await pay(a, 1250, refA);
    assert.deepEqual([first['0'], first['39']], ['0110', '00'], JSON.stringify(first));
    const approvedId = (
      await h.db.database.db
        .selectFrom('authorizations')
        .select('id')
        .where('card_id', '=', a.cardId)
        .where('approved', '=', 1)
        .executeTakeFirstOrThrow()
    ).id;
    const shown = await w.op('tradeQuery', { tradeId: approvedId });
    assert.deepEqual(shown.token, { tokenId: tokenA, walletProvider: 'apple_pay', device: { type: 'phone', name: 'Anna’s iPhone' } });

    // 6. Notifications from the TSP: suspended (repeated: one change), an older one late (ignored), resumed.
    const suspendedAt = later();
    const olderAt = new Date(Date.parse(suspendedAt) - 500).toISOString();
    const s1 = await w.tsp.notify({ tokenReferenceId: refA, event: 'suspended', at: suspendedAt, reason: 'device reported lost' });
    assert.deepEqual([s1.status, s1.json.status], [200, 'suspended']);
    assert.equal((await w.tsp.notify({ tokenReferenceId: refA, event: 'suspended', at: suspendedAt })).json.status, 'suspended');
    assert.equal((await pay(a, 300, refA))['39'], '05', 'a suspended token declines');
    assert.equal((await w.tsp.notify({ tokenReferenceId: refA, event: 'resumed', at: later() })).json.status, 'active');
    assert.equal((await w.tsp.notify({ tokenReferenceId: refA, event: 'suspended', at: olderAt })).json.status, 'active', 'stale');
    const tokA = await w.op('tokenQuery', { tokenId: tokenA });
    assert.deepEqual(
      tokA.history.map((e: Json) => `${e.status}/${e.source}`),
      ['active/tsp', 'suspended/tsp', 'active/tsp'],
    );
    assert.equal((await pay(a, 300, refA))['39'], '00');
    assert.ok(!w.calls.calls.some((c) => c.tokenReferenceId === refA), 'the TSP is not told of its own changes');

    // 7. The card's life: freeze suspends (the TSP told), unfreeze resumes, close deletes.
    await w.op('cardFreeze', { cardId: a.cardId });
    await w.told(refA, 'suspend');
    assert.deepEqual(
      [(await w.op('tokenQuery', { tokenId: tokenA })).status, (await w.op('tokenQuery', { tokenId: tokenA })).history.at(-1).source],
      ['suspended', 'card'],
    );
    assert.equal((await pay(a, 300, refA))['39'], '62', 'the frozen card decides first');
    await w.op('cardUnfreeze', { cardId: a.cardId });
    await w.told(refA, 'resume');
    assert.equal((await pay(a, 300, refA))['39'], '00');
    await w.callback('token.updated', tokenA, (bd) => bd.token.status === 'active' && bd.token.history.length === 5);
    await w.op('cardClose', { cardId: a.cardId });
    await w.told(refA, 'delete');
    assert.equal((await w.op('tokenQuery', { tokenId: tokenA })).status, 'deleted');
    await w.callback('token.updated', tokenA, (bd) => bd.token.status === 'deleted');
    // Deleted is final: the TSP's late resume changes nothing.
    assert.equal((await w.tsp.notify({ tokenReferenceId: refA, event: 'resumed', at: later() })).json.status, 'deleted');

    // Token B's payments still go through; with another requestor, unknown.
    assert.equal((await pay(b, 500, refB))['39'], '00');
    assert.equal((await pay(b, 500, refB, '99999999999'))['39'], '05');
  });
});
