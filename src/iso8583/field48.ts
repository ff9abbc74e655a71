import { CLASS_CHARS, type FieldClass } from './fields.js';

/**
 * Field 48's subelements (decisions §12.3, §14.5, §15.5): tag n2, length n2, value, one after the other, as
 * data like the fields of fields.ts. The ones this service reads have a format; any other tag is
 * read by its length and ignored. A subelement that breaks its format makes the field unreadable
 * (the message is answered `30`, as for a field that does not decode).
 */
export interface SubelementSpec {
  tag: string;
  cls: FieldClass;
  /** The shortest and longest value, in characters. */
  min: number;
  max: number;
  name: string;
}

const spec = (tag: string, cls: FieldClass, min: number, max: number, name: string): SubelementSpec => ({ tag, cls, min, max, name });

/** The subelements this service reads, by tag. */
export const SUBELEMENTS: Readonly<Record<string, SubelementSpec>> = {
  // 3-D Secure (decisions §14.5): the ECI of the authentication, and its authentication value (CAVV for Visa, AAV for Mastercard).
  '42': spec('42', 'n', 2, 2, 'electronic commerce indicator (ECI, security level)'),
  '43': spec('43', 'ans', 28, 28, 'authentication value (CAVV/AAV, 28 Base64 characters)'),
  // Wallet tokens (decisions §15.5): the token the payment was made with, as the TSP named it.
  '33': spec('33', 'ans', 1, 64, 'token reference id (the TSP’s tokenReferenceId)'),
  '34': spec('34', 'n', 11, 11, 'token requestor id (11 digits)'),
  '92': spec('92', 'n', 3, 4, 'CVV2'),
};

/** Subelements that are card data or a one-time credential: never stored or logged (decisions §12.12, §14.5). */
export const SECRET_SUBELEMENTS: readonly string[] = ['43', '92'];

export class Field48Error extends Error {
  constructor(
    /** The subelement's tag, or null when the structure itself (tag, length) could not be read. */
    readonly tag: string | null,
    readonly reason: string,
  ) {
    super(tag === null ? `field 48: ${reason}` : `field 48 subelement ${tag}: ${reason}`);
    this.name = 'Field48Error';
  }
}

/** Why a value does not fit its subelement, or null. */
function subelementProblem(s: SubelementSpec, value: string): string | null {
  if (value.length < s.min || value.length > s.max)
    return s.min === s.max
      ? `must be ${s.min} characters, got ${value.length}`
      : `must be ${s.min} to ${s.max} characters, got ${value.length}`;
  if (!CLASS_CHARS[s.cls].test(value)) return `not ${s.cls}`;
  return null;
}

/** Field 48's subelements in order of their tags' first appearance; a tag given twice, a bad structure or a known subelement's bad format throws Field48Error. */
export function decodeField48(field48: string): Map<string, string> {
  const out = new Map<string, string>();
  for (let pos = 0; pos < field48.length; ) {
    const tag = field48.slice(pos, pos + 2);
    const len = field48.slice(pos + 2, pos + 4);
    if (!/^\d\d$/.test(tag)) throw new Field48Error(null, `a tag must be 2 digits, at ${pos}`);
    if (!/^\d\d$/.test(len)) throw new Field48Error(tag, 'its length must be 2 digits');
    const value = field48.slice(pos + 4, pos + 4 + Number(len));
    if (value.length !== Number(len)) throw new Field48Error(tag, 'the field ends inside it');
    if (out.has(tag)) throw new Field48Error(tag, 'given twice');
    const known = SUBELEMENTS[tag];
    const problem = known ? subelementProblem(known, value) : null;
    if (problem) throw new Field48Error(tag, problem);
    out.set(tag, value);
    pos += 4 + Number(len);
  }
  return out;
}

/** Field 48 from subelements (in the order given), each checked against its format; throws Field48Error. */
export function encodeField48(subelements: Iterable<readonly [string, string]>): string {
  let out = '';
  for (const [tag, value] of subelements) {
    if (!/^\d\d$/.test(tag)) throw new Field48Error(null, `a tag must be 2 digits, got "${tag}"`);
    if (value.length > 99) throw new Field48Error(tag, 'at most 99 characters');
    const known = SUBELEMENTS[tag];
    const problem = known ? subelementProblem(known, value) : null;
    if (problem) throw new Field48Error(tag, problem);
    out += `${tag}${String(value.length).padStart(2, '0')}${value}`;
  }
  return out;
}
