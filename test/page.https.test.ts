import assert from 'node:assert/strict';
import { it } from 'node:test';
import { formToken, issueLink } from '../src/page/links.js';
import { runVerb } from '../src/runner.js';
import { build, type Harness } from './helpers/app.js';
import { eachDialect } from './helpers/dialects.js';

const PROXY = '10.0.0.7';
const STRANGER = '203.0.113.9';
const HSTS = 'max-age=31536000; includeSubDomains';

/** A one-time link's path, made by the verb (no signed request: production's signing rules are not the point here). */
async function linkPath(h: Harness): Promise<string> {
  const merchant = await h.app.svc.merchants.get(h.merchant.appId);
  assert.ok(merchant);
  return `/page/open?token=${await runVerb(h.app.svc, issueLink, { input: { generation: merchant.generation }, merchantId: merchant.appId, actor: 'test' })}`;
}

/** A request as it reaches the service from `remoteAddress`, claiming the browser used https. */
function forwarded(h: Harness, url: string, remoteAddress: string, headers: Record<string, string> = {}) {
  return h.app.inject({
    method: 'GET',
    url,
    remoteAddress,
    headers: { host: 'cards.example.com', 'x-forwarded-proto': 'https', ...headers },
  });
}

eachDialect('the card page behind a TLS-terminating proxy', (dialect) => {
  it('X-Forwarded-Proto counts only from CARDPROGRAM_TRUST_PROXY: a trusted proxy’s https gets the __Host- Secure cookie, a stranger’s claim does not', async (t) => {
    const h = await build(t, dialect, { trustProxy: [PROXY] });
    const trusted = await forwarded(h, await linkPath(h), PROXY);
    assert.equal(trusted.statusCode, 303);
    assert.match(
      String(trusted.headers['set-cookie']),
      /^__Host-cp_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=900; Secure$/,
    );
    const untrusted = await forwarded(h, await linkPath(h), STRANGER);
    assert.equal(untrusted.statusCode, 303);
    assert.match(String(untrusted.headers['set-cookie']), /^cp_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=900$/);
    // The sandbox over http sends no HSTS (it would pin a developer's localhost to https).
    assert.equal(trusted.headers['strict-transport-security'], undefined);
    // A cookie is read under the name the request's protocol gives it: the stranger's http session works over http only.
    const cookie = String(untrusted.headers['set-cookie']).split(';')[0] ?? '';
    assert.equal((await forwarded(h, '/page', STRANGER, { cookie })).statusCode, 200);
  });

  it('production with an https public URL: the cookie is always __Host-…; Secure, and every page answer carries HSTS, trusted proxy or not', async (t) => {
    const h = await build(t, dialect, { env: 'production', publicUrl: 'https://cards.example.com', trustProxy: [PROXY] });
    for (const [from, proto] of [
      [PROXY, 'https'],
      [STRANGER, 'https'],
      [STRANGER, 'http'],
    ] as const) {
      const opened = await forwarded(h, await linkPath(h), from, { 'x-forwarded-proto': proto });
      assert.equal(opened.statusCode, 303, `${from} ${proto}`);
      const setCookie = String(opened.headers['set-cookie']);
      assert.match(setCookie, /^__Host-cp_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=900; Secure$/, from);
      assert.equal(opened.headers['strict-transport-security'], HSTS);
      const cookie = setCookie.split(';')[0] ?? '';
      const answers = [
        await forwarded(h, '/page', from, { cookie, 'x-forwarded-proto': proto }),
        await forwarded(h, '/page', from, { 'x-forwarded-proto': proto }),
        await forwarded(h, '/page/open?token=nope', from, { 'x-forwarded-proto': proto }),
        await h.app.inject({
          method: 'POST',
          url: '/page/cards/card_x/freeze',
          remoteAddress: from,
          payload: 'form=x',
          headers: { host: 'cards.example.com', cookie, 'content-type': 'application/x-www-form-urlencoded' },
        }),
      ];
      assert.deepEqual(
        answers.map((a) => a.statusCode),
        [200, 401, 410, 403],
      );
      for (const a of answers) assert.equal(a.headers['strict-transport-security'], HSTS, `${from} ${proto} ${a.statusCode}`);
      // The browser is on https whatever the hop says: its form's Origin is the https one, and only that passes.
      const form = `form=${formToken(cookie.split('=')[1] ?? '')}`;
      const posted = (origin: string) =>
        h.app.inject({
          method: 'POST',
          url: '/page/cards/card_x/freeze',
          remoteAddress: from,
          payload: form,
          headers: {
            host: 'cards.example.com',
            cookie,
            origin,
            'x-forwarded-proto': proto,
            'content-type': 'application/x-www-form-urlencoded',
          },
        });
      assert.equal((await posted('https://cards.example.com')).statusCode, 404, 'past the form checks: no such card');
      assert.equal((await posted('http://cards.example.com')).statusCode, 403);
    }
  });
});
