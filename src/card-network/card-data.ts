import type { Kysely } from 'kysely';
import { maskPan } from '../cards/card-number.js';
import type { CardRow } from '../cards/model.js';
import { type CardVerification, presentedCardData } from '../cards/verification.js';
import type { Services } from '../context.js';
import type { DB } from '../db/schema.js';
import { decodeField48, Field48Error, SECRET_SUBELEMENTS } from '../iso8583/field48.js';
import { USED_FIELDS } from '../iso8583/fields.js';
import { ResponseCode } from '../iso8583/response-codes.js';
import { byValue } from './identity.js';

/**
 * Card data on the link (decisions §12.12): the card is found by its PAN's keyed hash, expiry and
 * CVV2 are checked against the vault, and then forgotten. What is kept of a message (stored, hashed
 * or logged) never has the PAN in clear nor the CVV2.
 */

/** The card whose PAN this is, or null (read on `db`: `svc.database.read`'s, or a transaction's). */
export async function cardByPan(svc: Services, db: Kysely<DB>, pan: string): Promise<CardRow | null> {
  const hash = await svc.vault.hash(db, pan);
  return (await db.selectFrom('cards').selectAll().where('pan_hash', '=', hash).executeTakeFirst()) ?? null;
}

/** Field 48's subelements (src/iso8583/field48.ts): null when they do not parse or one breaks its format. */
export function subelements(field48: string): Map<string, string> | null {
  try {
    return decodeField48(field48);
  } catch (err) {
    if (err instanceof Field48Error) return null;
    throw err;
  }
}

/**
 * Field 22's first two digits that mean the card was not present: key-entered (`01x`), e-commerce
 * (`81x`). Not credential on file (`10x`): the merchant keeps the card, and may not keep its CVV2.
 */
const CARD_NOT_PRESENT = new Set(['01', '81']);

/**
 * The card data of an 0100/0200 (decisions §12.12, §12.13): `30` for a key-entered or e-commerce
 * message without field 14 or a field 48 that does not parse, `54` for a card past its expiry (valid
 * through the last day of its month, UTC; not a mismatch, not counted); else what the expiry
 * (field 14, YYMM) and CVV2 (field 48 subelement 92) presented came to, decided under the card's
 * lock (src/ledger/authorize.ts): a mismatch declined and counted, a CVV2 left out declined where
 * required (card not present, not on file, `CARDPROGRAM_REQUIRE_CVV2` on).
 */
export async function cardVerification(
  svc: Services,
  db: Kysely<DB>,
  card: CardRow,
  pan: string,
  fields: Map<number, string>,
  now: number,
): Promise<CardVerification | { code: '54' | '30' }> {
  const entry = fields.get(22)?.slice(0, 2);
  const notPresent = entry !== undefined && CARD_NOT_PRESENT.has(entry);
  if (notPresent && !fields.has(14)) return { code: ResponseCode.formatError };
  const f48 = fields.get(48);
  const sub = f48 === undefined ? null : subelements(f48);
  if (f48 !== undefined && sub === null) return { code: ResponseCode.formatError };
  if (now >= Date.UTC(card.expiry_year, card.expiry_month, 1)) return { code: ResponseCode.expiredCard };
  const presented = await presentedCardData(svc, db, card, { expiry: fields.get(14), cvv2: sub?.get('92') }, pan);
  const cvv2Required = notPresent && svc.config.program.requireCvv2 !== false;
  return { ...presented, cvv2Required, via: 'link' };
}

/** A PAN as it may be shown: first 6 and last 4 digits. */
export function maskedPan(pan: string): string {
  return pan.length < 13 ? '*'.repeat(pan.length) : maskPan(pan.slice(0, 6), pan.slice(-4), pan.length);
}

/**
 * The copy of a message that is stored (decisions §12.12): its fields of §12.3 only, the PAN
 * masked, field 48 without subelements 92 (CVV2) and 43 (the 3-D Secure authentication value, a
 * one-time credential: the ACS keeps only its hash), dropped whole when it does not parse.
 */
export function storedCopy(fields: Map<number, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of USED_FIELDS) {
    const value = fields.get(f);
    if (value === undefined) continue;
    if (f === 2) out[f] = maskedPan(value);
    else if (f === 48) {
      const sub = subelements(value);
      if (sub === null) continue;
      for (const tag of SECRET_SUBELEMENTS) sub.delete(tag);
      const rest = [...sub].map(([tag, v]) => `${tag}${String(v.length).padStart(2, '0')}${v}`).join('');
      if (rest !== '') out[f] = rest;
    } else out[f] = value;
  }
  return out;
}

/**
 * The keyed hash of a message's content (decisions §12.6): its fields without the MTI (a repeat
 * MTI is the same message), field 32 by value (decisions §12.13: a repeat whose acquirer gained
 * leading zeros is the same message, not a 94; fields 11 and 7 are fixed width already). Keyed (the
 * vault's lookup key, under its own label), as a plain hash of a PAN and CVV2 could be searched back to them.
 */
export function contentHash(svc: Services, db: Kysely<DB>, fields: Map<number, string>): Promise<string> {
  const canonical = [...fields]
    .sort(([a], [b]) => a - b)
    .map(([f, v]) => `${f}=${f === 32 ? byValue(v) : v}`)
    .join('\n');
  return svc.vault.lookupHash(db, `iso8583-message\n${canonical}`);
}
