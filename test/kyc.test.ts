import assert from 'node:assert/strict';
import { it } from 'node:test';
import { b64, build, holderBody, kycBody, randomStr, rowCounts } from './helpers/app.js';
import { eachDialect } from './helpers/dialects.js';

const SHARE = '/open/api/kyc/share/information';
const QUERY = '/open/api/kyc/share/query';
const REVIEW = '/sandbox/kyc/review';

const address = { country: 'DE', state: 'Berlin', city: 'Berlin', address: 'Invalidenstrasse 117', zipCode: '10115' };
const future = new Date(Date.now() + 86_400_000 * 400).toISOString().slice(0, 10);
const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);

eachDialect('KYC sharing (interface 4.3)', (dialect) => {
  it('accepts a request with the address nested (as the sample) or beside individualInfo (as the table)', async (t) => {
    const h = await build(t, dialect);
    const nested = await h.call(SHARE, kycBody());
    assert.equal(nested.status, 200, JSON.stringify(nested.body));
    assert.deepEqual(
      { ...nested.body, traceId: 'x' },
      { code: '0', msg: 'success', model: null, traceId: 'x', success: true, error: false },
    );
    const body = kycBody({}, { gender: 2, idDocType: 1, validUntil: future, ipAddress: '2001:db8::7' });
    const info = body.individualInfo as Record<string, unknown>;
    delete info.address;
    const sibling = await h.call(SHARE, { ...body, address, holderType: 1 });
    assert.equal(sibling.status, 200, JSON.stringify(sibling.body));
    const us = await h.call(SHARE, kycBody({}, { address: { ...address, country: 'US', state: 'NY', ssn: '123-45-6789' } }));
    assert.equal(us.status, 200, JSON.stringify(us.body));
    // The personal data is sealed at rest.
    const rows = await h.db.database.db.selectFrom('kyc_requests').select(['data_enc', 'status']).execute();
    assert.equal(rows.length, 3);
    for (const r of rows) {
      assert.equal(r.status, 'init');
      assert.ok(!r.data_enc.includes('Müller') && !r.data_enc.includes('123456789'));
    }
  });

  it('requestNo is idempotent for ever: same body replays, another body is 1008; an e-mail used again is 2610', async (t) => {
    const h = await build(t, dialect);
    const body = kycBody();
    assert.equal((await h.call(SHARE, body)).status, 200);
    const again = await h.call(SHARE, { ...body, timestamp: Date.now() });
    assert.equal(again.status, 200);
    assert.equal(again.headers['x-idempotent-replay'], 'true');
    const before = await rowCounts(h);
    const other = await h.call(SHARE, { ...body, kycPlatform: 'ONFIDO' });
    assert.equal(other.status, 409);
    assert.equal(other.body.code, '1008');
    assert.match(other.body.msg, /^requestNo: already used for a different request/);
    const sameEmail = await h.call(SHARE, kycBody({ email: body.email }));
    assert.equal(sameEmail.status, 409);
    assert.equal(sameEmail.body.code, '2610');
    assert.deepEqual(await rowCounts(h), before);
    const n = await h.db.database.db.selectFrom('kyc_requests').select('id').execute();
    assert.equal(n.length, 1);
    // Another merchant may use the same requestNo and e-mail.
    const m2 = await h.newMerchant();
    assert.equal((await h.call(SHARE, body, { merchant: m2 })).status, 200);
  });

  it('concurrent submissions of one requestNo create one request', async (t) => {
    const h = await build(t, dialect);
    const body = kycBody();
    const results = await Promise.all([1, 2, 3, 4].map(() => h.call(SHARE, body)));
    assert.deepEqual(
      results.map((r) => r.status),
      [200, 200, 200, 200],
    );
    const n = await h.db.database.db.selectFrom('kyc_requests').select('id').execute();
    assert.equal(n.length, 1);
  });

  it('every bad input is a 1002 naming the element, and writes nothing', async (t) => {
    const h = await build(t, dialect);
    const before = await rowCounts(h);
    const cases: Array<[Record<string, unknown>, Record<string, unknown>, RegExp]> = [
      [{ requestNo: undefined }, {}, /^requestNo: is required$/],
      [{ requestNo: 'has space' }, {}, /^requestNo: must be 1 to 64 letters/],
      [{ requestNo: 'x'.repeat(65) }, {}, /^requestNo: /],
      [{ email: 'not-an-email' }, {}, /^email: must be an e-mail address$/],
      [{ email: undefined }, {}, /^email: is required$/],
      [{ kycPlatform: 'ACME' }, {}, /^kycPlatform: must be one of SUMSUB, ONFIDO, JUMIO, VERIFF, MANUAL$/],
      [{ holderType: '2' }, {}, /^holderType: must be "1" \(personal\)$/],
      [{ holderType: 2 }, {}, /^holderType: must be "1" \(personal\)$/],
      [{ callbackUrl: 'not a url' }, {}, /^callbackUrl: must be an absolute/],
      [{ callbackUrl: 'ftp://x.example/kyc' }, {}, /^callbackUrl: must be an http\(s\) URL$/],
      [{ individualInfo: undefined }, {}, /^individualInfo: is required$/],
      [{}, { firstName: undefined }, /^individualInfo.firstName: is required$/],
      [{}, { firstName: 'R2-D2' }, /^individualInfo.firstName: must contain only letters/],
      [{}, { lastName: '' }, /^individualInfo.lastName: must be the last name/],
      [{}, { dob: '1985-02-30' }, /^individualInfo.dob: must be a real date/],
      [{}, { dob: '04/03/1985' }, /^individualInfo.dob: must be the date of birth written YYYY-MM-DD$/],
      [{}, { dob: tomorrow }, /^individualInfo.dob: must be in the past$/],
      [{}, { country: 'XX' }, /^individualInfo.country: must be an ISO 3166-1 alpha-2/],
      [{}, { country: 'de' }, /^individualInfo.country: must be the country/],
      [{}, { gender: 3 }, /^individualInfo.gender: must be 1 \(man\) or 2 \(woman\)$/],
      [{}, { gender: 'M' }, /^individualInfo.gender: must be 1 \(man\) or 2 \(woman\)$/],
      [{}, { idDocType: '5' }, /^individualInfo.idDocType: /],
      [{}, { idDocType: 0 }, /^individualInfo.idDocType: /],
      [{}, { number: 'A' }, /^individualInfo.number: must be the document number/],
      [{}, { validUntil: yesterday }, /^individualInfo.validUntil: must not be in the past/],
      [{}, { validUntil: '2099-13-01' }, /^individualInfo.validUntil: must be a real date/],
      [{}, { ipAddress: '300.1.2.3' }, /^individualInfo.ipAddress: must be an IPv4 or IPv6 address$/],
      [{}, { ipAddress: 'localhost' }, /^individualInfo.ipAddress: must be an IPv4 or IPv6 address$/],
      [{}, { address: undefined }, /^individualInfo.address: is required$/],
      [{ address }, {}, /^address: send it once/],
      [{}, { address: { ...address, city: undefined } }, /^individualInfo.address.city: is required$/],
      [{}, { address: { ...address, zipCode: '!' } }, /^individualInfo.address.zipCode: must be 2 to 12/],
      [{}, { address: { ...address, country: 'US' } }, /^individualInfo.address.ssn: is required when the country is US$/],
      [{}, { address: { ...address, ssn: '123456789' } }, /^individualInfo.address.ssn: must be sent only when the country is US$/],
      [{}, { address: { ...address, country: 'US', ssn: '12-345' } }, /^individualInfo.address.ssn: must be a US social security number/],
      [{}, { address: { ...address, extra: 1 } }, /^individualInfo.address.extra: is not a known field$/],
      [{}, { nickname: 'Bobby' }, /^individualInfo.nickname: is not a known field$/],
      [{ randomStr: randomStr() }, {}, /^randomStr: is not a known field$/],
    ];
    for (const [top, info, msg] of cases) {
      const body = kycBody(top, info);
      for (const [k, v] of Object.entries(top)) if (v === undefined) delete body[k];
      const i = body.individualInfo as Record<string, unknown> | undefined;
      if (i) for (const [k, v] of Object.entries(info)) if (v === undefined) delete i[k];
      const res = await h.call(SHARE, body);
      assert.equal(res.body.code, '1002', `${JSON.stringify({ top, info })} → ${JSON.stringify(res.body)}`);
      assert.equal(res.status, 400);
      assert.match(res.body.msg, msg, JSON.stringify({ top, info }));
    }
    assert.deepEqual(await rowCounts(h), before);
    assert.equal((await h.db.database.db.selectFrom('kyc_requests').select('id').execute()).length, 0);
  });

  it('approval makes the e-mail’s cardholder approved, or creates one from the KYC data; it can then get a card', async (t) => {
    const h = await build(t, dialect);
    // No cardholder yet: one is created, approved.
    const a = kycBody();
    await h.call(SHARE, a);
    const approved = await h.call(REVIEW, { requestNo: a.requestNo, kycStatus: 'approved', randomStr: randomStr() });
    assert.equal(approved.status, 200, JSON.stringify(approved.body));
    const holderId = approved.body.model.holderId;
    assert.match(holderId, /^hld_/);
    const holder = await h.call('/api/network/holderQuery.html', { holderId, randomStr: randomStr() });
    assert.deepEqual([holder.body.model.auditStatus, holder.body.model.firstName, holder.body.model.lastName], [2, 'Bob', 'Müller']);
    const card = await h.call('/api/network/cardApply.html', { holderId, currency: 'EUR', randomStr: randomStr() });
    assert.equal(card.status, 200);
    // An existing pending cardholder with the e-mail is approved, not duplicated.
    const existing = (
      await h.call(
        '/api/network/holderCreate.html',
        holderBody({ email: 'carol@example.com', firstName: b64('Bob'), lastName: b64('Müller'), dateOfBirth: '1985-03-04' }),
      )
    ).body;
    const b = kycBody({ email: 'carol@example.com' });
    await h.call(SHARE, b);
    const r = await h.call(REVIEW, { requestNo: b.requestNo, kycStatus: 'approved', randomStr: randomStr() });
    assert.equal(r.body.model.holderId, existing.holderId);
    const q = await h.call('/api/network/holderQuery.html', { holderId: existing.holderId, randomStr: randomStr() });
    assert.equal(q.body.model.auditStatus, 2);
  });

  it('approval never approves another person: a cardholder with the e-mail but another name or birth date is left alone', async (t) => {
    const h = await build(t, dialect);
    const alice = (await h.call('/api/network/holderCreate.html', holderBody({ email: 'alice@example.com' }))).body;
    const mallory = kycBody({ email: 'alice@example.com' }, { firstName: 'Mallory', lastName: 'Evil' });
    await h.call(SHARE, mallory);
    const r = await h.call(REVIEW, { requestNo: mallory.requestNo, kycStatus: 'approved', randomStr: randomStr() });
    assert.equal(r.body.model.kycStatus, 'approved');
    assert.equal(r.body.model.holderId, null);
    assert.equal(r.body.model.reason, `cardholder ${alice.holderId} was not approved: its name or date of birth differs from the KYC data`);
    const q = await h.call('/api/network/holderQuery.html', { holderId: alice.holderId, randomStr: randomStr() });
    assert.equal(q.body.model.auditStatus, 0);
  });

  it('rejection, query, decided requests and unknown ones', async (t) => {
    const h = await build(t, dialect);
    const a = kycBody();
    await h.call(SHARE, a);
    const q0 = await h.call(QUERY, { requestNo: a.requestNo, randomStr: randomStr() });
    assert.deepEqual(q0.body.model, { requestNo: a.requestNo, email: a.email, kycStatus: 'init', reason: '', holderId: null });
    const rej = await h.call(REVIEW, { requestNo: a.requestNo, kycStatus: 'rejected', reason: 'Document expired', randomStr: randomStr() });
    assert.equal(rej.body.model.kycStatus, 'rejected');
    const q1 = await h.call(QUERY, { requestNo: a.requestNo, randomStr: randomStr() });
    assert.equal(q1.body.model.reason, 'Document expired');
    const again = await h.call(REVIEW, { requestNo: a.requestNo, kycStatus: 'approved', randomStr: randomStr() });
    assert.equal(again.status, 409);
    assert.equal(again.body.code, '2614');
    for (const [requestNo, merchant] of [
      ['REQ-unknown', undefined],
      [a.requestNo, await h.newMerchant()],
    ] as const) {
      const q = await h.call(QUERY, { requestNo, randomStr: randomStr() }, merchant ? { merchant } : {});
      assert.equal(q.status, 404);
      assert.equal(q.body.code, '2613');
      const r = await h.call(REVIEW, { requestNo, kycStatus: 'approved', randomStr: randomStr() }, merchant ? { merchant } : {});
      assert.equal(r.body.code, '2613');
    }
    const bad = await h.call(REVIEW, { requestNo: a.requestNo, kycStatus: 'maybe', randomStr: randomStr() });
    assert.equal(bad.body.msg, 'kycStatus: must be approved or rejected');
  });

  it('the sandbox reviewer decides by test values: approved, +reject rejected, +manual left for a person', async (t) => {
    const h = await build(t, dialect, { kyc: { platforms: ['SUMSUB'], autoDecisionMs: 1 } });
    const { kycAutomation } = await import('../src/kyc/automation.js');
    const job = kycAutomation(h.app.svc);
    const ok = kycBody({ email: 'dana@example.com' });
    const no = kycBody({ email: 'erin+reject@example.com' });
    const manual = kycBody({ email: 'finn+manual@example.com' });
    for (const b of [ok, no, manual]) assert.equal((await h.call(SHARE, b)).status, 200);
    await job(Date.now() + 10);
    await job(Date.now() + 20);
    const status = async (b: Record<string, unknown>) =>
      (await h.call(QUERY, { requestNo: b.requestNo, randomStr: randomStr() })).body.model;
    assert.equal((await status(ok)).kycStatus, 'approved');
    assert.deepEqual(
      [(await status(no)).kycStatus, (await status(no)).reason],
      ['rejected', 'Sandbox: rejected because the e-mail contains +reject'],
    );
    assert.equal((await status(manual)).kycStatus, 'reviewing');
  });

  it('production: callbackUrl must be https to a public host; the sandbox review is 404', async (t) => {
    const h = await build(t, dialect, { env: 'production' });
    for (const callbackUrl of [
      'http://merchant.example/kyc',
      'https://127.0.0.1/kyc',
      'https://169.254.169.254/latest',
      'https://[::ffff:10.0.0.1]/kyc',
    ]) {
      const res = await h.call(SHARE, kycBody({ callbackUrl }));
      assert.equal(res.body.code, '1002', callbackUrl);
      assert.match(res.body.msg, /^callbackUrl: /);
    }
    assert.equal((await h.call(SHARE, kycBody({ callbackUrl: 'https://merchant.example/kyc' }))).status, 200);
    assert.equal((await h.call(REVIEW, { requestNo: 'x', kycStatus: 'approved', randomStr: randomStr() })).status, 404);
  });
});
