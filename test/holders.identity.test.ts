import assert from 'node:assert/strict';
import { it } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { buildApp } from '../src/app.js';
import { MIGRATIONS } from '../src/db/migrate.js';
import { openIdentity, sealPlaintextHolders } from '../src/holders/identity.js';
import { createMerchant } from '../src/merchants/create.js';
import { runVerb } from '../src/runner.js';
import { b64, holderBody, randomStr, sign, testConfig } from './helpers/app.js';
import { isolatedDatabase } from './helpers/db.js';
import { eachDialect } from './helpers/dialects.js';
import { testLogging } from './helpers/log-audit.js';

eachDialect('cardholder identity data sealed at rest (issue 14.6)', (dialect) => {
  it('a database with plaintext holders from before migration 0007 is sealed at start, idempotently, and answers as before', async (t) => {
    const db = await isolatedDatabase(dialect);
    t.after(() => db.cleanup());
    const raw = db.database.db as unknown as Kysely<any>;
    // The database as the previous release left it: migrations up to 0006, a merchant, a holder in plain text.
    await sql`create table cardprogram_migrations (name varchar(128) primary key, applied_at bigint not null)`.execute(raw);
    for (const [name, migration] of MIGRATIONS.filter(([n]) => n < '2026_11_23_0007')) {
      await migration.up(raw);
      await raw.insertInto('cardprogram_migrations').values({ name, applied_at: Date.now() }).execute();
    }
    const config = testConfig(db.dataDir);
    const now = Date.now();
    await raw
      .insertInto('merchants')
      .values({
        id: 'mch_old',
        name: 'Old',
        sign_type: 'HMAC-SHA256',
        secret_enc: null,
        public_key: null,
        webhook_secret_enc: 'x',
        login_free: 1,
        notify_url: null,
        status: 'active',
        created_at: now,
        updated_at: now,
      })
      .execute();
    const old = {
      id: 'hld_old',
      merchant_id: 'mch_old',
      email: 'old.holder@example.com',
      mobile: '+4915100000001',
      first_name: 'Olga',
      last_name: 'Alt',
      date_of_birth: '1970-01-02',
      nationality: 'DE',
      sex: 2,
      country_code: 'DE',
      town: 'Berlin',
      address: 'Alte Strasse 1',
      post_code: '10115',
      idno_type: 1,
      idno: 'OLD-123 45',
      idno_key: 'OLD12345',
      audit_status: 0,
      err_msg: '',
      created_at: now,
      updated_at: now,
    };
    await raw.insertInto('cardholders').values(old).execute();
    // Starting the service (migration 0007, then the sealing step); the holder then moves to a merchant the test can sign as.
    const app = await buildApp(config, { database: db.database, ...testLogging() });
    t.after(() => app.close());
    const m = await runVerb(app.svc, createMerchant, { input: { name: 'Shop', signType: 'HMAC-SHA256', loginFree: true }, actor: 'test' });
    await raw.updateTable('cardholders').set({ merchant_id: m.appId }).where('id', '=', 'hld_old').execute();
    const merchant = { appId: m.appId, secret: m.secret ?? '', webhookSecret: m.webhookSecret };
    const post = async (url: string, body: Record<string, unknown>) => {
      const res = await app.inject({ method: 'POST', url, payload: sign(body, merchant), headers: { 'content-type': 'application/json' } });
      return { status: res.statusCode, body: res.json() as Record<string, any> };
    };

    // Sealed at start: the plaintext columns are empty, the identity opens, idno_key is a keyed hash.
    const row = await raw.selectFrom('cardholders').selectAll().where('id', '=', 'hld_old').executeTakeFirstOrThrow();
    for (const column of ['email', 'mobile', 'date_of_birth', 'town', 'address', 'post_code', 'idno'])
      assert.equal(row[column], '', column);
    assert.match(row.idno_key, /^[0-9a-f]{40}$/);
    assert.match(row.email_hash, /^[0-9a-f]{64}$/);
    assert.deepEqual(openIdentity(app.svc.box, { id: String(row.id), identity_enc: String(row.identity_enc) }), {
      idno: 'OLD-123 45',
      dateOfBirth: '1970-01-02',
      address: 'Alte Strasse 1',
      town: 'Berlin',
      postCode: '10115',
      mobile: '+4915100000001',
      email: 'old.holder@example.com',
    });
    assert.equal(await sealPlaintextHolders(app.svc), 0, 'a second run has nothing to seal');

    // holderQuery answers as before.
    const queried = await post('/api/network/holderQuery.html', { holderId: 'hld_old', randomStr: randomStr() });
    assert.equal(queried.status, 200, JSON.stringify(queried.body));
    assert.deepEqual(queried.body.model, {
      holderId: 'hld_old',
      auditStatus: 0,
      errMsg: '',
      firstName: 'Olga',
      lastName: 'Alt',
      idno: 'OLD-123 45',
      idnoType: 1,
      mobile: '+4915100000001',
    });
    // The one-holder-per-document rule still finds it (normalised: spaces and hyphens ignored, any case).
    const dup = await post('/api/network/holderCreate.html', holderBody({ idno: 'old12345', idnoType: 1, firstName: b64('Other') }));
    assert.equal(dup.body.code, '2611', JSON.stringify(dup.body));
    // The page finds it by e-mail (keyed hash).
    const link = await post('/open/merchant/api/v2', { email: 'Old.Holder@example.com' });
    assert.equal(link.status, 200, JSON.stringify(link.body));
    const url = new URL(link.body.model.webUrl);
    const opened = await app.inject({ method: 'GET', url: `${url.pathname}${url.search}` });
    const cookie = String(opened.headers['set-cookie']).split(';')[0] ?? '';
    const page = await app.inject({ method: 'GET', url: '/page', headers: { cookie } });
    assert.match(page.body, /Olga Alt/);
  });
});
