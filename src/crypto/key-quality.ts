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
 * After an attack pass, also (each with its false-refusal chance for 32 random bytes):
 * - 28 or more printable bytes (at most 4 others): a passphrase with a NUL or one odd byte added.
 *   The number of printable bytes of a random key is binomial (32, 95/256): P(≥ 28) = 5.4·10^-9;
 * - the entropy of the second differences (x[i+2] − 2x[i+1] + x[i]: i² has one) and of the steps
 *   at stride 2 (x[i+2] − x[i]: two interleaved counters have two), under 3.5 bits over 30 values.
 *   Random: about 4.8 (σ 0.08, 4.26 at worst in 3·10^5 tries); under 3.5 takes 22 or more
 *   colliding pairs among 30 uniform values, about 10^-16;
 * - a linear recurrence: x[n] = a·x[n−1] + b·x[n−2] + e·x[n−3] + c (mod 256) for a, b, e from −3
 *   to 3 and any c (Fibonacci, i², i³, a counter), found when one c fits 22 or more of the 29 terms
 *   (a pattern with a few bytes changed still fits). For random bytes each term's residue is
 *   uniform and independent of the others: 256·C(29,22)·256^-22 ≈ 4·10^-45 per (a, b, e).
 * A newline, carriage return, tab or space at either end is ignored first: `echo` adds a newline,
 * and it must not make a passphrase look like binary.
 */

/** Under this many bits a byte (of 32), the key is not random (random keys: 4.27 at worst in 2·10^6 tries). */
const MIN_BITS_PER_BYTE = 4;
/** Blocks this long that repeat (forward or mirrored) in 32 random bytes: about 10^-9. */
const BLOCK = 5;
const EDGE = new Set([0x0a, 0x0d, 0x09, 0x20]);
/** At most this many bytes that are not printable: else a passphrase (random keys: 5.4·10^-9). */
const MIN_OTHER_BYTES = 5;
/** Under this many bits a value over the 30 second differences or stride-2 steps (random: about 10^-16). */
const MIN_BITS_DERIVED = 3.5;
/** Coefficients tried for a linear recurrence, and how many of the terms one constant must fit. */
const RECURRENCE_COEFFICIENT = 3;
const RECURRENCE_FIT = 22;

const printable = (b: number) => b >= 0x20 && b < 0x7f;
const minus = (a: number, b: number) => (a - b + 512) % 256;

/** x[n] = a·x[n−1] + b·x[n−2] + e·x[n−3] + c (mod 256) for most terms, small a, b, e: the coefficients, or null. */
function linearRecurrence(bytes: Uint8Array): [number, number, number] | null {
  const k = RECURRENCE_COEFFICIENT;
  const counts = new Uint8Array(256);
  for (let a = -k; a <= k; a++) {
    for (let b = -k; b <= k; b++) {
      for (let e = -k; e <= k; e++) {
        counts.fill(0);
        let most = 0;
        for (let n = 3; n < bytes.length && most + bytes.length - n >= RECURRENCE_FIT; n++) {
          const predicted = a * (bytes[n - 1] ?? 0) + b * (bytes[n - 2] ?? 0) + e * (bytes[n - 3] ?? 0);
          const c = ((((bytes[n] ?? 0) - predicted) % 256) + 256) % 256;
          counts[c] = (counts[c] ?? 0) + 1;
          most = Math.max(most, counts[c] ?? 0);
        }
        if (most >= RECURRENCE_FIT) return [a, b, e];
      }
    }
  }
  return null;
}

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
  if (bytes.every(printable)) return 'its bytes are all printable characters: a passphrase, not a key';
  const others = bytes.filter((b) => !printable(b)).length;
  if (others < MIN_OTHER_BYTES)
    return `${bytes.length - others} of its ${bytes.length} bytes are printable characters: a passphrase, not a key`;
  const bits = entropyPerByte(bytes);
  if (bits < MIN_BITS_PER_BYTE) {
    const distinct = new Set(bytes).size;
    return `an estimated ${bits.toFixed(1)} bits of entropy a byte, ${distinct} distinct byte values in ${bytes.length}; a random key has about 4.8 and 30`;
  }
  const steps = bytes.subarray(1).map((b, i) => (b - (bytes[i] ?? 0) + 256) % 256);
  if (entropyPerByte(steps) < MIN_BITS_PER_BYTE) return 'its bytes follow a pattern';
  const second = steps.subarray(1).map((d, i) => minus(d, steps[i] ?? 0));
  if (entropyPerByte(second) < MIN_BITS_DERIVED) return 'its bytes follow a pattern (its second differences)';
  const stride2 = bytes.subarray(2).map((b, i) => minus(b, bytes[i] ?? 0));
  if (entropyPerByte(stride2) < MIN_BITS_DERIVED) return 'its bytes follow a pattern (two interleaved sequences)';
  const recurrence = linearRecurrence(bytes);
  if (recurrence) {
    const [a, b, e] = recurrence;
    return `its bytes follow a linear recurrence (x[n] = ${a}·x[n−1] + ${b}·x[n−2] + ${e}·x[n−3] + a constant, mod 256)`;
  }
  if (bytes.every((b, i) => b === bytes[bytes.length - 1 - i])) return 'it is a palindrome';
  const block = repeatedBlock(bytes);
  if (block === 'repeated') return `a block of ${BLOCK} bytes appears twice`;
  if (block === 'mirrored') return `a block of ${BLOCK} bytes appears again mirrored`;
  return null;
}
