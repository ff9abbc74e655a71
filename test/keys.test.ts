import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { buildApp } from '../src/app.js';
import { completeSetup, createOperator, totpSecretOf } from '../src/console/accounts.js';
import { hashPassword } from '../src/console/passwords.js';
import { codeAt, newTotpSecret, stepOf } from '../src/console/totp.js';
import { SecretBox } from '../src/crypto/secretbox.js';
import { addDomain } from '../src/domains/store.js';
import { SEALED_COLUMNS } from '../src/jobs/keys.js';
import { updateMerchant } from '../src/merchants/manage.js';
import { runVerb } from '../src/runner.js';
import { finishChallenge } from '../src/three-ds/finish.js';
import { build, kycBody, randomStr, sign } from './helpers/app.js';
import { fundedCard } from './helpers/cards.js';
import { selfSigned } from './helpers/certs.js';
import { childDatabaseUrl, runCli } from './helpers/cli.js';
import { ownTables } from './helpers/db.js';
import { eachDialect } from './helpers/dialects.js';
import { clearedPurchase, disputeOk, file, png } from './helpers/disputes.js';
import { testLogging } from './helpers/log-audit.js';

eachDialect('keys at rest: master key rotation and PAN data keys', (dialect) => {
  it('reseal moves every sealed value under the new master key; the old key alone no longer starts the service', async (t) => {
    const h = await build(t, dialect);
    const db = h.db.database.db;
    const oldKey = h.config.masterKey;
    const newKey = randomBytes(32);
    const { cardId, holderId } = await fundedCard(h, { topUp: 5 });
    const holderBefore = await h.call('/api/network/holderQuery.html', { holderId, randomStr: randomStr() });
    assert.equal(holderBefore.status, 200);
    const dir = mkdtempSync(join(tmpdir(), 'cardprogram-keys-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const cert = selfSigned(dir, 'cards.rotate.test');
    await runVerb(h.app.svc, addDomain, {
      input: { appId: h.merchant.appId, host: 'cards.rotate.test', certPem: cert.cert, keyPem: cert.key },
      actor: 'test',
    });
    const share = await h.call('/open/api/kyc/share/information', kycBody({ requestNo: 'REQ-ROTATE' }));
    assert.equal(share.status, 200, JSON.stringify(share.body));
    // A decided request's kyc.result event, stored sealed (it carries the request's e-mail).
    assert.equal((await h.call('/open/api/kyc/share/information', kycBody({ requestNo: 'REQ-ROTATE-2' }))).status, 200);
    const rejected = await h.call('/sandbox/kyc/review', {
      requestNo: 'REQ-ROTATE-2',
      kycStatus: 'rejected',
      reason: 'x',
      randomStr: randomStr(),
    });
    assert.equal(rejected.status, 200, JSON.stringify(rejected.body));
    // A dispute's explanation and evidence file.
    const { tradeId } = await clearedPurchase(h, { cardId, amount: 1 });
    await disputeOk(h, 'create', { tradeId, reason: 'other', explanation: 'sealed', evidence: [file('a.png', 'image/png', png())] });
    // A console operator's TOTP key.
    const totp = newTotpSecret();
    const op = await runVerb(h.app.svc, createOperator, { input: { email: 'ops@example.com', role: 'admin' }, actor: 'test' });
    const setUp = await runVerb(h.app.svc, completeSetup, {
      input: {
        token: op.setupToken,
        passwordHash: await hashPassword('correct horse battery staple'),
        totp: { secret: totp, code: codeAt(totp, stepOf(Date.now())) },
        origin: 'test',
      },
      actor: 'test',
    });
    assert.equal(typeof setUp, 'object');
    // A 3-D Secure challenge passed: its RReq waits for the DS sealed (it carries the authentication value).
    await runVerb(h.app.svc, updateMerchant, { input: { appId: h.merchant.appId, notifyUrl: 'http://127.0.0.1:9/hooks' }, actor: 'test' });
    const challenged = await h.call('/sandbox/3ds/authenticate', { cardId, amount: 1, challengeInd: '04', randomStr: randomStr() });
    assert.equal(challenged.body.model?.ares.transStatus, 'C', JSON.stringify(challenged.body));
    await runVerb(h.app.svc, finishChallenge, {
      input: { acsTransID: challenged.body.model.ares.acsTransID, transStatus: 'Y' },
      actor: 'test',
    });

    // Every column whose name ends in _enc is one the reseal knows about.
    const encColumns = (await ownTables(h.db))
      .flatMap((tb) => tb.columns.filter((c) => c.endsWith('_enc')).map((c) => `${tb.name}.${c}`))
      .filter((c) => c !== 'cards.pan_enc') // under a data key, not the master key
      // Not named _enc: a write's stored first answer (it may carry a holder's idno and mobile).
      .concat('idempotency_keys.response_body')
      // Not named _enc either: a kyc.result or threeDs.otp event's stored payload (the request's e-mail, the code).
      .concat('callback_events.payload')
      .sort();
    assert.deepEqual(encColumns, [...SEALED_COLUMNS].sort());

    const env = {
      DATABASE_URL: childDatabaseUrl(h.db),
      CARDPROGRAM_DATA_DIR: h.db.dataDir,
      CARDPROGRAM_MASTER_KEY: newKey.toString('hex'),
      CARDPROGRAM_MASTER_KEY_PREVIOUS: oldKey.toString('hex'),
    };
    const resealed = await runCli(['keys', 'reseal', '--json'], env);
    assert.equal(resealed.code, 0, resealed.stderr);
    const { moved } = JSON.parse(resealed.stdout);
    for (const column of SEALED_COLUMNS) assert.ok(moved[column] >= 1, `${column} moved (${moved[column]})`);
    // The rotation is in the audit trail (issue 30.10): who, which key ids, what moved; never a key.
    const audit = await db.selectFrom('audit_events').selectAll().where('action', '=', 'keys.reseal').execute();
    assert.equal(audit.length, 1);
    assert.equal(audit[0]?.source, 'cli');
    assert.equal(audit[0]?.target, SecretBox.idOf(newKey));
    const recorded = JSON.parse(audit[0]?.after_json ?? '{}');
    assert.deepEqual(recorded.previousMasterKeyIds, [SecretBox.idOf(oldKey)]);
    assert.deepEqual(Object.fromEntries(recorded.moved.map((m: { column: string; values: number }) => [m.column, m.values])), moved);
    for (const k of [newKey, oldKey]) {
      assert.ok(!JSON.stringify(audit).includes(k.toString('hex')) && !JSON.stringify(audit).includes(k.toString('base64')), 'no key');
    }
    const again = await runCli(['keys', 'reseal', '--json'], env);
    assert.ok(
      Object.values(JSON.parse(again.stdout).moved).every((n) => n === 0),
      'a second reseal has nothing to do',
    );
    const newId = SecretBox.idOf(newKey);
    const merchant = await db.selectFrom('merchants').selectAll().where('id', '=', h.merchant.appId).executeTakeFirstOrThrow();
    assert.ok(merchant.secret_enc?.startsWith(`v1.${newId}.`));

    // With the new key alone, everything still opens: signatures, card numbers, KYC data, TLS keys.
    const app = await buildApp({ ...h.config, masterKey: newKey, masterKeyPrevious: [] }, { database: h.db.database, ...testLogging() });
    t.after(() => app.close());
    const post = (url: string, body: Record<string, unknown>) =>
      app.inject({ method: 'POST', url, payload: sign(body, h.merchant), headers: { 'content-type': 'application/json' } });
    const details = await post('/sandbox/network/cardDetails', { cardId, randomStr: randomStr() });
    assert.equal(details.statusCode, 200, details.body);
    assert.match(details.json().model.cardNo, /^424242\d{10}$/);
    // The cardholder's sealed identity data (idno, mobile) moved too.
    const holder = await post('/api/network/holderQuery.html', { holderId, randomStr: randomStr() });
    assert.equal(holder.statusCode, 200, holder.body);
    assert.deepEqual({ ...(holder.json() as Record<string, unknown>), traceId: '' }, { ...holderBefore.body, traceId: '' });
    const identity = await db.selectFrom('cardholders').select('identity_enc').where('id', '=', holderId).executeTakeFirstOrThrow();
    assert.ok(identity.identity_enc?.startsWith(`v1.${newId}.`));
    const decided = await post('/sandbox/kyc/review', { requestNo: 'REQ-ROTATE', kycStatus: 'approved', randomStr: randomStr() });
    assert.equal(decided.statusCode, 200, decided.body);
    assert.ok((await app.svc.domains.lookup('cards.rotate.test'))?.context, 'the TLS key opens');
    const operator = await db.selectFrom('operators').select(['id', 'totp_enc']).executeTakeFirstOrThrow();
    assert.equal(totpSecretOf(app.svc, operator), totp, 'the operator’s TOTP key opens');

    // The old key alone is refused at start, with the reason.
    await assert.rejects(
      buildApp({ ...h.config, masterKey: oldKey, masterKeyPrevious: [] }, { database: h.db.database, ...testLogging() }),
      /sealed under master key/,
    );
  });

  it('keys rotate adds a PAN data key: new cards use it, existing cards still decrypt', async (t) => {
    const h = await build(t, dialect);
    const first = await fundedCard(h);
    const env = {
      DATABASE_URL: childDatabaseUrl(h.db),
      CARDPROGRAM_DATA_DIR: h.db.dataDir,
      CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex'),
    };
    const rotated = await runCli(['keys', 'rotate', '--json'], env);
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.equal(JSON.parse(rotated.stdout).id, 'dk_pan_v2');
    const listed = await runCli(['keys', 'list', '--json'], env);
    assert.deepEqual(
      JSON.parse(listed.stdout)
        .dataKeys.map((k: { id: string }) => k.id)
        .filter((id: string) => id.startsWith('dk_pan_v')),
      ['dk_pan_v1', 'dk_pan_v2'],
    );
    assert.doesNotMatch(listed.stdout, /key_enc|v1\.[A-Za-z0-9_-]{8}\./, 'no key material');
    // The current key of each purpose is marked (issue 30.10), in JSON and in text.
    const pan = JSON.parse(listed.stdout).dataKeys.filter((k: { purpose: string }) => k.purpose === 'pan');
    assert.deepEqual(
      pan.map((k: { id: string; current: boolean }) => [k.id, k.current]),
      [
        ['dk_pan_v1', false],
        ['dk_pan_v2', true],
      ],
    );
    const text = await runCli(['keys', 'list'], env);
    assert.match(text.stdout, /^dk_pan_v2 .*\(current\)$/m);
    assert.doesNotMatch(text.stdout, /^dk_pan_v1 .*\(current\)$/m);
    assert.match(text.stdout, /^master key \S+ {2}\(current: seals and opens\)$/m);
    // The rotation is in the audit trail: who and which key.
    const rotations = await h.db.database.db.selectFrom('audit_events').selectAll().where('action', '=', 'keys.rotate').execute();
    assert.deepEqual(
      rotations.map((r) => [r.source, r.target, JSON.parse(r.after_json ?? '{}').keyId]),
      [['cli', 'dk_pan_v2', 'dk_pan_v2']],
    );
    // A service started now encrypts new cards under v2.
    const app = await buildApp(h.config, { database: h.db.database, ...testLogging() });
    t.after(() => app.close());
    const holder = await h.db.database.db.selectFrom('cards').select('holder_id').where('id', '=', first.cardId).executeTakeFirstOrThrow();
    const post = (url: string, body: Record<string, unknown>) =>
      app.inject({ method: 'POST', url, payload: sign(body, h.merchant), headers: { 'content-type': 'application/json' } });
    const applied = await post('/api/network/cardApply.html', { holderId: holder.holder_id, currency: 'EUR', randomStr: randomStr() });
    assert.equal(applied.statusCode, 200, applied.body);
    const cards = await h.db.database.db.selectFrom('cards').select(['id', 'pan_key_id']).orderBy('created_at').execute();
    assert.deepEqual(
      cards.map((c) => c.pan_key_id),
      ['dk_pan_v1', 'dk_pan_v2'],
    );
    for (const c of cards) {
      const d = await post('/sandbox/network/cardDetails', { cardId: c.id, randomStr: randomStr() });
      assert.equal(d.statusCode, 200, d.body);
    }
  });
});
