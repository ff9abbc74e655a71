import { timingSafeEqual } from 'node:crypto';
import type { CardRow } from '../cards/model.js';
import { maskPan } from '../cards/vault.js';
import type { Services } from '../context.js';
import { USED_FIELDS } from '../iso8583/fields.js';

/**
 * Card data on the link (decisions §12.12): the card is found by its PAN's keyed hash, expiry and
 * CVV2 are checked against the vault, and then forgotten. What is kept of a message (stored, hashed
 * or logged) never has the PAN in clear nor the CVV2.
 */

/** The card whose PAN this is, or null. */
export async function cardByPan(svc: Services, pan: string): Promise<CardRow | null> {
  const db = svc.database.db;
  const hash = await svc.vault.hash(db, pan);
  return (await db.selectFrom('cards').selectAll().where('pan_hash', '=', hash).executeTakeFirst()) ?? null;
}

/** Field 48's subelements: tag n2, length n2, value; null when they do not parse. */
export function subelements(field48: string): Map<string, string> | null {
  const out = new Map<string, string>();
  for (let pos = 0; pos < field48.length; ) {
    const tag = field48.slice(pos, pos + 2);
    const len = field48.slice(pos + 2, pos + 4);
    if (!/^\d\d$/.test(tag) || !/^\d\d$/.test(len)) return null;
    const value = field48.slice(pos + 4, pos + 4 + Number(len));
    if (value.length !== Number(len)) return null;
    out.set(tag, value);
    pos += 4 + Number(len);
  }
  return out;
}

/**
 * Response code of the card data check, or null when it passes: `54` an expiry (field 14, YYMM)
 * other than the card's or a card past its expiry, `82` a CVV2 (field 48 subelement 92) other than
 * the card's. Each checked only when sent.
 */
export async function cardDataCode(
  svc: Services,
  card: CardRow,
  pan: string,
  fields: Map<number, string>,
  now: number,
): Promise<'54' | '82' | '30' | null> {
  const expiry = fields.get(14);
  const mine = `${String(card.expiry_year % 100).padStart(2, '0')}${String(card.expiry_month).padStart(2, '0')}`;
  if (expiry !== undefined && expiry !== mine) return '54';
  // Valid through the last day of its month (UTC).
  if (now >= Date.UTC(card.expiry_year, card.expiry_month, 1)) return '54';
  const f48 = fields.get(48);
  if (f48 !== undefined) {
    const sub = subelements(f48);
    if (sub === null) return '30';
    const cvv2 = sub.get('92');
    if (cvv2 !== undefined) {
      const expected = await svc.vault.cvv(svc.database.db, pan, card.expiry_month, card.expiry_year);
      if (cvv2.length !== expected.length || !timingSafeEqual(Buffer.from(cvv2), Buffer.from(expected))) return '82';
    }
  }
  return null;
}

/** A PAN as it may be shown: first 6 and last 4 digits. */
export function maskedPan(pan: string): string {
  return pan.length < 13 ? '*'.repeat(pan.length) : maskPan(pan.slice(0, 6), pan.slice(-4), pan.length);
}

/**
 * The copy of a message that is stored (decisions §12.12): its fields of §12.3 only, the PAN
 * masked, field 48 without subelement 92 (dropped whole when it does not parse).
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
      sub.delete('92');
      const rest = [...sub].map(([tag, v]) => `${tag}${String(v.length).padStart(2, '0')}${v}`).join('');
      if (rest !== '') out[f] = rest;
    } else out[f] = value;
  }
  return out;
}

/**
 * The keyed hash of a message's content (decisions §12.6): its fields without the MTI (a repeat
 * MTI is the same message). Keyed (the vault's lookup key, under its own label), as a plain hash of
 * a PAN and CVV2 could be searched back to them.
 */
export function contentHash(svc: Services, fields: Map<number, string>): Promise<string> {
  const canonical = [...fields]
    .sort(([a], [b]) => a - b)
    .map(([f, v]) => `${f}=${v}`)
    .join('\n');
  return svc.vault.lookupHash(svc.database.db, `iso8583-message\n${canonical}`);
}
