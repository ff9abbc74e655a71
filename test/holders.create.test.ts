import assert from 'node:assert/strict';
import { it } from 'node:test';
import { openIdentity } from '../src/holders/identity.js';
import { b64, build, holderBody, randomStr, rowCounts } from './helpers/app.js';
import { eachDialect } from './helpers/dialects.js';

const CREATE = '/api/network/holderCreate.html';

const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
const today = new Date().toISOString().slice(0, 10);

/** [field, bad value, the start of the expected msg]; every rule of interface §4.2 and issue 2 item 7. */
const BAD: Array<[string, unknown, RegExp]> = [
  ['mobile', undefined, /^mobile: is required$/],
  ['mobile', '4915112345678', /^mobile: must be \+ followed by 6 to 15 digits/],
  ['mobile', '+12345', /^mobile: must be \+/],
  ['mobile', '+1234567890123456', /^mobile: must be \+/],
  ['mobile', '+49 151 1234', /^mobile: must be \+/],
  ['mobile', 4915112345678, /^mobile: must be a string/],
  ['firstName', undefined, /^firstName: is required$/],
  ['firstName', 'Alice', /^firstName: must be Base64/],
  ['firstName', 'QWxpY2U', /^firstName: must be Base64/],
  ['firstName', 'QWxp Y2U=', /^firstName: must be Base64/],
  ['firstName', Buffer.from([0xc3, 0x28]).toString('base64'), /^firstName: must be Base64 of UTF-8 text/],
  ['firstName', Buffer.from([0xff, 0xfe, 0x41]).toString('base64'), /^firstName: must be Base64 of UTF-8 text/],
  ['firstName', b64('Al\u0000ice'), /^firstName: must not contain control characters/],
  ['firstName', b64('   '), /^firstName: must not be empty/],
  ['firstName', b64('A'.repeat(51)), /^firstName: must be at most 50 characters/],
  ['firstName', b64('R2-D2'), /^firstName: must contain only letters/],
  ['firstName', '', /^firstName: /],
  ['lastName', 'Schmidt', /^lastName: must be Base64/],
  ['lastName', b64('<script>'), /^lastName: must contain only letters/],
  ['town', undefined, /^town: is required$/],
  ['town', 'Berlin', /^town: must be Base64/],
  ['town', b64('Москва'), /^town: must be written in English/],
  ['address', undefined, /^address: is required$/],
  ['address', b64('北京路 1'), /^address: must be written in English/],
  ['address', b64('x'.repeat(201)), /^address: must be at most 200 characters/],
  ['email', undefined, /^email: is required$/],
  ['email', 'alice', /^email: must be an e-mail address/],
  ['email', 'alice@', /^email: must be an e-mail address/],
  ['email', 'alice@example', /^email: must be an e-mail address/],
  ['email', `${'a'.repeat(250)}@example.com`, /^email: /],
  ['dateOfBirth', undefined, /^dateOfBirth: is required$/],
  ['dateOfBirth', '12/04/1990', /^dateOfBirth: must be a date written yyyy-MM-dd/],
  ['dateOfBirth', '1990-02-30', /^dateOfBirth: must be a real date/],
  ['dateOfBirth', '1990-13-01', /^dateOfBirth: must be a real date/],
  ['dateOfBirth', tomorrow, /^dateOfBirth: must be in the past/],
  ['dateOfBirth', today, /^dateOfBirth: must be in the past/],
  ['dateOfBirth', '1899-12-31', /^dateOfBirth: must not be before 1900/],
  ['nationality', undefined, /^nationality: is required$/],
  ['nationality', 'de', /^nationality: must be a two-letter ISO/],
  ['nationality', 'DEU', /^nationality: must be a two-letter ISO/],
  ['nationality', 'XX', /^nationality: must be an ISO 3166-1 alpha-2/],
  ['sex', undefined, /^sex: is required$/],
  ['sex', 3, /^sex: must be 1 \(male\) or 2 \(female\)/],
  ['sex', '1', /^sex: must be 1 \(male\) or 2 \(female\)/],
  ['sex', 0, /^sex: /],
  ['countryCode', undefined, /^countryCode: is required$/],
  ['countryCode', 'US', /^countryCode: must be the two-letter code of a European country/],
  ['countryCode', 'XX', /^countryCode: must be the two-letter code of a European country/],
  ['countryCode', 'fr', /^countryCode: must be a two-letter European/],
  ['postCode', undefined, /^postCode: is required$/],
  ['postCode', '1', /^postCode: must be 2 to 12/],
  ['postCode', '10115;DROP', /^postCode: must be 2 to 12/],
  ['idnoType', undefined, /^idnoType: is required$/],
  ['idnoType', 3, /^idnoType: must be 1 \(European ID card\) or 2 \(passport\)/],
  ['idnoType', '1', /^idnoType: /],
  ['idno', undefined, /^idno: is required$/],
  ['idno', 'A1', /^idno: must be 3 to 40/],
  ['idno', 'AB/12345', /^idno: must be 3 to 40/],
  ['randomStr', undefined, /^randomStr: is required$/],
  ['randomStr', 'short', /^randomStr: must be exactly 32 letters or digits/],
  ['randomStr', `${'a'.repeat(31)}-`, /^randomStr: must be exactly 32 letters or digits/],
  ['randomStr', 'a'.repeat(33), /^randomStr: must be exactly 32/],
];

eachDialect('create cardholder (interface 4.2)', (dialect) => {
  it('creates a cardholder: the §2.2 record, names decoded, auditStatus 0', async (t) => {
    const h = await build(t, dialect);
    const res = await h.call(CREATE, holderBody({ firstName: b64('Zoë'), lastName: b64("O'Brien-Müller"), idno: 'C01X00T47' }));
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.body).sort(), [
      'auditStatus',
      'errMsg',
      'firstName',
      'holderId',
      'idno',
      'idnoType',
      'lastName',
      'mobile',
    ]);
    assert.match(res.body.holderId, /^hld_[0-9a-z]{24}$/);
    assert.equal(res.body.auditStatus, 0);
    assert.equal(res.body.errMsg, '');
    assert.equal(res.body.firstName, 'Zoë');
    assert.equal(res.body.lastName, "O'Brien-Müller");
    assert.equal(res.body.idno, 'C01X00T47');
    assert.equal(res.body.idnoType, 1);
    assert.equal(res.body.mobile, '+4915112345678');
    const row = await h.db.database.db.selectFrom('cardholders').selectAll().where('id', '=', res.body.holderId).executeTakeFirstOrThrow();
    assert.equal(row.merchant_id, h.merchant.appId);
    const identity = openIdentity(h.app.svc.box, row);
    assert.equal(identity.town, 'Berlin');
    assert.equal(identity.address, 'Invalidenstrasse 117');
  });

  it('lastName is optional: absent or "" (an empty string in the record)', async (t) => {
    const h = await build(t, dialect);
    const body = holderBody();
    delete body.lastName;
    const res = await h.call(CREATE, body);
    assert.equal(res.status, 200);
    assert.equal(res.body.lastName, '');
    const empty = await h.call(CREATE, holderBody({ lastName: '' }));
    assert.equal(empty.status, 200, JSON.stringify(empty.body));
    assert.equal(empty.body.lastName, '');
  });

  it('texts are normalised: composed accents (NFC); full-width letters in addresses folded (NFKC)', async (t) => {
    const h = await build(t, dialect);
    const res = await h.call(CREATE, holderBody({ firstName: b64('Zoe\u0308'), town: b64('ＢＥＲＬＩＮ') }));
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.firstName, 'Zoë');
    const row = await h.db.database.db
      .selectFrom('cardholders')
      .select(['id', 'identity_enc'])
      .where('id', '=', res.body.holderId)
      .executeTakeFirstOrThrow();
    assert.equal(openIdentity(h.app.svc.box, row).town, 'BERLIN');
  });

  it('a passport (idnoType 2) is accepted for any nationality; an ID card (1) only for a European one', async (t) => {
    const h = await build(t, dialect);
    assert.equal((await h.call(CREATE, holderBody({ nationality: 'US', idnoType: 2 }))).status, 200);
    const res = await h.call(CREATE, holderBody({ nationality: 'US', idnoType: 1 }));
    assert.equal(res.status, 400);
    assert.equal(res.body.code, '1002');
    assert.match(res.body.msg, /^idnoType: must be 2 \(passport\)/);
  });

  it('every bad field is a 1002 whose msg names the field and the rule, and writes nothing', async (t) => {
    const h = await build(t, dialect);
    const before = await rowCounts(h);
    for (const [field, value, msg] of BAD) {
      const body = holderBody();
      if (value === undefined) delete body[field];
      else body[field] = value;
      const res = await h.call(CREATE, body);
      assert.equal(res.status, 400, `${field}=${JSON.stringify(value)} → ${JSON.stringify(res.body)}`);
      assert.equal(res.body.code, '1002', `${field}=${JSON.stringify(value)}`);
      assert.match(res.body.msg, msg, `${field}=${JSON.stringify(value)}`);
      assert.equal(res.body.errMsg, res.body.msg);
    }
    assert.deepEqual(await rowCounts(h), before);
  });

  it('a second cardholder with the same document (idnoType, idno) is 2611/409; another merchant may use it', async (t) => {
    const h = await build(t, dialect);
    const first = await h.call(CREATE, holderBody({ idno: 'P1234567' }));
    assert.equal(first.status, 200);
    const before = await rowCounts(h);
    // Same document written differently (case, hyphen) is the same document.
    for (const idno of ['P1234567', 'p1234567', 'P-1234567']) {
      const dup = await h.call(CREATE, holderBody({ idno, email: 'other@example.com' }));
      assert.equal(dup.status, 409);
      assert.equal(dup.body.code, '2611');
      assert.equal(dup.body.msg, `A cardholder with this idnoType and idno already exists: ${first.body.holderId}`);
    }
    assert.deepEqual(await rowCounts(h), before);
    // Same number under the other document type is another document.
    assert.equal((await h.call(CREATE, holderBody({ idno: 'P1234567', idnoType: 2 }))).status, 200);
    const other = await h.newMerchant();
    assert.equal((await h.call(CREATE, holderBody({ idno: 'P1234567' }), { merchant: other })).status, 200);
  });

  it('a rejected cardholder leaves the document free for a new application', async (t) => {
    const h = await build(t, dialect);
    const first = await h.call(CREATE, holderBody({ idno: 'REJ123456' }));
    await h.call('/sandbox/holder/review', {
      holderId: first.body.holderId,
      auditStatus: 3,
      errMsg: 'Document unreadable',
      randomStr: randomStr(),
    });
    const again = await h.call(CREATE, holderBody({ idno: 'REJ123456' }));
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.notEqual(again.body.holderId, first.body.holderId);
    const third = await h.call(CREATE, holderBody({ idno: 'REJ123456' }));
    assert.equal(third.body.code, '2611', 'but only one live application at a time');
  });

  it('two concurrent creations with one document and different randomStr: one 200, one 2611', async (t) => {
    const h = await build(t, dialect);
    const results = await Promise.all([1, 2, 3].map(() => h.call(CREATE, holderBody({ idno: 'RACE12345', randomStr: randomStr() }))));
    assert.deepEqual(results.map((r) => r.status).sort(), [200, 409, 409]);
    const n = await h.db.database.db
      .selectFrom('cardholders')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    assert.equal(Number(n.n), 1);
  });
});
