import { constants, createHmac, verify as rsaVerify, timingSafeEqual } from 'node:crypto';
import { canonicalJson, compareCodeUnits } from '../canonical-json.js';

export { canonicalJson };

/**
 * What a top-level key must look like. Why: a key holding `=` or `&` could make two different bodies
 * sign alike; every field of every operation fits this.
 */
export const SIGNED_KEY = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;

/**
 * A value's text in the signing string: `%` written as `%25` and `&` as `%26`, nothing else changed.
 * Why: written raw, `{"remark":"rent&timestamp=1"}` signed exactly as `{"remark":"rent","timestamp":1}`,
 * so a signed field could be moved into a free-text one (stripping the timestamp, for one). With `&`
 * escaped (and `%`, so an escape cannot be forged), every signing string splits back into one body;
 * values without `%` or `&` sign exactly as before (the decisions §3 test vectors hold).
 */
export function escapeValue(text: string): string {
  return text.replace(/%/g, '%25').replace(/&/g, '%26');
}

/**
 * The signing string of decisions §3: top-level fields except `sign`, without null or empty-string
 * values, keys sorted by code unit, `key=value` joined by `&`. Strings are written as sent (no
 * Base64 decoding), numbers and booleans as JSON text, objects and arrays as canonical JSON
 * (RFC 8785); in each value's text `%` and `&` are escaped (escapeValue). Keys are checked against
 * SIGNED_KEY by the caller (authenticate) before a signature is verified.
 */
export function signingString(body: Record<string, unknown>, omit: readonly string[] = ['sign']): string {
  const parts: string[] = [];
  for (const key of Object.keys(body).sort(compareCodeUnits)) {
    if (omit.includes(key)) continue;
    const value = body[key];
    if (value === null || value === '' || value === undefined) continue;
    parts.push(`${key}=${escapeValue(typeof value === 'string' ? value : canonicalJson(value))}`);
  }
  return parts.join('&');
}

export function hmacSign(secret: string, data: string): string {
  return createHmac('sha256', secret).update(data, 'utf8').digest('hex');
}

const HEX_64 = /^[0-9a-fA-F]{64}$/;

/**
 * Constant-time check of an HMAC-SHA256 signature. Why constant time: a comparison that stops at the
 * first differing byte leaks, through timing, how much of a forged signature is right.
 */
export function verifyHmac(secret: string, data: string, sign: string): boolean {
  if (!HEX_64.test(sign)) return false;
  const expected = createHmac('sha256', secret).update(data, 'utf8').digest();
  return timingSafeEqual(expected, Buffer.from(sign, 'hex'));
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** RSASSA-PKCS1-v1_5 with SHA-256 over the signing string; `sign` is Base64. */
export function verifyRsa(publicKeyPem: string, data: string, sign: string): boolean {
  if (!BASE64.test(sign) || sign.length % 4 !== 0) return false;
  try {
    return rsaVerify(
      'sha256',
      Buffer.from(data, 'utf8'),
      { key: publicKeyPem, padding: constants.RSA_PKCS1_PADDING },
      Buffer.from(sign, 'base64'),
    );
  } catch {
    return false;
  }
}
