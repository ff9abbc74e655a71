import assert from 'node:assert/strict';
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { it } from 'node:test';
import { createMerchant } from '../src/merchants/create.js';
import { listMerchants, updateMerchant } from '../src/merchants/manage.js';
import { rollCredentials } from '../src/merchants/roll.js';
import { runVerb } from '../src/runner.js';
import { build, holderBody, randomStr, rowCounts } from './helpers/app.js';
import { childDatabaseUrl, runCli } from './helpers/cli.js';
import { eachDialect } from './helpers/dialects.js';

eachDialect('merchants', (dialect) => {
  it('production refuses plain-http, private and local notify URLs at creation and update', async (t) => {
    const h = await build(t, dialect, { env: 'production' });
    for (const notifyUrl of ['http://acme.example/hooks', 'https://10.0.0.1/hook', 'https://localhost/hook', 'https://[::1]/hook']) {
      await assert.rejects(
        runVerb(h.app.svc, createMerchant, { input: { name: 'P', signType: 'HMAC-SHA256', notifyUrl }, actor: 'test' }),
        /notifyUrl: /,
        notifyUrl,
      );
      await assert.rejects(
        runVerb(h.app.svc, updateMerchant, { input: { appId: h.merchant.appId, notifyUrl }, actor: 'test' }),
        /notifyUrl: /,
        notifyUrl,
      );
    }
    const m = await runVerb(h.app.svc, createMerchant, {
      input: { name: 'P', signType: 'HMAC-SHA256', notifyUrl: 'https://acme.example/hooks' },
      actor: 'test',
    });
    assert.match(m.secret ?? '', /^sk_live_/, 'production secrets are marked live');
  });

  it('the sandbox accepts a loopback http notify URL; update changes it and "null" removes it', async (t) => {
    const h = await build(t, dialect);
    const updated = await runVerb(h.app.svc, updateMerchant, {
      input: { appId: h.merchant.appId, notifyUrl: 'http://127.0.0.1:9999/hooks' },
      actor: 'test',
    });
    assert.equal(updated.notifyUrl, 'http://127.0.0.1:9999/hooks');
    const cleared = await runVerb(h.app.svc, updateMerchant, { input: { appId: h.merchant.appId, notifyUrl: null }, actor: 'test' });
    assert.equal(cleared.notifyUrl, null);
    await assert.rejects(
      runVerb(h.app.svc, updateMerchant, { input: { appId: 'mch_unknown', loginFree: true }, actor: 'test' }),
      /No merchant with appId mch_unknown/,
    );
    assert.equal((await listMerchants(h.app.svc.database.db)).length, 1);
  });
});

eachDialect('rolling a merchant’s credentials', (dialect) => {
  it('merchant roll: the old secret is refused (1006) and writes nothing, the new one signs; the CLI prints it once; a webhook secret too', async (t) => {
    const h = await build(t, dialect);
    const before = await h.call('/api/network/holderCreate.html', holderBody({ randomStr: randomStr() }));
    assert.equal(before.status, 200, JSON.stringify(before.body));
    const env = { DATABASE_URL: childDatabaseUrl(h.db), CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex') };
    const res = await runCli(['merchant', 'roll', h.merchant.appId, '--webhook-secret', '--json'], env);
    assert.equal(res.code, 0, res.stderr);
    const rolled = JSON.parse(res.stdout) as { appId: string; secret: string; webhookSecret: string };
    assert.match(rolled.secret, /^sk_test_[0-9a-f]{32}$/);
    assert.match(rolled.webhookSecret, /^whsec_/);
    assert.notEqual(rolled.secret, h.merchant.secret);
    // Another process changed the row: this instance follows once its cache entry is gone (5 s).
    h.app.svc.merchants.forget(h.merchant.appId);
    const counts = await rowCounts(h);
    const old = await h.call('/api/network/holderCreate.html', holderBody({ randomStr: randomStr() }));
    assert.deepEqual([old.status, old.body.code], [401, '1006']);
    assert.deepEqual(await rowCounts(h), counts, 'the old secret wrote nothing');
    const renewed = { ...h.merchant, secret: rolled.secret, webhookSecret: rolled.webhookSecret };
    const now = await h.call('/api/network/holderCreate.html', holderBody({ randomStr: randomStr() }), { merchant: renewed });
    assert.equal(now.status, 200, JSON.stringify(now.body));
    const row = await h.db.database.db.selectFrom('merchants').selectAll().where('id', '=', h.merchant.appId).executeTakeFirstOrThrow();
    assert.equal(h.app.svc.box.open(row.webhook_secret_enc, `webhook-secret:${h.merchant.appId}`), rolled.webhookSecret);
  });

  it('an RSA merchant rolls to a new public key (checked like a new one); an HMAC merchant cannot take one; an unknown appId is refused', async (t) => {
    const h = await build(t, dialect);
    const first = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const m = await runVerb(h.app.svc, createMerchant, {
      input: { name: 'RSA', signType: 'RSA-SHA256', publicKeyPem: first.publicKey.export({ type: 'spki', format: 'pem' }).toString() },
      actor: 'test',
    });
    const next = generateKeyPairSync('rsa', { modulusLength: 2048 });
    await assert.rejects(runVerb(h.app.svc, rollCredentials, { input: { appId: m.appId }, actor: 'test' }), /publicKey: is required/);
    const weak = generateKeyPairSync('rsa', { modulusLength: 2048, publicExponent: 3 });
    await assert.rejects(
      runVerb(h.app.svc, rollCredentials, {
        input: { appId: m.appId, publicKeyPem: weak.publicKey.export({ type: 'spki', format: 'pem' }).toString() },
        actor: 'test',
      }),
      /publicKey: must have the public exponent 65537/,
    );
    // An even modulus (2048 bits, exponent 65537) factors at once: refused too.
    const jwk = next.publicKey.export({ format: 'jwk' });
    const n = Buffer.from(jwk.n ?? '', 'base64url');
    n[n.length - 1] = (n[n.length - 1] ?? 0) & 0xfe;
    const even = createPublicKey({ key: { ...jwk, n: n.toString('base64url') }, format: 'jwk' }).export({ type: 'spki', format: 'pem' });
    await assert.rejects(
      runVerb(h.app.svc, rollCredentials, { input: { appId: m.appId, publicKeyPem: even.toString() }, actor: 'test' }),
      /publicKey: is not a valid RSA key: its modulus is even/,
    );
    const pem = next.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const rolled = await runVerb(h.app.svc, rollCredentials, { input: { appId: m.appId, publicKeyPem: pem }, actor: 'test' });
    assert.deepEqual(rolled, { appId: m.appId });
    const row = await h.db.database.db.selectFrom('merchants').select('public_key').where('id', '=', m.appId).executeTakeFirstOrThrow();
    assert.equal(row.public_key, pem);
    await assert.rejects(
      runVerb(h.app.svc, rollCredentials, { input: { appId: h.merchant.appId, publicKeyPem: pem }, actor: 'test' }),
      /publicKey: goes with RSA/,
    );
    await assert.rejects(
      runVerb(h.app.svc, rollCredentials, { input: { appId: 'mch_unknown' }, actor: 'test' }),
      /No merchant with appId mch_unknown/,
    );
  });
});
