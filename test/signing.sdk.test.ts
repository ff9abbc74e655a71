import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import * as sdk from '../client/src/signing.js';
import * as service from '../src/http/signing.js';
import { ALL_VECTORS, docVectors, SIGNING_SECRET } from './helpers/signing-vectors.js';

// One signer on each side of the wire: the SDK's (client/src/signing.ts, which the CLI's call and demo
// use too) and the service's (src/http/signing.ts). They must agree on every vector of
// docs/signing.md, and on any body.
describe('the SDK signs what the service verifies (docs/signing.md test vectors)', () => {
  it('docs/signing.md lists exactly the vectors the tests hold', () => {
    assert.deepEqual(docVectors(), ALL_VECTORS);
  });

  for (const [i, v] of docVectors().entries()) {
    it(`vector ${i + 1}: same signing string and HMAC on both sides; the service accepts the SDK's sign`, () => {
      assert.equal(sdk.signingString(v.body), v.string);
      assert.equal(service.signingString(v.body), v.string);
      const sign = sdk.signature({ secret: SIGNING_SECRET }, sdk.signingString(v.body));
      assert.equal(sign, v.sign);
      assert.equal(service.hmacSign(SIGNING_SECRET, v.string), v.sign);
      assert.equal(service.verifyHmac(SIGNING_SECRET, service.signingString({ ...v.body, sign }), sign), true);
      assert.equal(service.verifyHmac(SIGNING_SECRET, service.signingString({ ...v.body, extra: 1 }), sign), false);
    });
  }

  it("RSA-SHA256: the service verifies the SDK's signature of every vector, and refuses it for another body", () => {
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    for (const v of docVectors()) {
      const sign = sdk.signature({ privateKey }, sdk.signingString(v.body));
      assert.equal(service.verifyRsa(pem, service.signingString(v.body), sign), true);
      assert.equal(service.verifyRsa(pem, service.signingString({ ...v.body, appId: 'mch_other' }), sign), false);
    }
  });

  it('any body of plain field names: both sides write the same signing string (property)', () => {
    const key = fc.stringMatching(/^[A-Za-z][A-Za-z0-9_]{0,11}$/).filter((k) => k !== '__proto__');
    const value = fc.oneof(
      fc.string({ unit: fc.constantFrom('a', '&', '%', '=', 'é', ' ') }),
      fc.string(),
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.boolean(),
      fc.constant(null),
      fc.constant(''),
      fc.jsonValue(),
    );
    fc.assert(
      fc.property(fc.dictionary(key, value), (body) => {
        assert.equal(sdk.signingString(body), service.signingString(body));
        assert.equal(sdk.canonicalJson(body), service.canonicalJson(body));
      }),
      { seed: 18, numRuns: 500 },
    );
  });
});
