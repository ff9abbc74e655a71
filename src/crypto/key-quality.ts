/**
 * Whether 32 bytes look like a random key (issue 14.6, issue 26.5). A master key seals everything
 * (merchant secrets, PAN data keys, identity data); a guessable one protects none of it, so the key
 * is judged as bytes, not as the text it was given in. Each test below is one that 32 random bytes
 * fail with a chance of about 10^-9 or less, so an `openssl rand -hex 32` key always passes:
 * - estimated entropy: the Shannon entropy of the bytes' histogram (random: 4.3 to 5 bits a byte over
 *   32 bytes; fewer than 16 distinct values or a few values repeated come out under 4);
 * - the same entropy of the steps between neighbours (a counter, 00 01 02 …, has one step);
 * - all printable: a passphrase (`echo passphrase | xxd -p`), its chance 2^-46 for a random key;
 * - a block of 5 bytes that appears again, forward or mirrored (a repeated word, a mirrored counter);
 * - a palindrome.
 * A newline, carriage return, tab or space at either end is ignored first: `echo` adds a newline,
 * and it must not make a passphrase look like binary.
 */

/** Under this many bits a byte (of 32), the key is not random (random keys: 4.27 at worst in 2·10^6 tries). */
const MIN_BITS_PER_BYTE = 4;
/** Blocks this long that repeat (forward or mirrored) in 32 random bytes: about 10^-9. */
const BLOCK = 5;
const EDGE = new Set([0x0a, 0x0d, 0x09, 0x20]);

function entropyPerByte(bytes: Uint8Array): number {
  const counts = new Map<number, number>();
  for (const b of bytes) counts.set(b, (counts.get(b) ?? 0) + 1);
  let h = 0;
  for (const c of counts.values()) h -= (c / bytes.length) * Math.log2(c / bytes.length);
  return h;
}

function trimEdges(key: Uint8Array): Uint8Array {
  let start = 0;
  let end = key.length;
  while (start < end && EDGE.has(key[start] ?? 0)) start++;
  while (end > start && EDGE.has(key[end - 1] ?? 0)) end--;
  return key.subarray(start, end);
}

function repeatedBlock(bytes: Uint8Array): 'repeated' | 'mirrored' | null {
  const seen = new Map<string, number>();
  const block = (i: number) => Array.from(bytes.subarray(i, i + BLOCK)).join(',');
  for (let i = 0; i + BLOCK <= bytes.length; i++) {
    const b = block(i);
    if (seen.has(b)) return 'repeated';
    seen.set(b, i);
  }
  for (let i = 0; i + BLOCK <= bytes.length; i++) {
    const mirrored = Array.from(bytes.subarray(i, i + BLOCK))
      .reverse()
      .join(',');
    // Apart, not overlapping: in random bytes a short palindrome (x y z z y x) overlaps its own
    // mirror about once in 10^6 keys; two blocks apart match about once in 10^9.
    const at = seen.get(mirrored);
    if (at !== undefined && Math.abs(at - i) >= BLOCK) return 'mirrored';
  }
  return null;
}

/** Why `key` does not look like 32 random bytes, or null when it does. */
export function keyWeakness(key: Uint8Array): string | null {
  const bytes = trimEdges(key);
  if (bytes.length < 24) return 'it begins or ends with white space or newlines';
  if (bytes.every((b) => b >= 0x20 && b < 0x7f)) return 'its bytes are all printable characters: a passphrase, not a key';
  const bits = entropyPerByte(bytes);
  if (bits < MIN_BITS_PER_BYTE) {
    const distinct = new Set(bytes).size;
    return `an estimated ${bits.toFixed(1)} bits of entropy a byte, ${distinct} distinct byte values in ${bytes.length}; a random key has about 4.8 and 30`;
  }
  const steps = bytes.subarray(1).map((b, i) => (b - (bytes[i] ?? 0) + 256) % 256);
  if (entropyPerByte(steps) < MIN_BITS_PER_BYTE) return 'its bytes follow a pattern';
  if (bytes.every((b, i) => b === bytes[bytes.length - 1 - i])) return 'it is a palindrome';
  const block = repeatedBlock(bytes);
  if (block === 'repeated') return `a block of ${BLOCK} bytes appears twice`;
  if (block === 'mirrored') return `a block of ${BLOCK} bytes appears again mirrored`;
  return null;
}
