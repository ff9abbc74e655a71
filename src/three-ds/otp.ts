import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { TxCtx } from '../context.js';
import type { DB } from '../db/schema.js';
import type { PanVault } from '../vault/pan-vault.js';
import { cardOtpFailures } from './statements.js';

/** A one-time code is valid this long (decisions §14.4). */
export const OTP_TTL_MS = 5 * 60_000;
/** Wrong entries that end a challenge N/19. */
export const OTP_MAX_FAILURES = 3;
/** Codes a challenge may send: the first, and one new code on request. */
export const OTP_MAX_SENT = 2;
/**
 * Wrong codes a card may have entered, all its challenges together, within OTP_CARD_WINDOW_MS:
 * beyond, no code of the card is compared and no challenge by code is offered (N/19). Without it
 * each challenge's 3 tries multiply with the card's AReqs (30 an hour: 90 guesses an hour).
 */
export const OTP_CARD_MAX_FAILURES = 9;
export const OTP_CARD_WINDOW_MS = 24 * 3_600_000;

/**
 * Whether the card's challenges have used up their wrong codes (OTP_CARD_MAX_FAILURES within 24
 * hours). Called with the card's 3-D Secure row locked (an AReq, a code entered).
 */
export async function cardCodesExhausted(ctx: TxCtx, cardId: string): Promise<boolean> {
  const { rows } = await cardOtpFailures.execute(ctx.tx, { cardId, since: ctx.now - OTP_CARD_WINDOW_MS });
  return Number(rows[0]?.n ?? 0) >= OTP_CARD_MAX_FAILURES;
}

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
