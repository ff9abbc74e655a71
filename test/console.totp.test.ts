import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { base32, codeAt, matchStep, otpauthUrl, STEP_SECONDS, stepOf } from '../src/console/totp.js';
import { fromBase32, RFC4648 } from '../src/crypto/base32.js';

// RFC 6238 appendix B (SHA-1, the key "12345678901234567890"): the 8-digit codes' last six digits.
const KEY = base32(Buffer.from('12345678901234567890'));
const VECTORS: Array<[number, string]> = [
  [59, '287082'],
  [1111111109, '081804'],
  [1111111111, '050471'],
  [1234567890, '005924'],
  [2000000000, '279037'],
  [20000000000, '353130'],
];

describe('TOTP (RFC 6238) for the console’s second factor', () => {
  it('matches the RFC’s test vectors, and its key is the RFC 4648 base32 authenticator apps read', () => {
    assert.equal(KEY, 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ');
    assert.equal(fromBase32('gezd gnbv gy3t qojq gezd gnbv gy3t qojq', RFC4648).toString(), '12345678901234567890');
    assert.throws(() => fromBase32('GEZ1', RFC4648), /not base32/);
    for (const [seconds, code] of VECTORS) assert.equal(codeAt(KEY, stepOf(seconds * 1000)), code, `T = ${seconds}`);
    assert.match(
      otpauthUrl(KEY, 'ada@bank.example'),
      /^otpauth:\/\/totp\/cardprogram%3Aada%40bank\.example\?secret=GEZDGNBV.*&digits=6&period=30$/,
    );
  });

  it('accepts one step of drift either way, never an older or reused step, and nothing but six digits', () => {
    const now = 1234567890_000;
    const step = stepOf(now);
    const at = (s: number) => codeAt(KEY, s);
    assert.equal(matchStep(KEY, at(step), now, null), step);
    assert.equal(matchStep(KEY, at(step - 1), now, null), step - 1, 'the step before (a slow typist)');
    assert.equal(matchStep(KEY, at(step + 1), now, null), step + 1, 'the step after (a clock ahead)');
    assert.equal(matchStep(KEY, at(step - 2), now, null), null, 'two steps old');
    assert.equal(matchStep(KEY, at(step), now, step), null, 'the step already spent');
    assert.equal(matchStep(KEY, at(step - 1), now, step), null, 'an older step than the one spent');
    assert.equal(matchStep(KEY, at(step + 1), now + STEP_SECONDS * 1000, step), step + 1);
    for (const bad of ['', '12345', '1234567', '12a456', ' 287082'])
      assert.equal(matchStep(KEY, bad, now, null), null, JSON.stringify(bad));
  });
});
