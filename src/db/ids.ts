import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'; // Crockford base32, lower case

/** Encodes random bytes as Crockford base32 (5 bits a character). */
function base32(bytes: Buffer): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

/**
 * Prefixed random identifiers (`hld_…`, `mch_…`). Random, not sequential: an id reveals nothing
 * about volume and cannot be guessed from a neighbour's.
 */
export function newId(
  prefix: 'mch' | 'hld' | 'card' | 'trd' | 'kyc' | 'evt' | 'rev' | 'ent' | 'dcl' | 'dk' | 'att' | 'rvl' | 'fnd' | 'aud' | 'op',
  bytes = 15,
): string {
  return `${prefix}_${base32(randomBytes(bytes))}`;
}

/** appId: `mch_` and 16 characters (80 bits), within the interface's 32-character limit. */
export function newAppId(): string {
  return newId('mch', 10);
}
