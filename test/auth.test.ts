import assert from 'node:assert/strict';
import { generateKeyPairSync, sign as rsaSign } from 'node:crypto';
import { it } from 'node:test';
import { hmacSign, signingString } from '../src/http/signing.js';
import { createMerchant } from '../src/merchants/create.js';
import { updateMerchant } from '../src/merchants/manage.js';
import { runVerb } from '../src/runner.js';
import { build, holderBody, randomStr, rowCounts, sign } from './helpers/app.js';
import { balances, fundedCard } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';

const CREATE = '/api/network/holderCreate.html';

function assertEnvelope(body: Record<string, unknown>, code: string) {
  assert.equal(body.code, code);
  assert.equal(body.success, false);
  assert.equal(body.error, true);
  assert.equal(body.model, null);
  assert.match(String(body.traceId), /^[0-9a-f]{32}$/);
}

eachDialect('authentication (decisions §3)', (dialect) => {
  it('a wrong, missing or malformed sign is 1006 "Signature error" and writes nothing', async (t) => {
    const h = await build(t, dialect);
    const before = await rowCounts(h);
    const signed = sign(holderBody(), h.merchant);
    const cases: Record<string, unknown>[] = [
      { ...signed, sign: `${String(signed.sign).slice(0, 63)}${String(signed.sign).endsWith('0') ? '1' : '0'}` },
      { ...signed, sign: undefined },
      { ...signed, sign: '' },
      { ...signed, sign: 'not-hex' },
      { ...signed, sign: 12345 },
      { ...signed, sign: 'a'.repeat(513) },
      { ...signed, idno: 'TAMPERED1' },
      { ...signed, sign: hmacSign('sk_test_wrong', signingString({ ...signed, sign: undefined })) },
    ];
    for (const body of cases) {
      const res = await h.call(CREATE, body, { raw: true });
      assert.equal(res.status, 401);
      assertEnvelope(res.body, '1006');
      assert.equal(res.body.msg, 'Signature error');
    }
    assert.deepEqual(await rowCounts(h), before);
  });

  it('an unknown or disabled appId is 2601', async (t) => {
    const h = await build(t, dialect);
    const unknown = await h.call(CREATE, holderBody({ appId: 'mch_doesnotexist0000' }));
    assert.equal(unknown.status, 401);
    assertEnvelope(unknown.body, '2601');
    await runVerb(h.app.svc, updateMerchant, { input: { appId: h.merchant.appId, status: 'disabled' }, actor: 'test' });
    const disabled = await h.call(CREATE, holderBody());
    assertEnvelope(disabled.body, '2601');
    await runVerb(h.app.svc, updateMerchant, { input: { appId: h.merchant.appId, status: 'active' }, actor: 'test' });
    assert.equal((await h.call(CREATE, holderBody())).status, 200);
  });

  it('appId missing, not a string or longer than 32 characters is a 1002 naming appId', async (t) => {
    const h = await build(t, dialect);
    const number = await h.call(CREATE, { ...holderBody(), appId: 5, sign: 'x' }, { raw: true });
    assert.equal(number.body.msg, 'appId: must be a string');
    const missing = await h.call(CREATE, { ...holderBody(), sign: 'x' }, { raw: true });
    assertEnvelope(missing.body, '1002');
    assert.match(missing.body.msg, /^appId: /);
    const long = await h.call(CREATE, { ...holderBody(), appId: 'm'.repeat(33), sign: 'x' }, { raw: true });
    assertEnvelope(long.body, '1002');
    assert.match(long.body.msg, /^appId: must be at most 32/);
  });

  it('another merchant’s signature is refused', async (t) => {
    const h = await build(t, dialect);
    const other = await h.newMerchant();
    // Signed with the other merchant's secret but naming our appId.
    const body = { ...holderBody(), appId: h.merchant.appId };
    const res = await h.call(CREATE, { ...body, sign: hmacSign(other.secret, signingString(body)) }, { raw: true });
    assertEnvelope(res.body, '1006');
  });

  it('timestamp: signed, accepted inside 5 minutes, 1007 outside, 1002 when not an integer', async (t) => {
    const h = await build(t, dialect);
    const now = Date.now();
    assert.equal((await h.call(CREATE, holderBody({ timestamp: now - 60_000 }))).status, 200);
    const old = await h.call(CREATE, holderBody({ timestamp: now - 6 * 60_000 }));
    assert.equal(old.status, 401);
    assertEnvelope(old.body, '1007');
    const future = await h.call(CREATE, holderBody({ timestamp: now + 6 * 60_000 }));
    assertEnvelope(future.body, '1007');
    assert.equal(future.body.msg, 'timestamp is outside the allowed window of 5 minutes');
    // Seconds instead of milliseconds: the same 1007, saying what is wrong (issue 30.3).
    const seconds = await h.call(CREATE, holderBody({ timestamp: Math.floor(now / 1000) }));
    assert.equal(seconds.status, 401);
    assertEnvelope(seconds.body, '1007');
    assert.equal(seconds.body.msg, 'timestamp looks like seconds; send Unix time in milliseconds');
    const text = await h.call(CREATE, holderBody({ timestamp: String(now) }));
    assertEnvelope(text.body, '1002');
    assert.match(text.body.msg, /^timestamp: /);
    // The timestamp is part of the signing string: changing it after signing breaks the signature.
    const signed = sign(holderBody({ timestamp: now }), h.merchant);
    const moved = await h.call(CREATE, { ...signed, timestamp: now + 1 }, { raw: true });
    assertEnvelope(moved.body, '1006');
  });

  it('the timestamp cannot be stripped by moving it into a free-text field: "remark":"rent&timestamp=T" is 1006 and moves no money (issue 14.6)', async (t) => {
    const h = await build(t, dialect);
    const from = await fundedCard(h, { topUp: 50 });
    const to = await fundedCard(h);
    const T = Date.now() - 3_600_000;
    // A transfer captured an hour ago: its timestamp is stale.
    const captured = sign(
      { cardId: from.cardId, toCardId: to.cardId, amount: 10, remark: 'rent', timestamp: T, randomStr: randomStr() },
      h.merchant,
    );
    const stale = await h.call('/sandbox/network/transfer', captured, { raw: true });
    assertEnvelope(stale.body, '1007');
    // The same sign with the timestamp folded into remark and no timestamp field: with values
    // written raw, both bodies had one signing string and this one moved the money.
    const { timestamp: _t, ...rest } = captured;
    const stripped = await h.call('/sandbox/network/transfer', { ...rest, remark: `rent&timestamp=${T}` }, { raw: true });
    assert.equal(stripped.status, 401, JSON.stringify(stripped.body));
    assertEnvelope(stripped.body, '1006');
    assert.deepEqual(await balances(h, from.cardId), { available: 50, ledger: 50, status: 'active' });
    assert.equal((await balances(h, to.cardId)).available, 0);
    // A value holding '&' and '%' still signs and works as such.
    const fine = await h.call('/sandbox/network/transfer', {
      cardId: from.cardId,
      toCardId: to.cardId,
      amount: 1,
      remark: 'rent&bills 100%',
      randomStr: randomStr(),
    });
    assert.equal(fine.status, 200, JSON.stringify(fine.body));
  });

  it('a top-level key that is not a field name is 1002 naming it, before the signature is checked', async (t) => {
    const h = await build(t, dialect);
    const before = await rowCounts(h);
    for (const key of ['a=b', 'x&timestamp', '', '1abc', 'é', 'a'.repeat(65), 'with space']) {
      const res = await h.call(CREATE, { ...holderBody(), appId: h.merchant.appId, [key]: 'v', sign: 'f'.repeat(64) }, { raw: true });
      assert.equal(res.status, 400, key);
      assertEnvelope(res.body, '1002');
      assert.equal(res.body.msg, `${key.slice(0, 64)}: is not a field name (a letter, then up to 63 letters, digits or _)`);
    }
    assert.deepEqual(await rowCounts(h), before);
  });

  it('RSA-SHA256 merchants: a PKCS#1 v1.5 signature over the signing string is accepted; an HMAC signature is refused', async (t) => {
    const h = await build(t, dialect);
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const rsa = await runVerb(h.app.svc, createMerchant, {
      input: { name: 'RSA merchant', signType: 'RSA-SHA256', publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString() },
      actor: 'test',
    });
    assert.equal(rsa.secret, undefined, 'an RSA merchant has no shared secret');
    const body = { ...holderBody(), appId: rsa.appId };
    const good = rsaSign('sha256', Buffer.from(signingString(body)), privateKey).toString('base64');
    const ok = await h.call(CREATE, { ...body, sign: good }, { raw: true });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    const hmac = await h.call(CREATE, { ...body, randomStr: randomStr(), sign: hmacSign('anything', signingString(body)) }, { raw: true });
    assertEnvelope(hmac.body, '1006');
  });

  it('RSA keys: exponent 65537, 2048 to 3072 bits (a larger key’s signature would not fit sign’s 512 characters); never a private key', async (t) => {
    const h = await build(t, dialect);
    const create = (publicKeyPem: string, signType: 'RSA-SHA256' | 'HMAC-SHA256' = 'RSA-SHA256') =>
      runVerb(h.app.svc, createMerchant, { input: { name: 'rsa', signType, publicKeyPem }, actor: 'test' });
    const pem = (bits: number) =>
      generateKeyPairSync('rsa', { modulusLength: bits }).publicKey.export({ type: 'spki', format: 'pem' }).toString();
    await assert.rejects(create(pem(1024)), /publicKey: must have at least 2048 bits, has 1024/);
    const e3 = generateKeyPairSync('rsa', { modulusLength: 2048, publicExponent: 3 }).publicKey.export({ type: 'spki', format: 'pem' });
    await assert.rejects(create(e3.toString()), /publicKey: must have the public exponent 65537, has 3/);
    const e17 = generateKeyPairSync('rsa', { modulusLength: 2048, publicExponent: 17 }).publicKey.export({ type: 'spki', format: 'pem' });
    await assert.rejects(create(e17.toString()), /public exponent 65537, has 17/);
    await assert.rejects(create(pem(4096)), /at most 3072 bits/);
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 3072 });
    const big = await create(publicKey.export({ type: 'spki', format: 'pem' }).toString());
    const body = { ...holderBody(), appId: big.appId };
    const sig = rsaSign('sha256', Buffer.from(signingString(body)), privateKey).toString('base64');
    assert.equal(sig.length, 512);
    assert.equal((await h.call(CREATE, { ...body, sign: sig }, { raw: true })).status, 200, 'a 3072-bit signature is accepted');
    await assert.rejects(create(privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()), /is a private key/);
    await assert.rejects(create(pem(2048), 'HMAC-SHA256'), /goes with RSA-SHA256 merchants only/);
  });

  it('merchant secrets are stored encrypted, never in plain text', async (t) => {
    const h = await build(t, dialect);
    const row = await h.db.database.db.selectFrom('merchants').selectAll().where('id', '=', h.merchant.appId).executeTakeFirstOrThrow();
    assert.ok(row.secret_enc);
    assert.ok(!row.secret_enc.includes(h.merchant.secret));
    assert.ok(!row.webhook_secret_enc.includes(h.merchant.webhookSecret));
    assert.match(row.secret_enc, /^v1\./);
  });
});
