import assert from 'node:assert/strict';
import { it } from 'node:test';
import { build, holderBody, rowCounts, sign } from './helpers/app.js';
import { eachDialect } from './helpers/dialects.js';

const CREATE = '/api/network/holderCreate.html';

eachDialect('error envelope (decisions §5)', (dialect) => {
  async function post(h: Awaited<ReturnType<typeof build>>, payload: string | Buffer, contentType?: string) {
    const res = await h.app.inject({
      method: 'POST',
      url: CREATE,
      payload,
      headers: contentType ? { 'content-type': contentType } : {},
    });
    return { status: res.statusCode, body: res.json(), headers: res.headers };
  }

  it('malformed JSON, a wrong content type, an empty body and a JSON array are 1002/400, never 500', async (t) => {
    const h = await build(t, dialect);
    const before = await rowCounts(h);
    const cases: Array<[string | Buffer, string | undefined, RegExp]> = [
      ['{"appId": "x"', 'application/json', /^body: must be well-formed JSON/],
      ['{"a":1,}', 'application/json', /^body: /],
      ['', 'application/json', /^body: /],
      ['[1,2]', 'application/json', /^body: must be a JSON object/],
      ['"text"', 'application/json', /^body: must be a JSON object/],
      ['null', 'application/json', /^body: /],
      ['appId=x&sign=y', 'application/x-www-form-urlencoded', /Content-Type must be application\/json/],
      ['{"appId":"x"}', 'text/plain', /Content-Type must be application\/json/],
      ['{"appId":"x"}', undefined, /Content-Type must be application\/json/],
      ['{"__proto__":{"x":1}}', 'application/json', /^body: must not contain __proto__/],
      [Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), 'application/json', /^body: must be UTF-8 encoded/],
      ['{"appId":"x","sex":1e400}', 'application/json', /^body: numbers must be finite/],
      [`{"appId":"x","deep":${'['.repeat(5000)}${']'.repeat(5000)}}`, 'application/json', /^body: must not nest deeper than 32 levels/],
      ['{"appId":"x"}', 'application/json; charset=latin1', /^Content-Type: charset must be utf-8/],
      ['{"constructor":{"prototype":{"x":1}}}', 'application/json', /^body: must not contain __proto__ or constructor.prototype keys/],
      ['{"appId":"x","appId":"y"}', 'application/json', /^body: must not repeat the key "appId"$/],
      ['{"appId":"x","a":{"b":1,"c":[{"d":1}],"\\u0062":2}}', 'application/json', /^body: must not repeat the key "b"$/],
    ];
    for (const [payload, ct, msg] of cases) {
      const res = await post(h, payload, ct);
      assert.equal(res.status, 400, `${String(payload)} ${ct}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.code, '1002');
      assert.match(res.body.msg, msg);
      assert.equal(res.body.success, false);
      assert.equal(res.body.error, true);
      assert.equal(res.body.model, null);
      assert.equal(res.body.traceId, res.headers['x-trace-id']);
      assert.equal(res.body.errMsg, res.body.msg, 'cardholder creation failures carry errMsg too');
    }
    assert.deepEqual(await rowCounts(h), before);
  });

  it('NUL, C0 and DEL controls and lone surrogates in any string, at any depth, are 1002 naming the field, before the merchant lookup (issue 14.7)', async (t) => {
    const h = await build(t, dialect);
    const before = await rowCounts(h);
    // Raw JSON text: escapes reach the parser exactly as an attacker would send them.
    const cases: Array<[string, string]> = [
      // PostgreSQL answered 500 (invalid byte sequence 0x00) from the merchant lookup.
      ['{"appId":"mch_\\u0000x","sign":"x"}', 'appId: must not contain control characters'],
      [`{"appId":"${h.merchant.appId}","mobile":"+49\\u0000","sign":"x"}`, 'mobile: must not contain control characters'],
      [
        '{"appId":"x","individualInfo":{"address":{"city":"Ber\\u0001lin"}}}',
        'individualInfo.address.city: must not contain control characters',
      ],
      ['{"appId":"x","list":[{"a":"ok"},{"a":"tab\\there"}]}', 'list[1].a: must not contain control characters'],
      ['{"appId":"x","remark":"line\\nbreak"}', 'remark: must not contain control characters'],
      ['{"appId":"x","remark":"del\\u007f"}', 'remark: must not contain control characters'],
      ['{"appId":"x","remark":"\\u001f"}', 'remark: must not contain control characters'],
      ['{"appId":"x","remark":"half \\ud800 pair"}', 'remark: must not contain a lone surrogate (not valid Unicode)'],
      ['{"appId":"x","remark":"\\udc00"}', 'remark: must not contain a lone surrogate (not valid Unicode)'],
      ['{"appId":"x","na\\u0000me":"v"}', 'body: keys must not contain control characters or lone surrogates'],
    ];
    for (const [payload, msg] of cases) {
      const res = await post(h, payload, 'application/json');
      assert.equal(res.status, 400, `${payload}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.code, '1002');
      assert.equal(res.body.msg, msg, payload);
    }
    // A raw (unescaped) control byte is not JSON at all; a real surrogate pair and other Unicode text
    // are fine; C1 controls are controls too (an outside review found U+0085 and U+009B let through).
    const raw = await post(h, `{"appId":"x\u0001"}`, 'application/json');
    assert.equal(raw.body.code, '1002');
    const fine = await post(h, '{"appId":"mch_nobody","remark":"Zoë \\ud83d\\ude00 \\u00a0","sign":"x"}', 'application/json');
    assert.doesNotMatch(fine.body.msg, /control|surrogate/, 'a surrogate pair and other Unicode text pass the body parser');
    const c1 = await post(h, '{"appId":"mch_nobody","remark":"a\\u009bb","sign":"x"}', 'application/json');
    assert.deepEqual([c1.status, c1.body.msg], [400, 'remark: must not contain control characters']);
    assert.deepEqual(await rowCounts(h), before);
  });

  it('a compressed body and a malformed URL get the envelope too', async (t) => {
    const h = await build(t, dialect);
    const gz = await h.app.inject({
      method: 'POST',
      url: CREATE,
      payload: Buffer.from([0x1f, 0x8b, 0x08, 0x00]),
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    });
    assert.equal(gz.statusCode, 400);
    assert.equal(gz.json().msg, 'Content-Encoding: is not supported: send the body uncompressed');
    const bad = await h.app.inject({ method: 'POST', url: '/api/%zz', payload: '{}', headers: { 'content-type': 'application/json' } });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().code, '1002');
    assert.equal(bad.json().traceId, bad.headers['x-trace-id']);
  });

  it('a body over 1 MiB is 413 with the envelope', async (t) => {
    const h = await build(t, dialect);
    const body = JSON.stringify({ ...holderBody(), address: 'A'.repeat(1024 * 1024) });
    const res = await post(h, body, 'application/json');
    assert.equal(res.status, 413);
    assert.equal(res.body.code, '1002');
    assert.match(res.body.msg, /1 MiB/);
  });

  it('an unknown field is a 1002 naming it', async (t) => {
    const h = await build(t, dialect);
    const res = await h.call(CREATE, holderBody({ nickname: 'Al' }));
    assert.equal(res.status, 400);
    assert.equal(res.body.code, '1002');
    assert.equal(res.body.msg, 'nickname: is not a known field');
  });

  it('an unknown operation is 404 with code 1004; GET on an operation too', async (t) => {
    const h = await build(t, dialect);
    const res = await h.call('/api/network/noSuchThing.html', {});
    assert.equal(res.status, 404);
    assert.equal(res.body.code, '1004');
    const get = await h.app.inject({ method: 'GET', url: CREATE });
    assert.equal(get.statusCode, 404);
    assert.equal(get.json().code, '1004');
  });

  it('a traceId is on every response, as header and in the envelope', async (t) => {
    const h = await build(t, dialect);
    const res = await h.call(CREATE, holderBody({ mobile: 'nope' }));
    assert.match(String(res.headers['x-trace-id']), /^[0-9a-f]{32}$/);
    assert.equal(res.body.traceId, res.headers['x-trace-id']);
    const ok = await h.call(CREATE, holderBody());
    assert.match(String(ok.headers['x-trace-id']), /^[0-9a-f]{32}$/);
  });

  it('/healthz answers 200 with the database, 503 when the database fails', async (t) => {
    const h = await build(t, dialect);
    const ok = await h.app.inject({ method: 'GET', url: '/healthz' });
    assert.equal(ok.statusCode, 200);
    assert.deepEqual(ok.json(), { status: 'ok', database: dialect.name });
    await h.db.database.db.schema.alterTable('merchants').renameTo('merchants_gone').execute();
    const down = await h.app.inject({ method: 'GET', url: '/healthz' });
    assert.equal(down.statusCode, 503);
    assert.deepEqual(down.json(), { status: 'unavailable', database: dialect.name });
  });

  it('an internal failure is 500 with code 1 and no internal detail', async (t) => {
    const h = await build(t, dialect);
    const signed = sign(holderBody(), h.merchant);
    // Break the storage under the running app: the query fails inside the verb.
    await h.db.database.db.schema.dropTable('holder_reviews').execute();
    await h.db.database.db.schema.alterTable('cardholders').renameTo('cardholders_gone').execute();
    const res = await h.call(CREATE, signed, { raw: true });
    assert.equal(res.status, 500);
    assert.deepEqual(Object.keys(res.body).sort(), ['code', 'errMsg', 'error', 'model', 'msg', 'success', 'traceId']);
    assert.equal(res.body.code, '1');
    assert.equal(res.body.msg, 'Internal error');
    assert.doesNotMatch(JSON.stringify(res.body), /cardholders|sqlite|relation|stack|at /i);
  });
});
