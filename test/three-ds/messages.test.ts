import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { it } from 'node:test';
import { eachDialect } from '../helpers/dialects.js';
import { acs, card, notifyTo } from './helpers/acs.js';
import { areq, aresProblems, detailElements, erroProblems, type Message, send } from './helpers/ds.js';

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`./fixtures/${name}.json`, import.meta.url), 'utf8')) as Message;

/** The golden AReq for a card and amount. */
function golden(c: { pan: string; expiry: string }, amount: string): Message {
  return JSON.parse(
    JSON.stringify(fixture('areq-browser-2.2.0')).replace('{{pan}}', c.pan).replace('{{expiry}}', c.expiry).replace('{{amount}}', amount),
  ) as Message;
}

const PLACEHOLDERS: Record<string, RegExp> = {
  '{{uuid}}': /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
  '{{authenticationValue}}': /^[A-Za-z0-9+/]{27}=$/,
};

/** The answer against its golden message, element by element: the same elements, each with the golden value (or its placeholder's shape). */
function matchesGolden(actual: Message, expected: Message) {
  assert.deepEqual(Object.keys(actual).sort(), Object.keys(expected).sort(), 'the same elements');
  for (const [name, want] of Object.entries(expected)) {
    const shape = typeof want === 'string' ? PLACEHOLDERS[want] : undefined;
    if (shape) assert.match(String(actual[name]), shape, name);
    else assert.deepEqual(actual[name], want, name);
  }
}

eachDialect('3-D Secure: golden messages and every Erro', (dialect) => {
  it('golden AReq → ARes: frictionless, challenge, refused (expiry), each element as recorded', async (t) => {
    const { h, url } = await acs(t, dialect);
    const c = await card(h);
    const y = (await send(url, golden(c, '2999'))).json ?? {};
    matchesGolden(y, fixture('ares-frictionless'));
    assert.deepEqual(aresProblems(y, golden(c, '2999')), []);
    await notifyTo(t, h);
    const ch = (await send(url, golden(c, '3001'))).json ?? {};
    matchesGolden(ch, fixture('ares-challenge'));
    const refused = golden({ ...c, expiry: c.expiry === '3001' ? '3002' : '3001' }, '100');
    matchesGolden((await send(url, refused)).json ?? {}, fixture('ares-refused-expiry'));
  });

  it('golden Erro: 201 naming the missing elements, 203 naming the badly formatted ones, 102 for a version it does not speak', async (t) => {
    const { h, url } = await acs(t, dialect);
    const c = await card(h);
    const missing = golden(c, '100');
    delete missing.notificationURL;
    delete missing.browserAcceptHeader;
    const e201 = (await send(url, missing)).json ?? {};
    matchesGolden(e201, fixture('erro-201'));
    assert.deepEqual(erroProblems(e201), []);
    const bad = { ...golden(c, '100'), cardExpiryDate: '2613', purchaseCurrency: 'EUR', browserColorDepth: '23' };
    matchesGolden((await send(url, bad)).json ?? {}, fixture('erro-203'));
    matchesGolden((await send(url, { ...golden(c, '100'), messageVersion: '2.3.1' })).json ?? {}, fixture('erro-102'));
    // Nothing was stored for a message refused.
    const rows = await h.db.database.db.selectFrom('three_ds_authentications').select('acs_trans_id').execute();
    assert.equal(rows.length, 0);
  });

  it('101 for what is not an AReq: not JSON, not an object, another message type, a wrong content type, a body too large', async (t) => {
    const { url } = await acs(t, dialect);
    const cases: Array<[string, string | Message, Record<string, string>?]> = [
      ['not JSON', '{"messageType": "AReq",'],
      ['an array', '[{"messageType":"AReq"}]'],
      ['a string', '"AReq"'],
      ['empty', ''],
      ['another message', { messageType: 'CReq', messageVersion: '2.2.0' }],
      ['no messageType', { messageVersion: '2.2.0' }],
      ['text/plain', JSON.stringify(areq({ pan: '4242424242424242', expiry: '3012' })), { 'content-type': 'text/plain' }],
      [
        'latin-1',
        JSON.stringify(areq({ pan: '4242424242424242', expiry: '3012' })),
        { 'content-type': 'application/json; charset=iso-8859-1' },
      ],
      ['gzip', JSON.stringify(areq({ pan: '4242424242424242', expiry: '3012' })), { 'content-encoding': 'gzip' }],
      ['__proto__', '{"messageType":"AReq","__proto__":{"polluted":1}}'],
      ['200 KiB', JSON.stringify({ ...areq({ pan: '4242424242424242', expiry: '3012' }), deviceInfo: 'A'.repeat(200 * 1024) })],
    ];
    for (const [what, body, headers] of cases) {
      const res = await send(url, body, headers ? { headers } : {});
      assert.equal(res.status, 200, what);
      assert.equal(res.json?.errorCode, '101', `${what}: ${res.text.slice(0, 200)}`);
      assert.deepEqual(erroProblems(res.json ?? {}), [], what);
    }
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  it('102 for a version it does not speak, 201 for a missing element of the channel or category, 202 for a critical extension, 203 and 204', async (t) => {
    const { url } = await acs(t, dialect);
    const base = () => areq({ pan: '4242424242424242', expiry: '3012' });
    const expect = async (m: Message | string, code: string, elements: string[]) => {
      const res = await send(url, m);
      assert.equal(res.status, 200);
      const erro = res.json ?? {};
      assert.deepEqual(erroProblems(erro), [], JSON.stringify(erro));
      assert.deepEqual([erro.errorCode, detailElements(erro)], [code, elements], JSON.stringify(erro));
      return erro;
    };
    for (const v of ['1.0.2', '2.3.1', '3.0.0']) {
      const erro = await expect({ ...base(), messageVersion: v }, '102', ['messageVersion']);
      assert.equal(erro.messageVersion, '2.2.0', 'the version the ACS speaks');
    }
    await expect({ ...base(), messageVersion: 'two' }, '203', ['messageVersion']);
    // The Erro carries the AReq's identifiers, and its version when the ACS speaks it.
    const m = base();
    delete m.acctNumber;
    const e = await expect(m, '201', ['acctNumber']);
    assert.deepEqual([e.threeDSServerTransID, e.dsTransID, e.messageVersion], [m.threeDSServerTransID, m.dsTransID, '2.2.0']);
    // Browser elements for a browser, the purchase for a payment, the SDK's for an app; 2.1.0 wants the expiry and the browser's screen.
    const browser = base();
    delete browser.browserUserAgent;
    delete browser.browserJavascriptEnabled;
    await expect(browser, '201', ['browserUserAgent', 'browserJavascriptEnabled']);
    const screen = base();
    delete screen.browserScreenHeight;
    await expect(screen, '201', ['browserScreenHeight']);
    // Without JavaScript the browser cannot tell its screen: not required then (an unknown card's ARes).
    const noJs = (await send(url, { ...screen, browserJavascriptEnabled: false })).json ?? {};
    assert.deepEqual([noJs.messageType, noJs.transStatusReason], ['ARes', '08']);
    const payment = base();
    delete payment.purchaseAmount;
    delete payment.mcc;
    await expect(payment, '201', ['purchaseAmount', 'mcc']);
    const app = areq({ pan: '4242424242424242', expiry: '3012', deviceChannel: '01' });
    delete app.sdkTransID;
    delete app.sdkEphemPubKey;
    await expect(app, '201', ['sdkTransID', 'sdkEphemPubKey']);
    const old = areq({ pan: '4242424242424242', expiry: null, version: '2.1.0' });
    await expect(old, '201', ['cardExpiryDate']);
    // Formats and lengths.
    await expect({ ...base(), acctNumber: '424242424242' }, '203', ['acctNumber']);
    await expect({ ...base(), purchaseAmount: '1'.repeat(49), purchaseDate: '20261301000000' }, '203', ['purchaseAmount']);
    await expect({ ...base(), purchaseDate: '20261301000000' }, '203', ['purchaseDate']);
    await expect({ ...base(), purchaseExponent: '3' }, '203', ['purchaseExponent']);
    await expect({ ...base(), merchantName: 'x'.repeat(41), acquirerBIN: '123456789012' }, '203', ['acquirerBIN', 'merchantName']);
    await expect({ ...base(), threeDSServerTransID: 'not-a-uuid' }, '203', ['threeDSServerTransID']);
    await expect({ ...base(), browserJavaEnabled: 'false', browserIP: '300.1.1.1' }, '203', ['browserJavaEnabled']);
    await expect({ ...base(), browserIP: '300.1.1.1' }, '203', ['browserIP']);
    await expect(
      { ...base(), threeDSRequestorChallengeInd: '05', messageVersion: '2.1.0', browserJavascriptEnabled: 'ignored in 2.1.0' },
      '203',
      ['threeDSRequestorChallengeInd'],
    );
    await expect({ ...base(), notificationURL: 'javascript:alert(1)' }, '203', ['notificationURL']);
    await expect({ ...base(), mcc: null }, '203', ['mcc']);
    await expect({ ...base(), merchantName: 'Shop\u0000' }, '203', ['merchantName']);
    await expect({ ...base(), messageExtension: [{ name: 'critical', id: 'EXT-42', criticalityIndicator: true, data: {} }] }, '202', [
      'EXT-42',
    ]);
    // A key repeated (a proxy could read one value, the ACS another): 204, the element named.
    const text = JSON.stringify(base()).replace('"mcc":"5732"', '"mcc":"5732","mcc":"6011"');
    await expect(text, '204', ['mcc']);
  });

  it('an https-only notificationURL in production: http is 203 there', async (t) => {
    const { url } = await acs(t, dialect, { env: 'production' });
    const res =
      (await send(url, areq({ pan: '4242424242424242', expiry: '3012', notificationURL: 'http://3dss.example.org/n' }))).json ?? {};
    assert.deepEqual([res.errorCode, res.errorDetail], ['203', 'notificationURL']);
    const https =
      (await send(url, areq({ pan: '4242424242424242', expiry: '3012', notificationURL: 'https://3dss.example.org/n' }))).json ?? {};
    assert.deepEqual([https.messageType, https.transStatusReason], ['ARes', '08']);
  });
});
