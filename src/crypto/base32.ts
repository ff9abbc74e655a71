/** Base32 (5 bits a character) in a given 32-character alphabet: ids use Crockford's, TOTP keys RFC 4648's. */

export const RFC4648 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
export const CROCKFORD_LOWER = '0123456789abcdefghjkmnpqrstvwxyz';

/** Encodes bytes, without padding. */
export function toBase32(bytes: Buffer, alphabet: string): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += alphabet[(value << (5 - bits)) & 31];
  return out;
}

/** Decodes text written in the alphabet (case, spaces and padding ignored for an upper-case alphabet); throws on another character. */
export function fromBase32(text: string, alphabet: string): Buffer {
  const clean = text.replace(/[\s=]/g, '');
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const ch of alphabet === alphabet.toUpperCase() ? clean.toUpperCase() : clean) {
    const i = alphabet.indexOf(ch);
    if (i < 0) throw new Error('not base32');
    value = (value << 5) | i;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}
