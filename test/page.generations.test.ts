import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { it } from 'node:test';
import { sha256 } from '../src/page/links.js';
import { build, type Harness } from './helpers/app.js';
import { fundedCard } from './helpers/cards.js';
import { childDatabaseUrl, runCli } from './helpers/cli.js';
import { eachDialect } from './helpers/dialects.js';

const LINK = '/open/merchant/api/v2';

/** Asks for a page link with the harness's merchant (its secret as the test holds it). */
const mint = (h: Harness, email = 'alice@example.com') => h.call(LINK, { email });

const pathOf = (webUrl: string) => {
  const url = new URL(webUrl);
  return `${url.pathname}${url.search}`;
};

/** Opens a link and returns its answer and, when it opened, the session cookie. */
async function open(h: Harness, path: string) {
  const res = await h.app.inject({ method: 'GET', url: path });
  return { status: res.statusCode, cookie: String(res.headers['set-cookie'] ?? '').split(';')[0] ?? '' };
}

/**
 * A link as an instance would have stored it with the generation it read before a roll or a
 * disable committed (PostgreSQL, READ COMMITTED: its insert lands after the roll deleted the
 * merchant's links). Returns its path.
 */
async function linkOfGeneration(h: Harness, generation: number): Promise<string> {
  const token = randomBytes(32).toString('base64url');
  const now = h.app.svc.clock();
  await h.db.database.db
    .insertInto('page_links')
    .values({
      token_hash: sha256(token),
      merchant_id: h.merchant.appId,
      email: null,
      expires_at: now + 600_000,
      used_at: null,
      credential_gen: generation,
      created_at: now,
    })
    .execute();
  return `/page/open?token=${token}`;
}

const generationOf = async (h: Harness) =>
  (await h.db.database.db.selectFrom('merchants').select('credential_gen').where('id', '=', h.merchant.appId).executeTakeFirstOrThrow())
    .credential_gen;

// Issue 26.2: `merchant roll` runs in another process, and the service keeps credentials for 5 s:
// in that window the old secret still minted 4.4 links, and such a link opened the card page.
eachDialect('the card page and credential generations (issue 26.2)', (dialect) => {
  it('a secret rolled by the CLI: within the service’s 5 s cache the old secret mints no link, and no earlier link or session opens', async (t) => {
    let now = Date.now();
    const h = await build(t, dialect, { merchantCacheMs: 5000 }, { clock: () => now });
    const { cardId } = await fundedCard(h, { topUp: 10 });
    const first = await mint(h);
    assert.equal(first.status, 200);
    const opened = await open(h, pathOf(first.body.model.webUrl));
    assert.equal(opened.status, 303);
    const page = await h.app.inject({ method: 'GET', url: '/page', headers: { cookie: opened.cookie } });
    assert.ok(page.body.includes(cardId), 'the session shows the card');
    const unopened = pathOf((await mint(h)).body.model.webUrl);
    const before = await generationOf(h);

    // The roll, by the CLI in its own process; this instance's cache still holds the old secret.
    const env = { DATABASE_URL: childDatabaseUrl(h.db), CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex') };
    const rolled = await runCli(['merchant', 'roll', h.merchant.appId, '--json'], env);
    assert.equal(rolled.code, 0, rolled.stderr);
    assert.ok((await generationOf(h)) > before, 'the roll moved the generation on');

    const late = await mint(h);
    assert.deepEqual([late.status, late.body.code], [401, '1006'], 'the old secret mints nothing');
    assert.equal((await h.app.inject({ method: 'GET', url: '/page', headers: { cookie: opened.cookie } })).statusCode, 401);
    assert.equal((await open(h, unopened)).status, 410);
    // A link stored under the old generation after the roll (an instance's race) opens nothing either.
    assert.equal((await open(h, await linkOfGeneration(h, before))).status, 410);
    assert.equal((await h.db.database.db.selectFrom('page_sessions').select('id_hash').execute()).length, 0, 'no session started');

    // The new secret works at once, and its link opens the page.
    now += 10;
    const renewed = { ...h.merchant, secret: JSON.parse(rolled.stdout).secret as string };
    const fresh = await h.call(LINK, { email: 'alice@example.com' }, { merchant: renewed });
    assert.equal(fresh.status, 200, JSON.stringify(fresh.body));
    assert.equal((await open(h, pathOf(fresh.body.model.webUrl))).status, 303);
  });

  it('disabled and enabled again by the CLI: no link minted or stored in between comes back', async (t) => {
    let now = Date.now();
    const h = await build(t, dialect, { merchantCacheMs: 5000 }, { clock: () => now });
    await fundedCard(h, { topUp: 10 });
    const opened = await open(h, pathOf((await mint(h)).body.model.webUrl));
    assert.equal(opened.status, 303);
    const before = await generationOf(h);
    const env = { DATABASE_URL: childDatabaseUrl(h.db), CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex') };
    const update = (status: string) => runCli(['merchant', 'update', h.merchant.appId, '--status', status, '--json'], env);

    assert.equal((await update('disabled')).code, 0);
    // In the cache's window, the service still believes the merchant active.
    const between = await mint(h);
    assert.notEqual(between.status, 200, 'a disabled merchant mints no link');
    const stored = await linkOfGeneration(h, before);
    assert.equal((await update('active')).code, 0);
    now += 5001;
    // Enabled again, the cache refreshed: nothing of before or in between opens; a new link does.
    if (between.status === 200) assert.equal((await open(h, pathOf(between.body.model.webUrl))).status, 410);
    assert.equal((await open(h, stored)).status, 410);
    assert.equal((await h.app.inject({ method: 'GET', url: '/page', headers: { cookie: opened.cookie } })).statusCode, 401);
    const fresh = await mint(h);
    assert.equal(fresh.status, 200, JSON.stringify(fresh.body));
    assert.equal((await open(h, pathOf(fresh.body.model.webUrl))).status, 303);
  });
});
