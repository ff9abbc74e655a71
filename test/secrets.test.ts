import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import type { Kysely } from 'kysely';
import { hmacSign, signingString } from '../src/http/signing.js';
import { holderBody, randomStr } from './helpers/app.js';
import { childDatabaseUrl } from './helpers/cli.js';
import { isolatedDatabase, ownTables } from './helpers/db.js';
import { eachDialect } from './helpers/dialects.js';
import { startService, stopped } from './helpers/service.js';

eachDialect('secrets hygiene', (dialect) => {
  it('no card number, CVV, merchant or webhook secret, page token or session id in the logs, in error replies, or in plain text in the database', async (t) => {
    const db = await isolatedDatabase(dialect);
    const dataDir = mkdtempSync(join(tmpdir(), 'cardprogram-secrets-'));
    t.after(async () => {
      await db.cleanup();
      rmSync(dataDir, { recursive: true, force: true });
    });
    // Every log line the service can write, at trace level, captured.
    const service = await startService({ DATABASE_URL: childDatabaseUrl(db), CARDPROGRAM_DATA_DIR: dataDir, LOG_LEVEL: 'trace' });
    t.after(() => {
      service.child.kill('SIGKILL');
    });
    const demo = JSON.parse(readFileSync(join(dataDir, 'demo-merchant.json'), 'utf8'));
    const replies: string[] = [];
    const call = async (path: string, body: Record<string, unknown>, headers: Record<string, string> = {}) => {
      const signed: Record<string, unknown> = { ...body, appId: demo.appId };
      signed.sign = hmacSign(demo.secret, signingString(signed));
      const res = await fetch(`${service.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(signed),
      });
      const text = await res.text();
      replies.push(text);
      return JSON.parse(text) as Record<string, any>;
    };

    const holderInput = holderBody({ mobile: '+4915199887766', email: 'alice.identity@example.com' });
    const holder = await call('/api/network/holderCreate.html', holderInput);
    assert.equal(holder.idno, holderInput.idno, 'the record still carries idno and mobile');
    await call('/sandbox/holder/review', { holderId: holder.holderId, auditStatus: 2, randomStr: randomStr() });
    const card = (await call('/api/network/cardApply.html', { holderId: holder.holderId, currency: 'EUR', randomStr: randomStr() })).model;
    await call('/api/network/cardTopUp.html', { cardId: card.cardId, amount: 20, randomStr: randomStr() });
    await call('/sandbox/network/authorize', { cardId: card.cardId, amount: 1.5, remark: 'Coffee', randomStr: randomStr() });
    // The sandbox's card-details operation is the one reply allowed to carry them: set it aside.
    const details = (await call('/sandbox/network/cardDetails', { cardId: card.cardId, randomStr: randomStr() })).model;
    replies.pop();
    const pan: string = details.cardNo;
    const cvv: string = details.cvv;
    assert.match(pan, /^\d{16}$/);
    // The list by full card number (the PAN in a request body), right and wrong.
    const today = new Date().toISOString().slice(0, 10);
    const listed = await call('/api/network/networkAuthTradeList.html', {
      cardNo: pan,
      beginDate: today,
      endDate: today,
      start: 0,
      randomStr: randomStr(),
    });
    assert.ok(listed.total >= 2);
    const wrongPan = `${pan.slice(0, 15)}${(Number(pan[15]) + 1) % 10}`;
    await call('/api/network/networkAuthTradeList.html', {
      cardNo: wrongPan,
      beginDate: today,
      endDate: today,
      start: 0,
      randomStr: randomStr(),
    });
    // Bad input that carries secrets: the error names the field, never echoes the value.
    await call('/api/network/networkAuthTradeList.html', {
      cardNo: `${pan}x`,
      beginDate: today,
      endDate: today,
      start: 0,
      randomStr: randomStr(),
    });
    await call('/api/network/cardQuery.html', { cardId: card.cardId, randomStr: randomStr(), cvv });
    // A wrong signature: the reply does not show the expected one.
    const forged = await fetch(`${service.url}/api/network/cardQuery.html`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ appId: demo.appId, cardId: card.cardId, randomStr: randomStr(), sign: 'f'.repeat(64) }),
    });
    replies.push(await forged.text());

    // The card page: a one-time token in the URL, a session id in the cookie, a reveal of the PAN.
    const link = await call('/open/merchant/api/v2', { email: 'alice@example.com' });
    const webUrl = new URL(link.model.webUrl);
    const token = webUrl.searchParams.get('token') ?? '';
    replies.pop(); // the link itself is the reply of 4.4
    const opened = await fetch(`${service.url}${webUrl.pathname}${webUrl.search}`, { redirect: 'manual' });
    const cookie = String(opened.headers.get('set-cookie')).split(';')[0] ?? '';
    const sessionId = cookie.split('=')[1] ?? '';
    assert.match(sessionId, /^[A-Za-z0-9_-]{43}$/);
    const page = await (await fetch(`${service.url}/page`, { headers: { cookie } })).text();
    assert.ok(!page.includes(pan), 'the page shows the number only when revealed');
    await fetch(`${service.url}${webUrl.pathname}${webUrl.search}`); // a second open, refused

    service.child.kill('SIGTERM');
    await stopped(service.child);
    const logs = service.output();
    assert.ok(logs.split('\n').length > 20, 'the logs were captured');
    const secrets: Record<string, string> = {
      'card number': pan,
      'a near card number': wrongPan,
      'merchant secret': demo.secret,
      'webhook secret': demo.webhookSecret,
      'webhook key': demo.webhookSecret.replace(/^whsec_/, ''),
      'page token': token,
      'page session id': sessionId,
    };
    for (const [what, value] of Object.entries(secrets)) {
      assert.ok(!logs.includes(value), `the logs contain the ${what}`);
      for (const reply of replies) assert.ok(!reply.includes(value), `a reply contains the ${what}: ${reply.slice(0, 200)}`);
    }
    assert.doesNotMatch(logs, /"cvv"|cvv=/i, 'no CVV field in the logs');
    for (const reply of replies) {
      assert.doesNotMatch(reply, /"cvv"/i);
      assert.doesNotMatch(reply, /\bat [\w.<>]+ \(|node:internal|\/src\/|\.ts:\d+/, 'no stack trace in a reply');
    }

    // At rest: no table holds the number, the secrets or the token in plain text.
    for (const table of await ownTables(db)) {
      const rows = await (db.database.db as unknown as Kysely<any>).selectFrom(table.name).selectAll().execute();
      const text = JSON.stringify(rows);
      for (const [what, value] of Object.entries(secrets))
        assert.ok(!text.includes(value), `${table.name} holds the ${what} in plain text`);
    }
    // Identity data of a cardholder (issue 14.6): sealed, found by keyed hashes; never in plain text.
    // The page link above names another e-mail: page links and sessions keep theirs (src/page).
    const identity: Record<string, string> = {
      idno: String(holderInput.idno),
      mobile: String(holderInput.mobile),
      'e-mail': String(holderInput.email),
      'date of birth': String(holderInput.dateOfBirth),
    };
    for (const table of await ownTables(db)) {
      const rows = await (db.database.db as unknown as Kysely<any>).selectFrom(table.name).selectAll().execute();
      const text = JSON.stringify(rows);
      for (const [what, value] of Object.entries(identity))
        assert.ok(!text.includes(value), `${table.name} holds a holder's ${what} in plain text`);
    }
    // And for SQLite, the file itself (with its write-ahead log), byte for byte.
    if (dialect.name === 'sqlite') {
      const file = db.url.slice('file:'.length);
      for (const f of [file, `${file}-wal`].filter((x) => existsSync(x))) {
        const bytes = readFileSync(f);
        assert.equal(bytes.indexOf(Buffer.from(pan)), -1, `${f} holds the card number`);
        assert.equal(bytes.indexOf(Buffer.from(demo.secret)), -1, `${f} holds the merchant secret`);
        for (const [what, value] of Object.entries(identity))
          assert.equal(bytes.indexOf(Buffer.from(value)), -1, `${f} holds a holder's ${what}`);
      }
    }
  });
});
