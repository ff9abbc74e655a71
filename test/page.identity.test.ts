import assert from 'node:assert/strict';
import { it } from 'node:test';
import { emailHash } from '../src/holders/identity.js';
import { LINK_TTL_MS, reapPage, SESSION_IDLE_MS, SESSION_MAX_MS, sha256 } from '../src/page/links.js';
import { build, holderBody, randomStr } from './helpers/app.js';
import { eachDialect } from './helpers/dialects.js';

const LINK = '/open/merchant/api/v2';

eachDialect('the card page stores no e-mail in the clear (issue 14.6)', (dialect) => {
  it('a page link and its session hold only the e-mail’s keyed hash; the page still finds the holder and says who is signed in', async (t) => {
    const h = await build(t, dialect);
    const email = 'alice.page@example.com';
    const holder = await h.call('/api/network/holderCreate.html', holderBody({ email }));
    assert.equal(holder.status, 200, JSON.stringify(holder.body));
    const res = await h.call(LINK, { email: 'Alice.Page@Example.com', randomStr: randomStr() });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const url = new URL(res.body.model.webUrl);
    const opened = await h.app.inject({ method: 'GET', url: `${url.pathname}${url.search}` });
    assert.equal(opened.statusCode, 303);
    const cookie = String(opened.headers['set-cookie']).split(';')[0] ?? '';

    const db = h.db.database.db;
    const key = await emailHash(h.app.svc.vault, db, email);
    const links = await db.selectFrom('page_links').select('email').execute();
    const sessions = await db.selectFrom('page_sessions').select('email').execute();
    assert.deepEqual(links, [{ email: key }]);
    assert.deepEqual(sessions, [{ email: key }]);
    for (const row of [...links, ...sessions]) assert.doesNotMatch(String(row.email), /@|alice/i);

    const page = await h.app.inject({ method: 'GET', url: '/page', headers: { cookie } });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /Signed in as alice\.page@example\.com/);
  });

  it('a session stored before e-mails were hashed (the e-mail itself) still finds its holder', async (t) => {
    const h = await build(t, dialect);
    const email = 'bob.page@example.com';
    assert.equal((await h.call('/api/network/holderCreate.html', holderBody({ email }))).status, 200);
    const sessionId = 'A'.repeat(43);
    const now = Date.now();
    await h.db.database.db
      .insertInto('page_sessions')
      .values({ id_hash: sha256(sessionId), merchant_id: h.merchant.appId, email, created_at: now, last_seen_at: now })
      .execute();
    const page = await h.app.inject({ method: 'GET', url: '/page', headers: { cookie: `cp_session=${sessionId}` } });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /Signed in as bob\.page@example\.com/);
  });

  it('expired links and ended sessions are reaped; live ones stay', async (t) => {
    const h = await build(t, dialect);
    const db = h.db.database.db;
    const now = Date.now();
    const merchant_id = h.merchant.appId;
    const link = (name: string, created: number) => ({
      token_hash: sha256(name),
      merchant_id,
      email: null,
      expires_at: created + LINK_TTL_MS,
      used_at: null,
      created_at: created,
    });
    await db
      .insertInto('page_links')
      .values([link('expired', now - LINK_TTL_MS - 1000), link('live', now - 1000)])
      .execute();
    const session = (name: string, created: number, seen: number) => ({
      id_hash: sha256(name),
      merchant_id,
      email: null,
      created_at: created,
      last_seen_at: seen,
    });
    await db
      .insertInto('page_sessions')
      .values([
        session('idle', now - SESSION_IDLE_MS - 5000, now - SESSION_IDLE_MS - 1000),
        session('old', now - SESSION_MAX_MS - 1000, now - 1000),
        session('live', now - 60_000, now - 1000),
      ])
      .execute();
    assert.equal(await reapPage(h.app.svc, now), 3);
    assert.deepEqual(
      (await db.selectFrom('page_links').select('token_hash').execute()).map((r) => r.token_hash),
      [sha256('live')],
    );
    assert.deepEqual(
      (await db.selectFrom('page_sessions').select('id_hash').execute()).map((r) => r.id_hash),
      [sha256('live')],
    );
    assert.equal(await reapPage(h.app.svc, now), 0);
  });
});
