import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { PanVault } from '../cards/vault.js';
import type { DB } from '../db/schema.js';

/** A one-time code is valid this long (decisions §14.4). */
export const OTP_TTL_MS = 5 * 60_000;
/** Wrong entries that end a challenge N/19. */
export const OTP_MAX_FAILURES = 3;
/** Codes a challenge may send: the first, and one new code on request. */
export const OTP_MAX_SENT = 2;

/** A new 6-digit code, uniformly drawn (leading zeros kept). */
export function newOtp(): string {
  return String(randomInt(0, 1_000_000)).padStart(6, '0');
}

const digest = (key: Buffer, acsTransId: string, code: string) =>
  createHmac('sha256', key).update(`cardprogram-3ds-otp\n${acsTransId}\n${code}`, 'utf8').digest();

/**
 * A code as it is stored: its HMAC under the ACS's key (data_keys, purpose 3ds), bound to its
 * authentication, with the key's version. Never the code: a six-digit value's plain hash would be
 * reversed by trying the million codes.
 */
export async function hashOtp(
  vault: PanVault,
  db: Kysely<DB>,
  acsTransId: string,
  code: string,
): Promise<{ hash: string; version: number }> {
  const { version, key } = await vault.versionedKey(db, '3ds');
  return { hash: digest(key, acsTransId, code).toString('hex'), version };
}

/** Whether `code` is the stored one, compared in constant time (decisions §14.7). */
export async function otpMatches(
  vault: PanVault,
  db: Kysely<DB>,
  stored: { acs_trans_id: string; otp_hash: string | null; otp_key_version: number | null },
  code: string,
): Promise<boolean> {
  if (stored.otp_hash === null || stored.otp_key_version === null || !/^\d{6}$/.test(code)) return false;
  const { key } = await vault.versionedKey(db, '3ds', stored.otp_key_version);
  const expected = Buffer.from(stored.otp_hash, 'hex');
  const given = digest(key, stored.acs_trans_id, code);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
