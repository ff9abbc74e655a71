import assert from 'node:assert/strict';
import { it } from 'node:test';
import { createMerchant } from '../src/merchants/create.js';
import { listMerchants, updateMerchant } from '../src/merchants/manage.js';
import { build } from './helpers/app.js';
import { eachDialect } from './helpers/dialects.js';

eachDialect('merchants', (dialect) => {
  it('production refuses plain-http, private and local notify URLs at creation and update', async (t) => {
    const h = await build(t, dialect, { env: 'production' });
    for (const notifyUrl of ['http://acme.example/hooks', 'https://10.0.0.1/hook', 'https://localhost/hook', 'https://[::1]/hook']) {
      await assert.rejects(
        createMerchant({ ctx: h.app.svc, input: { name: 'P', signType: 'HMAC-SHA256', notifyUrl } }),
        /notifyUrl: /,
        notifyUrl,
      );
      await assert.rejects(updateMerchant({ ctx: h.app.svc, input: { appId: h.merchant.appId, notifyUrl } }), /notifyUrl: /, notifyUrl);
    }
    const m = await createMerchant({
      ctx: h.app.svc,
      input: { name: 'P', signType: 'HMAC-SHA256', notifyUrl: 'https://acme.example/hooks' },
    });
    assert.match(m.secret ?? '', /^sk_live_/, 'production secrets are marked live');
  });

  it('the sandbox accepts a loopback http notify URL; update changes it and "null" removes it', async (t) => {
    const h = await build(t, dialect);
    const updated = await updateMerchant({ ctx: h.app.svc, input: { appId: h.merchant.appId, notifyUrl: 'http://127.0.0.1:9999/hooks' } });
    assert.equal(updated.notifyUrl, 'http://127.0.0.1:9999/hooks');
    const cleared = await updateMerchant({ ctx: h.app.svc, input: { appId: h.merchant.appId, notifyUrl: null } });
    assert.equal(cleared.notifyUrl, null);
    await assert.rejects(
      updateMerchant({ ctx: h.app.svc, input: { appId: 'mch_unknown', loginFree: true } }),
      /No merchant with appId mch_unknown/,
    );
    assert.equal((await listMerchants({ ctx: h.app.svc })).length, 1);
  });
});
