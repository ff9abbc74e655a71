// The acceptance of the ACS (issue 41, "Done when"), black box over HTTP and TCP: a directory server
// and a 3DS Server written from EMVCo's element names (./helpers/ds.ts, ./helpers/challenge-sim.ts:
// none of this project's types), a cardholder's browser that follows the challenge page's forms, the
// merchant's callback receiver (signatures verified with the public standardwebhooks package) and an
// acquirer on the card network link built on the published iso_8583 package. The service runs as in
// production: its callback worker and its 3-D Secure passes on (the RReqs go out on their own).
//
// It drives: frictionless; a challenge by one-time code (the code from the merchant's threeDs.otp
// callback typed into the page, and once through the sandbox's complete) and out of band (the
// merchant's threeDsChallengeRespond); refusals; Erros; the low-value exemption counted across
// authentications; and the authentication value on the link: approved once, refused when reused.
import assert from 'node:assert/strict';
import { type AddressInfo, connect, createServer } from 'node:net';
import { it, type TestContext } from 'node:test';
import { randomStr, testConfig } from '../helpers/app.js';
import type { TestDialect } from '../helpers/db.js';
import { eachDialect } from '../helpers/dialects.js';
import { exchange } from '../helpers/iso8583-peer.js';
import { linkOf } from '../helpers/link.js';
import { noteSecret } from '../helpers/log-audit.js';
import { eventually } from '../helpers/receiver.js';
import { acs, card, notifyTo } from './helpers/acs.js';
import { creq, cresProblems, directoryServer, type Message, rreqProblems, threeDsServer } from './helpers/challenge-sim.js';
import { areq, aresProblems, detailElements, erroProblems, send } from './helpers/ds.js';

// ─── The cardholder's browser: posts forms and follows the page's own ───

interface Page {
  url: string;
  status: number;
  html: string;
  headers: Headers;
}

async function post(url: string, fields: Record<string, string>): Promise<Page> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
    redirect: 'manual',
  });
  return { url, status: res.status, html: await res.text(), headers: res.headers };
}

const unHtml = (s: string) =>
  s
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&#(\d+);/g, (_, n) => String.fromCharCode(Number(n)));

/** The page's forms: where each posts (resolved against the page) and its hidden fields. */
function forms(page: Page): Array<{ action: string; fields: Record<string, string> }> {
  return [...page.html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/g)].map(([, attrs = '', inner = '']) => {
    const action = unHtml(/action="([^"]*)"/.exec(attrs)?.[1] ?? '');
    const fields: Record<string, string> = {};
    for (const [, input = ''] of inner.matchAll(/<input\b([^>]*)>/g)) {
      if (!/type="hidden"/.test(input)) continue;
      const name = /name="([^"]+)"/.exec(input)?.[1];
      if (name) fields[name] = unHtml(/value="([^"]*)"/.exec(input)?.[1] ?? '');
    }
    return { action: new URL(action, page.url).toString(), fields };
  });
}

/** Submits the page's form that posts to a path ending so (the code form, the out-of-band check…), with fields the cardholder typed. */
function submit(page: Page, pathEnd: string, typed: Record<string, string> = {}): Promise<Page> {
  const form = forms(page).find((f) => new URL(f.action).pathname.endsWith(pathEnd));
  assert.ok(form, `a form to …${pathEnd} on ${page.url}: ${page.html.slice(0, 300)}`);
  return post(form.action, { ...form.fields, ...typed });
}

/** The last page's self-submitting CRes form, posted where it says (the 3DS Server's notificationURL). */
async function postCRes(page: Page): Promise<{ to: string; cres: Message }> {
  const form = forms(page).find((f) => 'cres' in f.fields);
  assert.ok(form, `the CRes form: ${page.html.slice(0, 400)}`);
  const answer = await post(form.action, form.fields);
  assert.equal(answer.status, 200);
  return { to: form.action, cres: JSON.parse(Buffer.from(form.fields.cres as string, 'base64url').toString('utf8')) as Message };
}

// ─── The world ───

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function world(t: TestContext, dialect: TestDialect) {
  const ds = await directoryServer(t);
  const shop = await threeDsServer(t);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const defaults = testConfig('');
  const { h, url } = await acs(t, dialect, {
    publicUrl: base,
    // As in production: the service delivers callbacks and runs the ACS's passes (RReq, expiry) itself.
    callbacks: { ...defaults.callbacks, worker: true },
    threeDs: { ...defaults.threeDs, port: 0, ds: { url: ds.url, cert: null, key: null } },
    network: { ...defaults.network, deadlineMs: 15_000 },
  });
  await h.app.listen({ port, host: '127.0.0.1' });
  const merchant = await notifyTo(t, h);
  /** The merchant's callbacks of a type for an authentication, each verified. */
  const callbacks = (type: string, acsTransID: unknown) =>
    merchant.received.filter((r) => r.body.type === type && r.body.acsTransID === acsTransID);
  const callback = async (type: string, acsTransID: unknown) => {
    await eventually(() => callbacks(type, acsTransID).length > 0, 10_000, `${type} for ${String(acsTransID)}`);
    const got = callbacks(type, acsTransID)[0];
    assert.equal(got?.verified, true, 'signed by the program (standardwebhooks)');
    return got?.body as Record<string, any>;
  };
  /** The DS's RReq for an authentication, sent by the service's own pass. */
  const rreq = async (acsTransID: unknown) => {
    await eventually(() => ds.rreqs.some((m) => m.acsTransID === acsTransID), 15_000, `the RReq for ${String(acsTransID)}`);
    const m = ds.rreqs.find((r) => r.acsTransID === acsTransID) as Message;
    assert.deepEqual(rreqProblems(m), []);
    return m;
  };
  /** An AReq from the DS: the ARes checked element by element against EMVCo's formats. */
  const authenticate = async (c: { pan: string; expiry: string }, o: Partial<Parameters<typeof areq>[0]> = {}) => {
    const request = areq({ pan: c.pan, expiry: c.expiry, notificationURL: shop.notificationURL, ...o });
    const res = await send(url, request);
    assert.equal(res.status, 200);
    const ares = res.json ?? {};
    if (ares.messageType === 'ARes') assert.deepEqual(aresProblems(ares, request), [], JSON.stringify(ares));
    if (typeof ares.authenticationValue === 'string') noteSecret('authentication-value', ares.authenticationValue);
    return ares;
  };
  /** The 3DS Server opens the challenge: its checkout posts the CReq to the ACS's acsURL. */
  const openChallenge = async (ares: Message) => {
    assert.equal(ares.transStatus, 'C', JSON.stringify(ares));
    assert.equal(new URL(String(ares.acsURL)).origin, base, 'acsURL is the public URL');
    const page = await post(String(ares.acsURL), { creq: creq(ares, '03'), threeDSSessionData: 'YWNjZXB0YW5jZQ' });
    assert.equal(page.status, 200, page.html.slice(0, 300));
    assert.equal(page.headers.get('x-frame-options'), null, 'framable');
    return page;
  };
  const settings = (challengeMethod: 'otp' | 'oob') =>
    h.call('/api/network/threeDsSettingsUpdate.html', { challengeMethod, randomStr: randomStr() });
  return { ds, shop, h, url, base, merchant, callback, rreq, authenticate, openChallenge, settings };
}

eachDialect('3-D Secure: the acceptance of the ACS (black-box DS, 3DS Server, browser, merchant and acquirer)', (dialect) => {
  it('frictionless, challenges (OTP through the page and the sandbox’s complete, out of band), refusals, Erros, the exemption counted, the value on the link once', async (t) => {
    const w = await world(t, dialect);
    const { h } = w;
    const a = await card(h);
    const b = await card(h);
    const c = await card(h);

    // 1. Frictionless under the low-value exemption: Y, ECI 05 (Visa), a 28-character value.
    const a1 = await w.authenticate(a, { amount: '2500' });
    assert.deepEqual([a1.transStatus, a1.eci, String(a1.authenticationValue).length], ['Y', '05', 28]);

    // 2. The exemption counted across authentications: 5 and 100.00 EUR since the last successful challenge.
    for (const amount of ['2000', '2000', '2000']) assert.equal((await w.authenticate(a, { amount })).transStatus, 'Y', amount);
    const past100 = await w.authenticate(a, { amount: '2000' });
    assert.equal(past100.transStatus, 'C', '85.00 + 20.00 would pass 100.00 EUR');
    assert.equal((await w.authenticate(a, { amount: '1500' })).transStatus, 'Y', 'the fifth, 100.00 EUR in all');
    const sixth = await w.authenticate(a, { amount: '100' });
    assert.equal(sixth.transStatus, 'C', 'the sixth');
    assert.equal((await w.authenticate(a, { amount: '3001' })).transStatus, 'C', 'above 30.00 EUR');
    // The sixth's challenge, finished through the sandbox's complete with the code the merchant got.
    const sixthOtp = await w.callback('threeDs.otp', sixth.acsTransID);
    assert.match(String(sixthOtp.code), /^\d{6}$/);
    noteSecret('otp', String(sixthOtp.code));
    const completed = await h.call('/sandbox/3ds/complete', { acsTransID: sixth.acsTransID, otp: sixthOtp.code, randomStr: randomStr() });
    assert.equal(completed.body.model?.authentication?.transStatus, 'Y', JSON.stringify(completed.body));
    assert.equal((await w.rreq(sixth.acsTransID)).transStatus, 'Y');
    assert.equal((await w.authenticate(a, { amount: '1000' })).transStatus, 'Y', 'a successful challenge starts the count again');

    // 3. A challenge by one-time code in the page: the code from the merchant's threeDs.otp, a wrong one first.
    const b1 = await w.authenticate(b, { amount: '12000', challengeInd: '04' });
    assert.deepEqual([b1.transStatus, b1.authenticationType, b1.acsChallengeMandated], ['C', '02', 'Y']);
    const otp = await w.callback('threeDs.otp', b1.acsTransID);
    noteSecret('otp', String(otp.code));
    assert.deepEqual([otp.cardId, otp.amount, otp.currency, otp.merchantName], [b.cardId, 120, 'EUR', 'Elektro Laden']);
    const page = await w.openChallenge(b1);
    assert.match(page.html, /Elektro Laden/);
    assert.ok(!page.html.includes(String(otp.code)), 'the page never shows the code');
    const wrong = await submit(page, '/3ds/challenge/otp', { code: String((Number(otp.code) + 1) % 1_000_000).padStart(6, '0') });
    assert.match(wrong.html, /role="alert"/);
    const right = await submit(wrong, '/3ds/challenge/otp', { code: String(otp.code) });
    const b1End = await postCRes(right);
    assert.equal(b1End.to, w.shop.notificationURL);
    assert.deepEqual(cresProblems(b1End.cres), []);
    assert.deepEqual([b1End.cres.transStatus, b1End.cres.acsTransID], ['Y', b1.acsTransID]);
    assert.deepEqual(
      w.shop.cres.map((r) => [r.cres.acsTransID, r.cres.transStatus, r.threeDSSessionData]),
      [[b1.acsTransID, 'Y', 'YWNjZXB0YW5jZQ']],
    );
    const b1Result = await w.rreq(b1.acsTransID);
    assert.deepEqual(
      [b1Result.transStatus, b1Result.eci, b1Result.authenticationType, b1Result.interactionCounter],
      ['Y', '05', '02', '02'],
    );
    noteSecret('authentication-value', String(b1Result.authenticationValue));
    assert.equal((await w.callback('threeDs.result', b1.acsTransID)).transStatus, 'Y');
    // The creq again (a replay): an error page, nothing changes.
    const replay = await post(String(b1.acsURL), { creq: creq(b1, '03') });
    assert.equal(replay.status, 409);

    // 4. Out of band: the merchant's app approves (threeDsChallengeRespond); the page, asked again, ends it.
    assert.equal((await w.settings('oob')).status, 200);
    const b2 = await w.authenticate(b, { amount: '5000', challengeInd: '04' });
    assert.deepEqual([b2.transStatus, b2.authenticationType], ['C', '03']);
    const asked = await w.callback('threeDs.challenge', b2.acsTransID);
    assert.equal(asked.code, undefined, 'no code out of band');
    const waiting = await w.openChallenge(b2);
    assert.match(waiting.html, /http-equiv="refresh"/);
    const answered = await h.call('/api/network/threeDsChallengeRespond.html', {
      acsTransID: b2.acsTransID,
      result: 'approved',
      randomStr: randomStr(),
    });
    assert.equal(answered.body.model?.transStatus, 'Y', JSON.stringify(answered.body));
    const b2End = await postCRes(await submit(waiting, '/3ds/challenge/status'));
    assert.equal(b2End.cres.transStatus, 'Y');
    assert.deepEqual([(await w.rreq(b2.acsTransID)).transStatus, (await w.rreq(b2.acsTransID)).authenticationType], ['Y', '03']);
    // Declined in the app: N/01, to the 3DS Server and to the DS.
    const b3 = await w.authenticate(b, { amount: '5000', challengeInd: '04' });
    await w.callback('threeDs.challenge', b3.acsTransID);
    const b3Page = await w.openChallenge(b3);
    await h.call('/api/network/threeDsChallengeRespond.html', { acsTransID: b3.acsTransID, result: 'declined', randomStr: randomStr() });
    assert.equal((await postCRes(await submit(b3Page, '/3ds/challenge/status'))).cres.transStatus, 'N');
    assert.deepEqual([(await w.rreq(b3.acsTransID)).transStatus, (await w.rreq(b3.acsTransID)).transStatusReason], ['N', '01']);
    await w.settings('otp');

    // 5. Refusals: an unknown card, another expiry, a frozen card, requestor-initiated.
    const refused = async (o: Parameters<typeof w.authenticate>[1], card0: { pan: string; expiry: string }, reason: string) => {
      const ares = await w.authenticate(card0, o);
      assert.deepEqual([ares.messageType, ares.transStatus, ares.transStatusReason], ['ARes', 'N', reason], JSON.stringify(ares));
      assert.equal(ares.authenticationValue, undefined);
      assert.equal(ares.eci, '07', 'Visa, not authenticated');
    };
    await refused({}, { pan: `${c.pan.slice(0, 6)}0000000000`, expiry: c.expiry }, '08');
    await refused({}, { pan: c.pan, expiry: c.expiry === '3012' ? '3011' : '3012' }, '01');
    await refused({ deviceChannel: '03' }, c, '21');
    assert.equal((await h.call('/api/network/cardFreeze.html', { cardId: c.cardId, randomStr: randomStr() })).status, 200);
    await refused({}, c, '12');

    // 6. Erros: a required element missing (201), a notificationURL that is a script (203), a version not spoken (102).
    const erro = async (message: Message, code: string, elements: string[]) => {
      const res = await send(w.url, message);
      assert.equal(res.status, 200, 'HTTP 200 whatever the answer');
      const m = res.json ?? {};
      assert.deepEqual(erroProblems(m), [], JSON.stringify(m));
      assert.deepEqual([m.messageType, m.errorCode, m.errorComponent], ['Erro', code, 'A']);
      assert.deepEqual(detailElements(m), elements);
    };
    const noPan = areq({ pan: b.pan, expiry: b.expiry });
    delete noPan.acctNumber;
    await erro(noPan, '201', ['acctNumber']);
    await erro(areq({ pan: b.pan, expiry: b.expiry, notificationURL: 'javascript:alert(document.cookie)' }), '203', ['notificationURL']);
    await erro({ ...areq({ pan: b.pan, expiry: b.expiry }), messageVersion: '2.3.1' }, '102', ['messageVersion']);

    // 7. The value on the link: the 0100 an acquirer sends after 3-D Secure, field 48 subelements 42/43.
    const link = await linkOf(t, h);
    const socket = connect(link.port, '127.0.0.1');
    t.after(() => socket.destroy());
    await new Promise((resolve) => socket.once('connect', resolve));
    const details = async (cardId: string) => {
      const res = await h.call('/sandbox/network/cardDetails', { cardId, randomStr: randomStr() });
      noteSecret('cvv', String(res.body.model.cvv));
      return res.body.model as { cardNo: string; expiry: string };
    };
    let stan = 430_000;
    const authorization = async (cardId: string, minor: number, eci: unknown, value: unknown) => {
      const d = await details(cardId);
      const [mm, yy] = d.expiry.split('/');
      stan += 1;
      return exchange(socket, {
        0: '0100',
        2: d.cardNo,
        3: '000000',
        4: String(minor).padStart(12, '0'),
        7: '1127120000',
        11: String(stan),
        12: '120000',
        13: '1127',
        14: `${yy}${mm}`,
        18: '5732',
        22: '812',
        32: '987654',
        37: `ACC3DS${stan}`,
        41: 'ACCTERM1',
        42: 'ACCEPTANCE0001 ',
        43: 'Elektro Laden            Munich       DE',
        48: `4202${String(eci)}4328${String(value)}`,
        49: '978',
      });
    };
    const first = await authorization(a.cardId, 2500, a1.eci, a1.authenticationValue);
    assert.deepEqual([first['0'], first['39']], ['0110', '00'], 'the frictionless value, for its amount');
    const reuse = await authorization(a.cardId, 100, a1.eci, a1.authenticationValue);
    assert.equal(reuse['39'], '05', 'used once');
    const fromChallenge = await authorization(b.cardId, 12000, b1Result.eci, b1Result.authenticationValue);
    assert.equal(fromChallenge['39'], '00', 'the challenge’s value (the RReq’s)');
    assert.equal((await authorization(b.cardId, 12000, b1Result.eci, b1Result.authenticationValue))['39'], '05');
    const trades = await h.call('/api/network/threeDsQuery.html', { acsTransID: a1.acsTransID, randomStr: randomStr() });
    assert.equal(trades.body.model.tradeIds.length, 2, 'the approval and the refused reuse, listed with the authentication');
  });
});
