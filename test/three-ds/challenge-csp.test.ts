// The challenge page's headers (decisions §14.4, docs/3ds.md "The challenge page"): it runs inside the
// 3DS Server's iframe on any shop's page, so it is framable (no X-Frame-Options), by any https page in
// production (`frame-ancestors https:`) and by any page in the sandbox (`*`), and loads nothing from
// elsewhere (its style and script under the answer's nonce). Every answer of the page says so: the
// challenge, its error pages, and the last page that posts the CRes (whose form may go to the
// notificationURL's origin, and nowhere else). Production is the app built with env production.
import assert from 'node:assert/strict';
import { it, type TestContext } from 'node:test';
import { openPayload } from '../../src/callbacks/outbox.js';
import { reviewHolder } from '../../src/holders/review.js';
import { updateMerchant } from '../../src/merchants/manage.js';
import { runVerb } from '../../src/runner.js';
import { holderBody, randomStr } from '../helpers/app.js';
import type { TestDialect } from '../helpers/db.js';
import { eachDialect } from '../helpers/dialects.js';
import { type Acs, acs, card } from './helpers/acs.js';
import { creq } from './helpers/challenge-sim.js';
import { areq, send } from './helpers/ds.js';

const NOTIFY = 'https://3dss.test.example/notify';

/** A CSP header as its directives: name → the sources in order. */
function directives(csp: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const part of csp.split(';')) {
    const [name, ...sources] = part.trim().split(/\s+/);
    if (name) out[name] = sources;
  }
  return out;
}

/** An approved cardholder's EUR card made through the API and the operator's review (no sandbox routes), with its number and expiry. */
async function productionCard({ h }: Acs): Promise<{ pan: string; expiry: string }> {
  const holder = await h.call('/api/network/holderCreate.html', holderBody());
  assert.equal(holder.status, 200, JSON.stringify(holder.body));
  await runVerb(h.app.svc, reviewHolder, { input: { holderId: holder.body.holderId, auditStatus: 2 }, actor: 'test' });
  const applied = await h.call('/api/network/cardApply.html', { holderId: holder.body.holderId, currency: 'EUR', randomStr: randomStr() });
  assert.equal(applied.status, 200, JSON.stringify(applied.body));
  const row = await h.db.database.db.selectFrom('cards').selectAll().where('id', '=', applied.body.model.cardId).executeTakeFirstOrThrow();
  const pan = await h.app.svc.vault.decrypt(h.db.database.db, row.id, row.pan_enc, row.pan_key_id);
  return { pan, expiry: `${String(row.expiry_year % 100).padStart(2, '0')}${String(row.expiry_month).padStart(2, '0')}` };
}

async function sandboxCard({ h }: Acs): Promise<{ pan: string; expiry: string }> {
  const c = await card(h);
  return { pan: c.pan, expiry: c.expiry };
}

async function pages(t: TestContext, dialect: TestDialect, env: 'sandbox' | 'production') {
  const server = await acs(t, dialect, env === 'production' ? { env, publicUrl: 'https://cards.example.com' } : {});
  const { h, url } = server;
  await runVerb(h.app.svc, updateMerchant, {
    input: { appId: h.merchant.appId, notifyUrl: 'https://shop.example.com/hooks' },
    actor: 'test',
  });
  const c = env === 'production' ? await productionCard(server) : await sandboxCard(server);
  const ares =
    (await send(url, areq({ pan: c.pan, expiry: c.expiry, amount: '4000', challengeInd: '04', notificationURL: NOTIFY }))).json ?? {};
  assert.equal(ares.transStatus, 'C', JSON.stringify(ares));
  const form = (path: string, fields: Record<string, string>) =>
    h.app.inject({
      method: 'POST',
      url: path,
      // As a browser reaches it in production: over https (through the proxy that ends TLS).
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-proto': 'https' },
      payload: new URLSearchParams(fields).toString(),
    });
  const opened = await form('/3ds/challenge', { creq: creq(ares) });
  assert.equal(opened.statusCode, 200, opened.body);
  const acsTransID = /name="acsTransID" value="([^"]+)"/.exec(opened.body)?.[1] ?? '';
  const token = /name="token" value="([^"]+)"/.exec(opened.body)?.[1] ?? '';
  const events = await h.db.database.db.selectFrom('callback_events').selectAll().where('type', '=', 'threeDs.otp').execute();
  const code = events
    .map((e) => JSON.parse(openPayload(h.app.svc.box, e)) as { code: string; acsTransID: string })
    .find((p) => p.acsTransID === ares.acsTransID)?.code;
  assert.ok(code, 'the code sent to the merchant');
  const done = await form('/3ds/challenge/otp', { acsTransID, token, code });
  assert.equal(done.statusCode, 200, done.body);
  assert.match(done.body, /<form id="cres"/);
  const spent = await form('/3ds/challenge', { creq: creq(ares) });
  assert.equal(spent.statusCode, 409);
  const garbage = await form('/3ds/challenge', { creq: '%%%' });
  assert.equal(garbage.statusCode, 400);
  return { opened, done, spent, garbage };
}

function checkFramable(
  res: { headers: Record<string, unknown>; body: string },
  ancestors: string[],
  formAction: string[],
  what: string,
): void {
  assert.equal(res.headers['x-frame-options'], undefined, `${what}: no X-Frame-Options, the page runs in the 3DS Server's iframe`);
  const csp = directives(String(res.headers['content-security-policy']));
  const nonce = /nonce="([^"]+)"/.exec(res.body)?.[1];
  assert.ok(nonce, `${what}: the page's style carries a nonce`);
  assert.deepEqual(
    csp,
    {
      'default-src': ["'none'"],
      'style-src': [`'nonce-${nonce}'`],
      'script-src': [`'nonce-${nonce}'`],
      'img-src': ['data:'],
      'form-action': formAction,
      'frame-ancestors': ancestors,
      'base-uri': ["'none'"],
    },
    what,
  );
  assert.equal(res.headers['referrer-policy'], 'no-referrer', what);
  assert.equal(res.headers['cache-control'], 'no-store', what);
  assert.equal(res.headers['set-cookie'], undefined, `${what}: no cookies`);
  assert.ok(!/(src|href|action)="(https?:)?\/\/(?!3dss\.test\.example)/.test(res.body), `${what}: nothing from elsewhere`);
}

eachDialect('3-D Secure: the challenge page’s CSP (framable, nothing from elsewhere)', (dialect) => {
  it('production: frame-ancestors https:, no X-Frame-Options, on the challenge, its last page and its error pages', async (t) => {
    const p = await pages(t, dialect, 'production');
    checkFramable(p.opened, ['https:'], ["'self'"], 'the challenge');
    checkFramable(p.done, ['https:'], ["'self'", 'https://3dss.test.example'], 'the CRes page');
    checkFramable(p.spent, ['https:'], ["'self'"], 'a spent creq');
    checkFramable(p.garbage, ['https:'], ["'self'"], 'a broken creq');
  });

  it('sandbox: frame-ancestors *, no X-Frame-Options, on the same pages', async (t) => {
    const p = await pages(t, dialect, 'sandbox');
    checkFramable(p.opened, ['*'], ["'self'"], 'the challenge');
    checkFramable(p.done, ['*'], ["'self'", 'https://3dss.test.example'], 'the CRes page');
    checkFramable(p.spent, ['*'], ["'self'"], 'a spent creq');
    checkFramable(p.garbage, ['*'], ["'self'"], 'a broken creq');
  });
});
