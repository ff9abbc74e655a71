import { createHmac, timingSafeEqual } from 'node:crypto';
import type { SecretBox } from '../crypto/secretbox.js';

/**
 * The known-device cookie (after an attack pass on issue 26, finding 3): a browser that has logged
 * in successfully is given a signed, HttpOnly, long-lived cookie naming the operator, and its next
 * logins of that same account take reserved places in the password-hashing queue
 * (src/console/hashing.ts), which a login flood from other clients cannot take. It grants nothing
 * else: the password, the second factor, the per-address limit and the account's lock-out still
 * apply. Value: `v1.<operator id>.<issued, seconds>.<HMAC-SHA256>`, keyed by a key derived from the
 * master key (a new master key ends every such cookie: those browsers use the general lane until
 * their next login).
 */
export const DEVICE_COOKIE = 'cp_console_device';
/** 400 days: the longest a browser keeps a cookie; renewed by every successful login. */
export const DEVICE_MAX_S = 400 * 24 * 3600;

const keyOf = (box: SecretBox) => box.derivedKey('console known device');
const mac = (box: SecretBox, body: string) => createHmac('sha256', keyOf(box)).update(body).digest('base64url');

/** The cookie's value for an operator who has just logged in. */
export function deviceToken(box: SecretBox, operatorId: string, nowMs: number): string {
  const body = `v1.${operatorId}.${Math.floor(nowMs / 1000)}`;
  return `${body}.${mac(box, body)}`;
}

/** The operator a known-device cookie was given to, or null (absent, altered, another key's, expired). */
export function deviceOperator(box: SecretBox, token: string | undefined, nowMs: number): string | null {
  if (token === undefined || token.length > 200) return null;
  const m = /^v1\.([A-Za-z0-9_-]{1,64})\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!m) return null;
  const [, id = '', issued = '', sig = ''] = m;
  const expected = Buffer.from(mac(box, `v1.${id}.${issued}`));
  if (!timingSafeEqual(expected, Buffer.from(sig))) return null;
  const age = nowMs / 1000 - Number(issued);
  return age >= -300 && age <= DEVICE_MAX_S ? id : null;
}
