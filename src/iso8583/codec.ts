import { CLASS_CHARS, FIELDS, type FieldSpec } from './fields.js';

/**
 * ISO 8583:1987 with ASCII data elements (decisions §12.2): MTI as 4 digits, the primary bitmap as
 * 16 upper-case hexadecimal characters, field 1 (the secondary bitmap) the same when any field
 * 65–128 is present, then each present field in order: fixed ones at their length, variable ones
 * after their 2 or 3 ASCII length digits. Decoding is strict: a message either decodes whole or
 * fails with an Iso8583Error naming where (and, when they could be read, its MTI and STAN, so that
 * it can be answered `30`).
 */

/** A message: its MTI and its fields by number (field 1, the secondary bitmap, is never in `fields`: it is derived). */
export interface IsoMessage {
  mti: string;
  fields: Map<number, string>;
}

export type IsoErrorWhere = 'mti' | 'bitmap' | number | 'trailing';

export class Iso8583Error extends Error {
  constructor(
    /** The MTI, a bitmap, a field's number, or bytes left after the last field. */
    readonly where: IsoErrorWhere,
    readonly reason: string,
    /** What was read before the error: the MTI, when it was 4 digits, and the fields decoded so far. */
    readonly partial: { mti: string | null; fields: Map<number, string> } = { mti: null, fields: new Map() },
  ) {
    super(`${typeof where === 'number' ? `field ${where}` : where}: ${reason}`);
    this.name = 'Iso8583Error';
  }
}

const MTI = /^[0-9]{4}$/;
const HEX16 = /^[0-9A-F]{16}$/;

/** A byte outside printable ASCII makes a message undecodable (the link's data elements are ASCII). */
function ascii(buf: Uint8Array): string | null {
  for (const b of buf) if (b < 0x20 || b > 0x7e) return null;
  return Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength).toString('latin1');
}

/** Checks one field's value against its format; returns why not, or null. */
export function fieldProblem(spec: FieldSpec, value: string): string | null {
  if (spec.var === 0) {
    if (value.length !== spec.length) return `must be ${spec.length} characters, got ${value.length}`;
  } else if (value.length > spec.length) {
    return `at most ${spec.length} characters, got ${value.length}`;
  }
  if (!CLASS_CHARS[spec.cls].test(value)) return `not ${spec.cls} (${describeClass(spec.cls)})`;
  return null;
}

function describeClass(cls: FieldSpec['cls']): string {
  switch (cls) {
    case 'n':
      return 'digits only';
    case 'an':
      return 'letters, digits and spaces';
    case 'ans':
      return 'printable ASCII';
    case 'ns':
      return 'digits and special characters';
    case 'z':
      return 'track 2 characters';
    case 'xn':
      return 'C or D then digits';
    case 'b':
      return 'upper-case hexadecimal';
  }
}

function bitmapFields(hex: string, offset: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < 16; i++) {
    const nibble = Number.parseInt(hex[i] as string, 16);
    for (let bit = 0; bit < 4; bit++) if (nibble & (8 >> bit)) out.push(offset + i * 4 + bit + 1);
  }
  return out;
}

/**
 * Field 11 of a message that failed to decode before it, found by the lengths alone (fields 2–10
 * are fixed, or LLVAR with readable length digits): so that a bad value in an earlier field is
 * still answered `30` rather than the connection closed. Null when it cannot be located.
 */
function salvageStan(text: string): string | null {
  const primary = text.slice(4, 20);
  if (!HEX16.test(primary)) return null;
  const present = bitmapFields(primary, 0);
  if (!present.includes(11)) return null;
  let pos = present[0] === 1 ? 36 : 20;
  for (const field of present) {
    if (field === 1) continue;
    const spec = FIELDS[field] as FieldSpec;
    let len = spec.length;
    if (spec.var > 0) {
      const digits = text.slice(pos, pos + spec.var);
      if (!/^[0-9]+$/.test(digits) || digits.length < spec.var) return null;
      len = Number(digits);
      pos += spec.var;
    }
    if (field === 11) {
      const stan = text.slice(pos, pos + 6);
      return /^[0-9]{6}$/.test(stan) ? stan : null;
    }
    pos += len;
  }
  return null;
}

/** Decodes one message (the frame's body, without its length header). */
export function decode(buf: Uint8Array): IsoMessage {
  try {
    return strictDecode(buf);
  } catch (err) {
    if (err instanceof Iso8583Error && err.partial.mti !== null && !err.partial.fields.has(11)) {
      const stan = salvageStan(Buffer.from(buf).toString('latin1'));
      if (stan !== null) err.partial.fields.set(11, stan);
    }
    throw err;
  }
}

function strictDecode(buf: Uint8Array): IsoMessage {
  const text = ascii(buf);
  const partial = { mti: null as string | null, fields: new Map<number, string>() };
  const mti = (text ?? Buffer.from(buf.subarray(0, 4)).toString('latin1')).slice(0, 4);
  if (!MTI.test(mti) || buf.length < 4) throw new Iso8583Error('mti', 'must be 4 digits', partial);
  partial.mti = mti;
  if (text === null) {
    // Where exactly does not matter to the answer; the fields before it are still worth reading.
    throw new Iso8583Error('bitmap', 'the message has a byte outside printable ASCII', partial);
  }
  let pos = 4;
  const primary = text.slice(pos, pos + 16);
  if (!HEX16.test(primary)) throw new Iso8583Error('bitmap', 'the primary bitmap must be 16 upper-case hexadecimal characters', partial);
  pos += 16;
  let present = bitmapFields(primary, 0);
  if (present[0] === 1) {
    const secondary = text.slice(pos, pos + 16);
    if (!HEX16.test(secondary)) throw new Iso8583Error(1, 'the secondary bitmap must be 16 upper-case hexadecimal characters', partial);
    pos += 16;
    // Sent only when a field 65–128 is present; an empty one is accepted (some implementations always send it).
    present = [...present.slice(1), ...bitmapFields(secondary, 64)];
  }
  if (present.length === 0) throw new Iso8583Error('bitmap', 'no field present', partial);
  for (const field of present) {
    const spec = FIELDS[field] as FieldSpec;
    let len = spec.length;
    if (spec.var > 0) {
      const digits = text.slice(pos, pos + spec.var);
      if (digits.length < spec.var) throw new Iso8583Error(field, 'the message ends in its length', partial);
      if (!/^[0-9]+$/.test(digits)) throw new Iso8583Error(field, `its length must be ${spec.var} digits`, partial);
      len = Number(digits);
      pos += spec.var;
    }
    const value = text.slice(pos, pos + len);
    if (value.length < len) throw new Iso8583Error(field, 'the message ends inside it', partial);
    const problem = fieldProblem(spec, value);
    if (problem) throw new Iso8583Error(field, problem, partial);
    partial.fields.set(field, value);
    pos += len;
  }
  if (pos !== text.length) throw new Iso8583Error('trailing', `${text.length - pos} characters after the last field`, partial);
  return { mti, fields: partial.fields };
}

/**
 * Encodes a message. Fixed `n` fields shorter than their length are right-justified with zeros,
 * fixed `an`/`ans` fields left-justified with spaces; anything longer, or with characters outside
 * the field's class, is an Iso8583Error naming the field.
 */
export function encode(msg: IsoMessage): Buffer {
  if (!MTI.test(msg.mti)) throw new Iso8583Error('mti', 'must be 4 digits');
  const numbers = [...msg.fields.keys()].filter((f) => f !== 1).sort((a, b) => a - b);
  const bits = new Uint8Array(16);
  const parts: string[] = [];
  for (const field of numbers) {
    if (!Number.isInteger(field) || field < 2 || field > 128) throw new Iso8583Error('bitmap', `no field ${field}`);
    const spec = FIELDS[field] as FieldSpec;
    let value = msg.fields.get(field) as string;
    if (spec.var === 0 && value.length < spec.length) {
      if (spec.cls === 'n') value = value.padStart(spec.length, '0');
      else if (spec.cls === 'an' || spec.cls === 'ans') value = value.padEnd(spec.length, ' ');
    }
    const problem = fieldProblem(spec, value);
    if (problem) throw new Iso8583Error(field, problem);
    parts.push(spec.var === 0 ? value : String(value.length).padStart(spec.var, '0') + value);
    const i = field - 1;
    bits[i >> 3] = (bits[i >> 3] as number) | (0x80 >> (i & 7));
  }
  const secondary = numbers.some((f) => f > 64);
  if (secondary) bits[0] = (bits[0] as number) | 0x80;
  const hex = Buffer.from(bits).toString('hex').toUpperCase();
  const bitmap = secondary ? hex : hex.slice(0, 16);
  return Buffer.from(msg.mti + bitmap + parts.join(''), 'latin1');
}

/** A message from an object of fields (tests, the simulator): `message('0800', { 7: '…', 11: '…', 70: '301' })`. */
export function message(mti: string, fields: Record<number, string>): IsoMessage {
  return { mti, fields: new Map(Object.entries(fields).map(([k, v]) => [Number(k), v])) };
}

/** The MTI that answers `mti`: a request or advice (function digit even) → its response; a repeat (0101) answers as its original (0110). */
export function answerMti(mti: string): string {
  const fn = Number(mti[2]);
  return `${mti.slice(0, 2)}${fn % 2 === 0 ? fn + 1 : fn}0`;
}
