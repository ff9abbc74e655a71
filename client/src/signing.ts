import { createHmac, createSign, type KeyObject } from 'node:crypto';

/**
 * The signing string of the service's decisions §3: top-level fields except `sign`, without null or
 * empty-string values, keys sorted by code unit, `key=value` joined by `&`; strings as sent (no
 * escaping, Base64 fields as Base64), numbers and booleans as JSON text, objects and arrays as
 * canonical JSON (RFC 8785).
 *
 * @example
 * signingString({ appId: 'mch_0123456789abcdef', email: 'alice@example.com' })
 * // 'appId=mch_0123456789abcdef&email=alice@example.com'
 */
export function signingString(body: Record<string, unknown>): string {
  const parts: string[] = [];
  for (const key of Object.keys(body).sort(byCodeUnit)) {
    if (key === 'sign') continue;
    const value = body[key];
    if (value === null || value === '' || value === undefined) continue;
    parts.push(`${key}=${typeof value === 'string' ? value : canonicalJson(value)}`);
  }
  return parts.join('&');
}

/** RFC 8785 canonical JSON of a JSON value. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('cannot sign a non-finite number');
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    const keys = Object.keys(obj)
      .filter((k) => obj[k] !== undefined)
      .sort(byCodeUnit);
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
  }
  throw new TypeError(`cannot sign a ${typeof value}`);
}

function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** How requests are signed: the merchant's HMAC secret, or its RSA private key (RSA-SHA256). */
export type Credentials = { secret: string; privateKey?: undefined } | { privateKey: string | KeyObject; secret?: undefined };

/** `sign` for a signing string: lowercase hex HMAC-SHA256, or Base64 RSASSA-PKCS1-v1_5 SHA-256. */
export function signature(credentials: Credentials, data: string): string {
  if (credentials.secret !== undefined) return createHmac('sha256', credentials.secret).update(data, 'utf8').digest('hex');
  return createSign('sha256').update(data, 'utf8').sign(credentials.privateKey, 'base64');
}
