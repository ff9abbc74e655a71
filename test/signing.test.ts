import assert from 'node:assert/strict';
import { generateKeyPairSync, sign as rsaSign } from 'node:crypto';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { canonicalJson, hmacSign, signingString, verifyHmac, verifyRsa } from '../src/http/signing.js';
import { DECISION_VECTORS, ESCAPE_VECTORS, SIGNING_SECRET } from './helpers/signing-vectors.js';

const SECRET = SIGNING_SECRET;

const VECTORS = DECISION_VECTORS;

describe('signing string and signatures (decisions §3)', () => {
  for (const [i, v] of VECTORS.entries()) {
    it(`test vector ${i + 1}`, () => {
      assert.equal(signingString(v.body), v.string);
      assert.equal(hmacSign(SECRET, v.string), v.sign);
      assert.equal(verifyHmac(SECRET, v.string, v.sign), true);
      assert.equal(verifyHmac(SECRET, v.string, v.sign.toUpperCase()), true, 'hex is case-insensitive');
    });
  }

  for (const [i, v] of ESCAPE_VECTORS.entries()) {
    it(`escape test vector ${i + 1}: '%' and '&' in a value are written %25 and %26`, () => {
      assert.equal(signingString(v.body), v.string);
      assert.equal(hmacSign(SECRET, v.string), v.sign);
    });
  }

  it('a value holding "&key=" no longer signs like two fields; objects are escaped too', () => {
    assert.notEqual(signingString({ a: '1&b=2' }), signingString({ a: '1', b: '2' }));
    assert.notEqual(signingString({ a: '1%26b=2' }), signingString({ a: '1&b=2' }));
    assert.equal(signingString({ x: { k: 'a&b%' } }), 'x={"k":"a%26b%25"}');
    assert.equal(signingString({ pad: 'QUxJQ0U=' }), 'pad=QUxJQ0U=', '= (Base64 padding) is unchanged');
  });

  it('sign itself is never part of the signing string', () => {
    assert.equal(signingString({ b: 1, sign: 'x', a: 'y' }), 'a=y&b=1');
  });

  it('rejects malformed or wrong HMAC signatures without throwing', () => {
    const s = VECTORS[0]!.string;
    assert.equal(verifyHmac(SECRET, s, ''), false);
    assert.equal(verifyHmac(SECRET, s, 'zz'), false);
    assert.equal(verifyHmac(SECRET, s, VECTORS[0]!.sign.slice(0, 63)), false);
    assert.equal(verifyHmac(SECRET, s, `${VECTORS[0]!.sign.slice(0, 63)}0`), false);
    assert.equal(verifyHmac('another-secret', s, VECTORS[0]!.sign), false);
  });

  it('verifies RSA-SHA256 (PKCS#1 v1.5) and rejects a tampered string or a bad encoding', () => {
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const data = VECTORS[1]!.string;
    const sig = rsaSign('sha256', Buffer.from(data), privateKey).toString('base64');
    assert.equal(verifyRsa(pem, data, sig), true);
    assert.equal(verifyRsa(pem, `${data}x`, sig), false);
    assert.equal(verifyRsa(pem, data, 'not base64!'), false);
    assert.equal(verifyRsa(pem, data, VECTORS[1]!.sign), false, 'an HMAC hex signature is not an RSA signature');
  });

  it('canonical JSON is independent of key order and stable under a parse round trip (property)', () => {
    const json = fc.jsonValue();
    fc.assert(
      fc.property(json, (value) => {
        const c = canonicalJson(value);
        assert.equal(canonicalJson(JSON.parse(c)), c);
        // Rebuild objects with keys in reverse order: same canonical form.
        const reversed = (v: unknown): unknown =>
          Array.isArray(v)
            ? v.map(reversed)
            : v && typeof v === 'object'
              ? Object.fromEntries(
                  Object.entries(v)
                    .reverse()
                    .map(([k, x]) => [k, reversed(x)]),
                )
              : v;
        assert.equal(canonicalJson(reversed(value)), c);
        assert.doesNotMatch(c, /\n/);
      }),
      { seed: 20261122, numRuns: 500 },
    );
  });

  it('signing string: a field and its value appear once, sorted by code unit, empty and null dropped (property)', () => {
    const key = fc.stringMatching(/^[A-Za-z][A-Za-z0-9_]{0,11}$/).filter((k) => k !== 'sign' && k !== '__proto__');
    // Any text, '&' and '%' included: they are escaped, so the string splits back into the body.
    const value = fc.oneof(
      fc.string({ unit: fc.constantFrom('a', '&', '%', '=', '2', '6') }),
      fc.string(),
      fc.integer(),
      fc.boolean(),
      fc.constant(null),
      fc.constant(''),
    );
    fc.assert(
      fc.property(fc.dictionary(key, value), (body) => {
        const parts = signingString(body).split('&').filter(Boolean);
        const keys = parts.map((p) => p.slice(0, p.indexOf('=')));
        assert.deepEqual(keys, [...keys].sort());
        const expected = Object.entries(body).filter(([, v]) => v !== null && v !== '');
        assert.equal(keys.length, expected.length);
        // Unambiguous: unescaping each part gives back exactly the values.
        const decoded = Object.fromEntries(
          parts.map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1).replace(/%2[56]/g, (m) => (m === '%25' ? '%' : '&'))]),
        );
        assert.deepEqual(decoded, Object.fromEntries(expected.map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)])));
      }),
      { seed: 7, numRuns: 500 },
    );
  });

  it('RFC 8785 samples: numbers in ECMAScript form, non-ASCII kept, keys by UTF-16 code unit', () => {
    assert.equal(canonicalJson({ b: 1e21, a: 0.1, c: -0, d: 1.5e-7 }), '{"a":0.1,"b":1e+21,"c":0,"d":1.5e-7}');
    assert.equal(canonicalJson({ '€': 1, '\u{1F600}': 2, a: 3 }), '{"a":3,"€":1,"😀":2}');
    assert.equal(canonicalJson(['Müller', true, null]), '["Müller",true,null]');
  });
});
