import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Kysely } from 'kysely';
import { buildApp } from '../src/app.js';
import { redact } from '../src/audit/trail.js';
import { openPayload } from '../src/callbacks/outbox.js';
import { IDENTITY_FIELDS, KYC_SEALED_FIELDS } from '../src/codes/sealed-fields.js';
import { SecretBox } from '../src/crypto/secretbox.js';
import { newId } from '../src/db/ids.js';
import { MIGRATIONS } from '../src/db/migrate.js';
import { DomainError } from '../src/errors.js';
import { loadKyc, toKycModel } from '../src/kyc/decide.js';
import { type KycShareInput, submitKyc } from '../src/kyc/submit.js';
import { runVerb } from '../src/runner.js';
import { kycBody, randomStr, testConfig } from './helpers/app.js';
import { buildConsole, consoleGet, consolePost, login, makeOperator } from './helpers/console.js';
import { isolatedDatabase } from './helpers/db.js';
import { eachDialect } from './helpers/dialects.js';
import { testLogging } from './helpers/log-audit.js';

const SHARE = '/open/api/kyc/share/information';
const QUERY = '/open/api/kyc/share/query';

/** Every text value of a table's rows, to look for an e-mail in whatever column it might be. */
async function texts(db: Kysely<any>, table: string): Promise<string> {
  return JSON.stringify(await db.selectFrom(table).selectAll().execute());
}

// Issue 26.9: the KYC e-mail was plain in kyc_requests, in stored kyc.result payloads and in the
// kyc.review audit record, which every role reads.
eachDialect('the KYC e-mail sealed at rest (issue 26.9)', (dialect) => {
  it('sealed in its row and its stored kyc.result, redacted from the audit trail; found by its keyed hash', async (t) => {
    const h = await buildConsole(t, dialect);
    const email = 'kyc.person+sealed@example.com';
    const body = kycBody({ email });
    const shared = await h.call(SHARE, body);
    assert.equal(shared.status, 200, JSON.stringify(shared.body));
    const db = h.db.database.db;
    const row = await db.selectFrom('kyc_requests').selectAll().executeTakeFirstOrThrow();
    assert.equal(row.email, '', 'the plain column is empty');
    assert.ok(row.email_enc?.startsWith('v1.'), 'sealed');
    assert.match(row.email_hash ?? '', /^[0-9a-f]{64}$/, 'its keyed hash');

    // One request per merchant and e-mail still holds (by the hash), whatever its case.
    const again = await h.call(SHARE, kycBody({ email: email.toUpperCase() }));
    assert.deepEqual([again.status, again.body.code], [409, '2610']);
    // The merchant's own read gives it back.
    const q = await h.call(QUERY, { requestNo: body.requestNo, randomStr: randomStr() });
    assert.equal(q.body.model.email, email);

    // A reviewer decides it in the console: the audit record does not hold the e-mail.
    const reviewer = await makeOperator(h, 'rita@example.com', 'reviewer');
    const s = await login(h, reviewer);
    const decided = await consolePost(h, s, `/console/kyc/${row.id}/decide`, { decision: 'approved' });
    assert.equal(decided.statusCode, 303, decided.body);
    const record = await db.selectFrom('audit_events').selectAll().where('action', '=', 'kyc.review').executeTakeFirstOrThrow();
    assert.equal(JSON.parse(record.after_json ?? '{}').email, '[redacted]');
    assert.equal(JSON.parse(record.after_json ?? '{}').kycStatus, 'approved', 'the rest of the record is kept');

    // The stored kyc.result is sealed, and opens to what the merchant is sent (with the e-mail).
    const event = await db.selectFrom('callback_events').selectAll().where('type', '=', 'kyc.result').executeTakeFirstOrThrow();
    assert.ok(event.payload.startsWith('v1.'));
    assert.equal(JSON.parse(openPayload(h.app.svc.box, event)).email, email);
    // The callback page every role reads leaves it out; the KYC page (its view recorded) shows it.
    const viewer = await login(h, await makeOperator(h, 'vic@example.com', 'viewer'));
    const callbackPage = await consoleGet(h, viewer, `/console/callbacks/${event.id}`);
    assert.equal(callbackPage.statusCode, 200);
    assert.ok(!callbackPage.body.includes(email) && callbackPage.body.includes('kycStatus'), 'the payload without the e-mail');
    assert.ok((await consoleGet(h, viewer, `/console/kyc/${row.id}`)).body.includes(email));

    // The console still finds the request by the e-mail (its keyed hash).
    const found = await consoleGet(h, viewer, `/console/search?q=${encodeURIComponent(email.toUpperCase())}`);
    assert.ok(
      found.statusCode === 303 ? String(found.headers.location).includes(row.id) : found.body.includes(`/console/kyc/${row.id}`),
      'found by e-mail',
    );

    // Nowhere in the tables it touched is the e-mail readable.
    for (const table of ['kyc_requests', 'callback_events', 'audit_events']) {
      assert.ok(!(await texts(db as unknown as Kysely<any>, table)).includes(email), `${table} does not hold the e-mail`);
    }
  });

  it('migration 2026_11_25_0015: rows stored before are sealed at start, and stay found and unique', async (t) => {
    const test = await isolatedDatabase(dialect);
    t.after(() => test.cleanup());
    const db = test.database.db as unknown as Kysely<any>;
    // The database as 0014 left it, with a request and its kyc.result stored the old way.
    const before = MIGRATIONS.findIndex(([name]) => name.startsWith('2026_11_25_0015'));
    assert.ok(before > 0);
    await test.database.withTx(async (tx) => {
      await (tx as Kysely<any>).schema
        .createTable('cardprogram_migrations')
        .addColumn('name', 'varchar(128)', (c) => c.primaryKey())
        .addColumn('applied_at', 'bigint', (c) => c.notNull())
        .execute();
      for (const [name, m] of MIGRATIONS.slice(0, before)) {
        await m.up(tx);
        await (tx as Kysely<any>).insertInto('cardprogram_migrations').values({ name, applied_at: Date.now() }).execute();
      }
    });
    const config = testConfig(test.dataDir);
    const box = new SecretBox(config.masterKey);
    const now = Date.now();
    const merchantId = 'mch_0015test0000';
    await db
      .insertInto('merchants')
      .values({
        id: merchantId,
        name: 'Old merchant',
        sign_type: 'HMAC-SHA256',
        secret_enc: box.seal('sk_test_x', `merchant-secret:${merchantId}`),
        public_key: null,
        webhook_secret_enc: box.seal('whsec_x', `webhook-secret:${merchantId}`),
        login_free: 1,
        notify_url: null,
        status: 'active',
        created_at: now,
        updated_at: now,
      })
      .execute();
    const email = 'old.person@example.com';
    const kycId = newId('kyc');
    await db
      .insertInto('kyc_requests')
      .values({
        id: kycId,
        merchant_id: merchantId,
        request_no: 'REQ-OLD',
        email,
        fingerprint: 'f'.repeat(64),
        platform: 'SUMSUB',
        callback_url: 'http://127.0.0.1:9/kyc',
        data_enc: box.seal('{}', `kyc:${kycId}`),
        status: 'rejected',
        reason: 'old',
        holder_id: null,
        auto_decide_at: null,
        created_at: now,
        updated_at: now,
      })
      .execute();
    const eventId = newId('evt');
    const payload = JSON.stringify({ type: 'kyc.result', requestNo: 'REQ-OLD', email, kycStatus: 'rejected', eventId });
    await db
      .insertInto('callback_events')
      .values({
        id: eventId,
        merchant_id: merchantId,
        type: 'kyc.result',
        subject: `kyc:${kycId}`,
        sequence: 1,
        url: 'http://127.0.0.1:9/kyc',
        payload,
        status: 'delivered',
        attempts: 1,
        next_attempt_at: now,
        lease_owner: null,
        lease_until: null,
        last_error: null,
        delivered_at: now,
        created_at: now,
      })
      .execute();

    // Start the service: the migration runs, then the sealing step.
    const app = await buildApp(config, { database: test.database, ...testLogging() });
    t.after(() => app.close());
    const row = await test.database.db.selectFrom('kyc_requests').selectAll().where('id', '=', kycId).executeTakeFirstOrThrow();
    assert.equal(row.email, '');
    assert.ok(row.email_enc?.startsWith('v1.'));
    assert.equal(JSON.parse(openPayload(app.svc.box, { id: eventId, ...(await eventOf(test.database.db, eventId)) })).email, email);
    for (const table of ['kyc_requests', 'callback_events']) assert.ok(!(await texts(db, table)).includes(email), table);

    // Unique by the hash: the old request's e-mail is still taken for its merchant, whatever its case.
    await assert.rejects(
      runVerb(app.svc, submitKyc, {
        input: kycBody({ email: email.toUpperCase() }) as unknown as KycShareInput,
        merchantId,
        actor: 'test',
      }),
      (e: Error) => e instanceof DomainError && e.kind === 'kycEmailUsed',
    );
    // …and opens again as it was stored.
    const read = await runVerb(app.svc, async ({ ctx }) => toKycModel(ctx.svc.box, await loadKyc(ctx.tx, merchantId, 'REQ-OLD')), {
      input: {},
      actor: 'test',
    });
    assert.equal(read.email, email);
  });
});

async function eventOf(db: Kysely<any>, id: string): Promise<{ payload: string }> {
  return db.selectFrom('callback_events').select('payload').where('id', '=', id).executeTakeFirstOrThrow();
}

it('the audit trail redacts the e-mail and every sealed identity field, at any depth, and keeps the rest', () => {
  const fields = [...IDENTITY_FIELDS, ...KYC_SEALED_FIELDS, 'email'];
  const record = { ...Object.fromEntries(fields.map((f) => [f, 'x@example.com'])), kycStatus: 'approved', requestNo: 'REQ-1' };
  const out = redact({ model: record, list: [record] }) as { model: Record<string, unknown>; list: Array<Record<string, unknown>> };
  for (const shown of [out.model, out.list[0] ?? {}]) {
    for (const f of fields) assert.equal(shown[f], '[redacted]', f);
    assert.deepEqual([shown.kycStatus, shown.requestNo], ['approved', 'REQ-1']);
  }
});
