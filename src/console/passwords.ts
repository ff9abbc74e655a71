import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/**
 * Operators' passwords, hashed with scrypt (RFC 7914, Node's own OpenSSL binding): memory-hard, so a
 * stolen table is expensive to guess through. N = 2^15, r = 8, p = 1 is 32 MiB and about 100 ms a
 * hash on one core; the parameters are stored with each hash, so raising them later keeps old ones valid.
 */
const N = 2 ** 15;
const R = 8;
const P = 1;
const KEY_BYTES = 32;

/** At least this long; no other composition rule (NIST SP 800-63B §5.1.1.2). */
export const MIN_PASSWORD = 12;
export const MAX_PASSWORD = 256;

function derive(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFKC'), salt, KEY_BYTES, { N: n, r, p, maxmem: 256 * n * r }, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
}

/** `scrypt$N$r$p$salt$hash`, salt and hash in base64url. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, N, R, P);
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/** A hash of nothing anyone knows: checked against when the e-mail is unknown, so timing tells nothing. */
let decoy: Promise<string> | null = null;

/** Whether the password matches the stored hash; null (no account, or not set up) costs the same time. */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  decoy ??= hashPassword(randomBytes(16).toString('hex'));
  const parts = (stored ?? (await decoy)).split('$');
  const [kind, n, r, p, salt, hash] = parts;
  if (parts.length !== 6 || kind !== 'scrypt' || !n || !r || !p || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const key = await derive(password, Buffer.from(salt, 'base64url'), Number(n), Number(r), Number(p));
  return stored !== null && key.length === expected.length && timingSafeEqual(key, expected);
}

/** Why a new password is refused, or null when it is acceptable. */
export function passwordProblem(password: string, email: string): string | null {
  if ([...password].length < MIN_PASSWORD) return `The password must be at least ${MIN_PASSWORD} characters long.`;
  if (password.length > MAX_PASSWORD) return `The password must be at most ${MAX_PASSWORD} characters long.`;
  if (/\p{Cc}/u.test(password)) return 'The password must not contain control characters.';
  if (password.toLowerCase().includes(email.split('@')[0]?.toLowerCase() || '\u0000'))
    return 'The password must not contain your e-mail name.';
  if (new Set(password).size < 5) return 'The password repeats too few characters; choose a longer phrase.';
  return null;
}
