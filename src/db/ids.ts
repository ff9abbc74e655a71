import { randomBytes } from 'node:crypto';
import { CROCKFORD_LOWER, toBase32 } from '../crypto/base32.js';

/** Crockford base32, lower case (5 bits a character). */
const base32 = (bytes: Buffer) => toBase32(bytes, CROCKFORD_LOWER);

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
  return `${prefix}_${base32(randomBytes(bytes))}`;
}

/** appId: `mch_` and 16 characters (80 bits), within the interface's 32-character limit. */
export function newAppId(): string {
  return newId('mch', 10);
}
