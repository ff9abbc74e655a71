import { constants, createHmac, verify as rsaVerify, timingSafeEqual } from 'node:crypto';

/**
 * The signing string of decisions §3: top-level fields except `sign`, without null or empty-string
 * values, keys sorted by code unit, `key=value` joined by `&`. Strings are written as sent (no
 * escaping, no Base64 decoding), numbers and booleans as JSON text, objects and arrays as
 * canonical JSON (RFC 8785).
 */
export function signingString(body: Record<string, unknown>, omit: readonly string[] = ['sign']): string {
  const parts: string[] = [];
  for (const key of Object.keys(body).sort(compareCodeUnits)) {
    if (omit.includes(key)) continue;
    const value = body[key];
    if (value === null || value === '' || value === undefined) continue;
    parts.push(`${key}=${typeof value === 'string' ? value : canonicalJson(value)}`);
  }
  return parts.join('&');
}

/** RFC 8785 JSON canonicalisation for the values JSON.parse can produce. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') {
    return JSON.stringify(value);
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('non-finite number');
    // ECMAScript number serialisation is the one RFC 8785 prescribes; -0 is written as 0.
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    const keys = Object.keys(obj)
      .filter((k) => obj[k] !== undefined)
      .sort(compareCodeUnits);
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
  }
  throw new TypeError(`cannot canonicalise ${typeof value}`);
}

/** Sort by UTF-16 code units, as RFC 8785 requires (the default sort does exactly that). */
function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
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
