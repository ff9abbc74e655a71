import { createHmac, createSign, type KeyObject } from 'node:crypto';

/** What a top-level key must look like; the service refuses any other key (`1002`). */
const FIELD_NAME = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;

/**
 * The signing string of the service's decisions §3: top-level fields except `sign`, without null or
 * empty-string values, keys sorted by code unit, `key=value` joined by `&`; strings as sent (Base64
 * fields as Base64), numbers and booleans as JSON text, objects and arrays as canonical JSON
 * (RFC 8785); in each value's text `%` is written `%25` and `&` `%26` (so a value cannot pass for
 * two fields). A key that is not a plain field name cannot be signed.
 *
 * @example
 * signingString({ appId: 'mch_0123456789abcdef', remark: 'rent&bills' })
 * // 'appId=mch_0123456789abcdef&remark=rent%26bills'
 */
export function signingString(body: Record<string, unknown>): string {
  const parts: string[] = [];
  for (const key of Object.keys(body).sort(byCodeUnit)) {
    if (key === 'sign') continue;
    if (!FIELD_NAME.test(key)) throw new TypeError(`cannot sign the field "${key.slice(0, 64)}": not a field name`);
    const value = body[key];
    if (value === null || value === '' || value === undefined) continue;
    const text = typeof value === 'string' ? value : canonicalJson(value);
    parts.push(`${key}=${text.replace(/%/g, '%25').replace(/&/g, '%26')}`);
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
