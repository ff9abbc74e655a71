// A sandbox 1006 answers what the service signed (never the secret); production keeps the bare
// message. docs/errors.md "Signature errors in the sandbox".
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { hmacSign, signingString } from '../src/http/signing.js';
import { build, randomStr, rowCounts } from './helpers/app.js';
import { eachDialect } from './helpers/dialects.js';

const QUERY = '/api/network/cardQuery.html';
const LIST = '/api/network/networkAuthTradeList.html';

eachDialect('signature failures explained in the sandbox', (dialect) => {
  it('an empty cardId left in the signed string: the answer shows the string without it, and no secret', async (t) => {
    const h = await build(t, dialect);
    const before = await rowCounts(h);
    const body = { appId: h.merchant.appId, cardId: '', randomStr: randomStr() };
    // The merchant's mistake: it signed "cardId=" although empty values are left out.
    const wrong = `appId=${body.appId}&cardId=&randomStr=${body.randomStr}`;
    const res = await h.call(QUERY, { ...body, sign: hmacSign(h.merchant.secret, wrong) }, { raw: true });
    assert.equal(res.status, 401);
    assert.equal(res.body.code, '1006');
    assert.equal(res.body.msg, 'Signature error');
    assert.deepEqual(res.body.detail, {
      signingString: signingString(body),
      signedFields: ['appId', 'randomStr'],
      unsignedFields: ['cardId', 'sign'],
      signType: 'HMAC-SHA256',
    });
    assert.equal(res.body.detail.signingString, `appId=${body.appId}&randomStr=${body.randomStr}`);
    assert.doesNotMatch(JSON.stringify(res.body), new RegExp(h.merchant.secret));
    assert.deepEqual(await rowCounts(h), before);
  });

  it('a wrong secret, and a missing sign: the same detail; a card number in it is masked', async (t) => {
    const h = await build(t, dialect);
    const body = {
      appId: h.merchant.appId,
      cardNo: '4000001234567899',
      beginDate: '2026-01-01',
      endDate: '2026-01-31',
      start: 0,
      randomStr: randomStr(),
    };
    for (const sign of [hmacSign('sk_test_not_the_secret', signingString(body)), undefined]) {
      const res = await h.call(LIST, { ...body, sign }, { raw: true });
      assert.equal(res.status, 401);
      assert.equal(res.body.code, '1006');
      const detail = res.body.detail;
      assert.equal(detail.signingString, signingString({ ...body, cardNo: '************7899' }));
      assert.deepEqual(detail.signedFields, ['appId', 'beginDate', 'cardNo', 'endDate', 'randomStr', 'start']);
      assert.doesNotMatch(JSON.stringify(res.body), /4000001234567899/);
      assert.doesNotMatch(JSON.stringify(res.body), new RegExp(h.merchant.secret));
    }
  });

  it('production answers the bare envelope, and so does the login-free page operation (4.4) in the sandbox', async (t) => {
    const prod = await build(t, dialect, { env: 'production' });
    const body = { appId: prod.merchant.appId, cardId: 'card_x', randomStr: randomStr() };
    const res = await prod.call(QUERY, { ...body, sign: 'f'.repeat(64) }, { raw: true });
    assert.equal(res.status, 401);
    const { traceId: _t, ...rest } = res.body;
    assert.deepEqual(rest, { code: '1006', msg: 'Signature error', model: null, success: false, error: true });

    const h = await build(t, dialect);
    const link = await h.call(
      '/open/merchant/api/v2',
      { appId: h.merchant.appId, email: 'a@example.com', sign: 'f'.repeat(64) },
      { raw: true },
    );
    assert.equal(link.status, 401);
    assert.equal(link.body.detail, undefined);
  });
});
