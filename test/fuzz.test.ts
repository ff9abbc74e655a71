import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import { type Kysely, sql } from 'kysely';
import { hmacSign, signingString } from '../src/http/signing.js';
import { build, type Harness, randomStr } from './helpers/app.js';
import { fundedCard } from './helpers/cards.js';
import { ownTables } from './helpers/db.js';
import { eachDialect } from './helpers/dialects.js';
import { clearedPurchase, DISPUTE, disputeOk, jpeg, pdf, png, zip } from './helpers/disputes.js';

/** Requests per database in `npm test`; `npm run fuzz` sets FUZZ_RUNS (100,000 in its full run). */
const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
const SEED = Number(process.env.FUZZ_SEED ?? 20261122);

const tableNames = new WeakMap<Harness, string[]>();

/** Rows of every table: a rejected request must leave them as they were. */
async function counts(h: Harness): Promise<Record<string, number>> {
  const db = h.db.database.db as unknown as Kysely<any>;
  // The catalogue is read once per database (no request creates a table), and every table is
  // counted in one query: per table and per request, the full PostgreSQL run took most of an hour.
  let tables = tableNames.get(h);
  if (!tables) {
    tables = (await ownTables(h.db)).map((t) => t.name).sort();
    tableNames.set(h, tables);
  }
  const row = await sql<Record<string, unknown>>`select ${sql.join(
    tables.map((t) => sql`(select count(*) from ${sql.table(t)}) as ${sql.ref(t)}`),
  )}`.execute(db);
  const out: Record<string, number> = {};
  for (const table of tables) {
    out[table] = Number(row.rows[0]?.[table]);
    assert.ok(Number.isSafeInteger(out[table]), `a row count for ${table}`);
  }
  assert.ok(tables.includes('cardholders') && tables.includes('idempotency_keys'), 'every table is counted');
  return out;
}

// Strings the body parser must refuse (issue 14.7): C0 controls (NUL first), DEL and lone surrogates,
// spliced into ordinary text at any position; nested in objects and arrays too.
const controlChar = fc.oneof(
  fc.constant('\u0000'),
  fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c)),
  fc.constant('\u007f'),
);
const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));
const poisoned = fc
  .tuple(fc.string({ maxLength: 20 }), fc.oneof(controlChar, loneSurrogate), fc.string({ maxLength: 20 }))
  .map(([a, bad, b]) => `${a}${bad}${b}`);

/** Whether a value holds, at any depth (keys included), a string the service must refuse. */
function holdsBadString(v: unknown): boolean {
  if (typeof v === 'string') {
    // By code point: a surrogate pair is one code point above U+FFFF, a lone half stays in D800–DFFF.
    return [...v].some((ch) => {
      const c = ch.codePointAt(0) ?? 0;
      return c < 0x20 || c === 0x7f || (c >= 0xd800 && c <= 0xdfff);
    });
  }
  if (v === null || typeof v !== 'object') return false;
  return Object.entries(v).some(([k, child]) => holdsBadString(k) || holdsBadString(child));
}

// Values of every awkward kind: wrong types, huge and odd strings, invalid Base64 and UTF-8 look-alikes,
// impossible dates, numbers as strings, deep nesting, unicode edge cases. Bytes that are not UTF-8 at
// all are a body shape below ('badUtf8').
const nasty = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    '\uFFFD',
    '\uD800',
    '𝔘𝔫𝔦𝔠𝔬𝔡𝔢',
    'e\u0301',
    'ﬀ',
    '%00',
    '../../etc/passwd',
    '<script>alert(1)</script>',
    "' or 1=1 --",
  ),
  fc.constantFrom('2026-02-30', '2026-13-01', '0000-00-00', '99999-01-01', '2026-1-1', 'NaN', 'Infinity', '-0', '1e309', '12.345', '0x10'),
  fc.constantFrom('QUxJQ0U', '====', 'not base64!', '/w==', '4pyTIMOgIGxhIG1vZGU='),
  fc.string({ minLength: 1000, maxLength: 5000 }),
  // Over-long: far beyond any field's maximum, still under the 1 MiB body limit.
  fc.integer({ min: 50_000, max: 200_000 }).map((n) => 'A'.repeat(n)),
  poisoned,
  poisoned,
  fc.dictionary(fc.string({ maxLength: 5 }), poisoned, { minKeys: 1, maxKeys: 2 }).map((d) => ({ nested: [d] })),
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -1, 1e15, 2 ** 53, -(2 ** 53), 0.001, 12.345),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 5 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 3 }),
  fc.constant(JSON.parse('{"a":'.repeat(40) + '1' + '}'.repeat(40))),
);

eachDialect('fuzz: every operation, bad input at scale', (dialect) => {
  it(`${RUNS} generated requests: each answered with the error envelope (or success), never a 5xx, and a rejected one writes nothing`, async (t) => {
    const h = await build(t, dialect);
    const { cardId, holderId } = await fundedCard(h, { topUp: 50 });
    await h.app.ready();
    const doc = h.app.swagger() as { paths: Record<string, { post?: { requestBody?: any } }> };
    const operations = h.app.operations.map((o) => ({
      ...o,
      fields: Object.keys(doc.paths[o.url]?.post?.requestBody?.content?.['application/json']?.schema?.properties ?? {}).filter(
        (f) => f !== 'appId' && f !== 'sign' && f !== 'timestamp',
      ),
    }));
    // Real ids sometimes, so requests reach deeper than "not found".
    const realish = fc.constantFrom(cardId, holderId, `${cardId}x`, 'card_nope', 'REQ-1', '424242******0000');
    const request = fc.record({
      op: fc.constantFrom(...operations),
      values: fc.array(fc.oneof(nasty, realish), { minLength: 30, maxLength: 30 }),
      keep: fc.array(fc.boolean(), { minLength: 30, maxLength: 30 }),
      extra: fc.option(fc.dictionary(fc.oneof(fc.string({ minLength: 1, maxLength: 8 }), poisoned), nasty, { maxKeys: 2 }), {
        nil: undefined,
      }),
      signing: fc.constantFrom('right', 'right', 'right', 'wrong', 'none', 'otherMerchant'),
      shape: fc.constantFrom('json', 'json', 'json', 'json', 'truncated', 'duplicateKey', 'array', 'notJson', 'badUtf8'),
    });
    const other = await h.newMerchant();
    let requests = 0;
    const codes = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(request, async ({ op, values, keep, extra, signing, shape }) => {
        const body: Record<string, unknown> = {};
        op.fields.forEach((f, i) => {
          if (keep[i % keep.length]) body[f] = values[i % values.length];
        });
        if (extra) Object.assign(body, extra);
        const m = signing === 'otherMerchant' ? other : h.merchant;
        body.appId = m.appId;
        if (signing !== 'none') {
          let sign: string;
          try {
            sign = hmacSign(m.secret, signingString(body));
          } catch {
            sign = 'x'; // a body that cannot be canonicalised cannot be signed either
          }
          body.sign = signing === 'wrong' ? `${sign.slice(0, -1)}${sign.endsWith('0') ? '1' : '0'}` : sign;
        }
        let payload = JSON.stringify(body);
        if (shape === 'truncated') payload = payload.slice(0, Math.max(1, Math.floor(payload.length / 2)));
        if (shape === 'duplicateKey') payload = payload.replace(/^\{/, '{"appId":"mch_dup",');
        if (shape === 'array') payload = `[${payload}]`;
        if (shape === 'notJson') payload = `appId=${m.appId}&sign=x`;
        // Invalid UTF-8 inside the first string value: a lone continuation byte, a truncated
        // two-byte sequence, an overlong '/' and a byte that never occurs in UTF-8.
        let raw: string | Buffer = payload;
        if (shape === 'badUtf8') {
          const bytes = Buffer.from(payload);
          const at = bytes.indexOf('":"') + 3;
          raw = Buffer.concat([bytes.subarray(0, at), Buffer.from([0x80, 0xc3, 0x28, 0xc0, 0xaf, 0xff]), bytes.subarray(at)]);
        }
        const before = await counts(h);
        const res = await h.app.inject({ method: 'POST', url: op.url, payload: raw, headers: { 'content-type': 'application/json' } });
        requests++;
        assert.ok(res.statusCode < 500, `${op.url} answered ${res.statusCode}: ${res.body.slice(0, 300)}`);
        const reply = res.json() as Record<string, unknown>;
        // A body that is not one JSON object of UTF-8 text is refused as such, before its signature.
        if (shape !== 'json') assert.deepEqual([res.statusCode, reply.code], [400, '1002'], `${shape} body: ${res.body.slice(0, 300)}`);
        // A control character or lone surrogate anywhere is refused by the body parser, on both databases alike.
        if (holdsBadString(body))
          assert.deepEqual([res.statusCode, reply.code], [400, '1002'], `control character: ${res.body.slice(0, 300)}`);
        if (res.statusCode < 400) {
          assert.equal(res.statusCode, 200, `${op.url}: ${res.body.slice(0, 300)}`);
          assert.equal(reply.success, true);
          assert.equal(reply.error, false);
          assert.equal(reply.code, '0');
          assert.match(String(reply.traceId), /^[0-9a-f]{32}$/);
          codes.set('0', (codes.get('0') ?? 0) + 1);
        } else {
          assert.equal(reply.success, false);
          assert.equal(reply.error, true);
          assert.equal(reply.model, null);
          assert.ok(typeof reply.code === 'string' && reply.code !== '0', `a code: ${res.body}`);
          assert.match(String(reply.traceId), /^[0-9a-f]{32}$/);
          codes.set(String(reply.code), (codes.get(String(reply.code)) ?? 0) + 1);
          const after = await counts(h);
          // What a rejected request may leave: a read's randomStr is used up once it was checked (a
          // nonce, docs/idempotency.md), and a declined authorization is recorded on purpose.
          const allowed = new Set(['idempotency_keys', 'authorizations']);
          for (const [table, n] of Object.entries(after)) {
            if (!allowed.has(table)) assert.equal(n, before[table], `${op.url} rejected with ${reply.code} but wrote to ${table}`);
          }
        }
      }),
      { numRuns: RUNS, seed: SEED },
    );
    assert.equal(requests, RUNS);
    t.diagnostic(`${requests} requests; error codes: ${[...codes.entries()].map(([c, n]) => `${c}×${n}`).join(' ')}`);
  });

  it(`${Math.ceil(RUNS / 3)} generated evidence files: a PDF, PNG or JPEG by its bytes is accepted as such, anything else 2744 writing nothing, never a 5xx`, async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 500 });
    // Disputes on one purchase, each created then withdrawn: the purchase stays disputable.
    const { tradeId } = await clearedPurchase(h, { cardId, amount: 1 });
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(evidenceFile, async ({ declared, bytes, base64 }) => {
        const before = await counts(h);
        const res = await h.call(DISPUTE.create, {
          tradeId,
          reason: 'other',
          evidence: [{ fileName: 'f.bin', contentType: declared, data: base64 ?? bytes.toString('base64') }],
          randomStr: randomStr(),
        });
        assert.ok(res.status < 500, JSON.stringify(res.body));
        if (res.status === 200) {
          accepted++;
          // Accepted only when its first bytes say what was declared.
          const magic = { 'application/pdf': '25504446', 'image/png': '89504e47', 'image/jpeg': 'ffd8ff' }[declared as string];
          assert.ok(magic && bytes.toString('hex').startsWith(magic), `${declared} accepted: ${bytes.subarray(0, 8).toString('hex')}`);
          assert.equal(res.body.model.evidence[0].contentType, declared);
          await disputeOk(h, 'withdraw', { disputeId: res.body.model.disputeId });
          return;
        }
        assert.ok(['2744', '1002'].includes(res.body.code), JSON.stringify(res.body));
        const after = await counts(h);
        for (const [table, n] of Object.entries(after)) assert.equal(n, before[table], `refused evidence wrote to ${table}`);
      }),
      { numRuns: Math.ceil(RUNS / 3), seed: SEED },
    );
    t.diagnostic(`${accepted} accepted`);
  });
});

/** Evidence files: real ones slightly broken, other formats declared as these, random bytes, bad Base64. */
const evidenceFile = fc.oneof(
  fc.record({
    declared: fc.constantFrom('application/pdf', 'image/png', 'image/jpeg'),
    bytes: fc.oneof(
      fc.constant(png()),
      fc.constant(jpeg(10, 10)),
      fc.constant(pdf(3)),
      fc
        .tuple(fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.integer({ min: 0, max: 2 ** 32 - 1 }))
        .map(([w, hgt]) => png(w, hgt, Buffer.alloc(8))),
      fc.tuple(fc.integer({ min: 0, max: 65535 }), fc.integer({ min: 0, max: 65535 })).map(([w, hgt]) => jpeg(w, hgt)),
      fc
        .tuple(fc.constantFrom(png(), jpeg(), pdf(1)), fc.nat(60), fc.uint8Array({ maxLength: 8 }))
        .map(([f, at, junk]) => Buffer.concat([f.subarray(0, at), Buffer.from(junk), f.subarray(at + junk.length)])),
      fc.constantFrom(zip(), Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'), Buffer.from('<html></html>'), Buffer.alloc(0)),
      fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a)),
    ),
    base64: fc.oneof(
      { arbitrary: fc.constant(undefined), weight: 4 },
      { arbitrary: fc.constantFrom('====', 'not base64!', 'QUJD', 'iVBORw0KGgo', 'JVBERi0x\\nJVBERi0x'), weight: 1 },
    ),
  }),
  // What each declared type really is: accepted.
  fc
    .constantFrom(['image/png', png(4, 4)] as const, ['image/jpeg', jpeg(10, 10)] as const, ['application/pdf', pdf(3)] as const)
    .map(([declared, bytes]) => ({ declared, bytes, base64: undefined })),
  fc.record({
    declared: fc.constantFrom('image/svg+xml', 'text/html', 'application/zip', ''),
    bytes: fc.constant(png()),
    base64: fc.constant(undefined),
  }),
);
