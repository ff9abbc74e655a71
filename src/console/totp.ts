import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { fromBase32 as decodeBase32, RFC4648, toBase32 } from '../crypto/base32.js';

/**
 * Time-based one-time passwords (RFC 6238 over RFC 4226): HMAC-SHA1, 30-second steps, six digits,
 * what every authenticator app reads from an otpauth:// address.
 */
export const STEP_SECONDS = 30;
const DIGITS = 6;
/** A key as authenticator apps write it: RFC 4648 base32, no padding. */
export const base32 = (bytes: Buffer) => toBase32(bytes, RFC4648);
const fromBase32 = (text: string) => decodeBase32(text, RFC4648);

/** A new secret: 160 bits (RFC 4226 §4 recommends them), base32. */
export function newTotpSecret(): string {
  return base32(randomBytes(20));
}

/** The code of a time step (HOTP of the step counter). */
export function codeAt(secret: string, step: number): string {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const mac = createHmac('sha1', fromBase32(secret)).update(counter).digest();
  const offset = (mac[mac.length - 1] ?? 0) & 15;
  const n = (mac.readUInt32BE(offset) & 0x7fffffff) % 10 ** DIGITS;
  return String(n).padStart(DIGITS, '0');
}

export const stepOf = (ms: number) => Math.floor(ms / 1000 / STEP_SECONDS);

/**
 * The step a code matches: now's, or one step either side (clocks drift, people type slowly), but
 * never one at or before `lastStep`, so a code seen over a shoulder or replayed is refused. Null: no match.
 */
export function matchStep(secret: string, code: string, now: number, lastStep: number | null): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  const current = stepOf(now);
  for (const step of [current, current - 1, current + 1]) {
    if (lastStep !== null && step <= lastStep) continue;
    const expected = Buffer.from(codeAt(secret, step));
    if (timingSafeEqual(expected, Buffer.from(code))) return step;
  }
  return null;
}

/** The address an authenticator app takes (as a QR code, or typed in). */
export function otpauthUrl(secret: string, account: string, issuer = 'cardprogram'): string {
  const label = encodeURIComponent(`${issuer}:${account}`);
  return `otpauth://totp/${label}?secret=${secret}&issuer=${encodeURIComponent(issuer)}&algorithm=SHA1&digits=${DIGITS}&period=${STEP_SECONDS}`;
}
