import { randomFillSync } from 'node:crypto';
import { CROCKFORD_LOWER, toBase32 } from '../crypto/base32.js';

/** Crockford base32, lower case (5 bits a character). */
const base32 = (bytes: Buffer) => toBase32(bytes, CROCKFORD_LOWER);

/**
 * Random bytes drawn 4 KiB at a time from the system's CSPRNG and handed out once each: an id is 15
 * of them, and asking the system for so few at a time, several times a request, was 2.5 % of the
 * service's time under the link's load (issue 42). The same bytes, never given twice.
 */
const POOL = Buffer.allocUnsafe(4096);
let drawn = POOL.length;

function randomOf(n: number): Buffer {
  if (n > POOL.length) return randomFillSync(Buffer.allocUnsafe(n));
  if (drawn + n > POOL.length) {
    randomFillSync(POOL);
    drawn = 0;
  }
  const out = POOL.subarray(drawn, drawn + n);
  drawn += n;
  return out;
}

/**
 * Prefixed random identifiers (`hld_…`, `mch_…`). Random, not sequential: an id reveals nothing
 * about volume and cannot be guessed from a neighbour's.
 */
export function newId(
  prefix:
    | 'mch'
    | 'hld'
    | 'card'
    | 'trd'
    | 'kyc'
    | 'evt'
    | 'rev'
    | 'ent'
    | 'dcl'
    | 'dk'
    | 'att'
    | 'rvl'
    | 'fnd'
    | 'aud'
    | 'op'
    | 'dsp'
    | 'dev'
    | 'dhe'
    | 'exc'
    | 'sdb'
    | 'tok'
    | 'tspc',
  bytes = 15,
): string {
  // Read at once: the pool's bytes are a view, drawn again once the pool is refilled.
  return `${prefix}_${base32(randomOf(bytes))}`;
}

/** appId: `mch_` and 16 characters (80 bits), within the interface's 32-character limit. */
export function newAppId(): string {
  return newId('mch', 10);
}
