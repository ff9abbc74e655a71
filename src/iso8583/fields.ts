/**
 * The data elements of ISO 8583:1987 as data (decisions §12.2, §12.3): every field 1–128 with its
 * format, so that any well-formed message can be read, including the fields this service ignores
 * (their length must be known to find the next one). Encoded as on the link: ASCII characters,
 * `LL`/`LLL` lengths as 2/3 ASCII digits, binary fields (`b`) as upper-case hexadecimal, two
 * characters a byte.
 */

/**
 * Character classes: `n` digits; `an` letters and digits (spaces allowed as padding); `ans` any
 * printable ASCII; `ns` digits and printable special characters; `z` track 2 (digits, `=`, `D`);
 * `xn` a sign `C`/`D` then digits; `b` hexadecimal characters (binary data, two a byte).
 */
export type FieldClass = 'n' | 'an' | 'ans' | 'ns' | 'z' | 'xn' | 'b';

export interface FieldSpec {
  field: number;
  cls: FieldClass;
  /** Fixed: the length; variable: the largest. In characters on the wire (for `b`, hex characters). */
  length: number;
  /** 0: fixed; 2: LLVAR; 3: LLLVAR. */
  var: 0 | 2 | 3;
  name: string;
}

type Row = [FieldClass, number, 0 | 2 | 3, string];

const ansVar999 = (name: string): Row => ['ans', 999, 3, name];

/** ISO 8583:1987's standard table (field → class, length, variable length digits, name). */
const TABLE: Record<number, Row> = {
  1: ['b', 16, 0, 'secondary bitmap'],
  2: ['n', 19, 2, 'primary account number'],
  3: ['n', 6, 0, 'processing code'],
  4: ['n', 12, 0, 'amount, transaction'],
  5: ['n', 12, 0, 'amount, settlement'],
  6: ['n', 12, 0, 'amount, cardholder billing'],
  7: ['n', 10, 0, 'transmission date and time'],
  8: ['n', 8, 0, 'amount, cardholder billing fee'],
  9: ['n', 8, 0, 'conversion rate, settlement'],
  10: ['n', 8, 0, 'conversion rate, cardholder billing'],
  11: ['n', 6, 0, 'system trace audit number'],
  12: ['n', 6, 0, 'time, local transaction'],
  13: ['n', 4, 0, 'date, local transaction'],
  14: ['n', 4, 0, 'date, expiration'],
  15: ['n', 4, 0, 'date, settlement'],
  16: ['n', 4, 0, 'date, conversion'],
  17: ['n', 4, 0, 'date, capture'],
  18: ['n', 4, 0, 'merchant type'],
  19: ['n', 3, 0, 'acquiring institution country code'],
  20: ['n', 3, 0, 'PAN extended, country code'],
  21: ['n', 3, 0, 'forwarding institution country code'],
  22: ['n', 3, 0, 'point of service entry mode'],
  23: ['n', 3, 0, 'card sequence number'],
  24: ['n', 3, 0, 'network international identifier'],
  25: ['n', 2, 0, 'point of service condition code'],
  26: ['n', 2, 0, 'point of service capture code'],
  27: ['n', 1, 0, 'authorizing identification response length'],
  28: ['xn', 9, 0, 'amount, transaction fee'],
  29: ['xn', 9, 0, 'amount, settlement fee'],
  30: ['xn', 9, 0, 'amount, transaction processing fee'],
  31: ['xn', 9, 0, 'amount, settlement processing fee'],
  32: ['n', 11, 2, 'acquiring institution identification code'],
  33: ['n', 11, 2, 'forwarding institution identification code'],
  34: ['ns', 28, 2, 'primary account number, extended'],
  35: ['z', 37, 2, 'track 2 data'],
  36: ['n', 104, 3, 'track 3 data'],
  37: ['an', 12, 0, 'retrieval reference number'],
  38: ['an', 6, 0, 'authorization identification response'],
  39: ['an', 2, 0, 'response code'],
  40: ['an', 3, 0, 'service restriction code'],
  41: ['ans', 8, 0, 'card acceptor terminal identification'],
  42: ['ans', 15, 0, 'card acceptor identification code'],
  43: ['ans', 40, 0, 'card acceptor name/location'],
  44: ['ans', 25, 2, 'additional response data'],
  45: ['ans', 76, 2, 'track 1 data'],
  46: ansVar999('additional data (ISO)'),
  47: ansVar999('additional data (national)'),
  48: ansVar999('additional data (private)'),
  49: ['n', 3, 0, 'currency code, transaction'],
  50: ['n', 3, 0, 'currency code, settlement'],
  51: ['n', 3, 0, 'currency code, cardholder billing'],
  52: ['b', 16, 0, 'personal identification number data'],
  53: ['n', 16, 0, 'security related control information'],
  54: ['ans', 120, 3, 'additional amounts'],
  55: ansVar999('reserved (ISO)'),
  56: ansVar999('reserved (ISO)'),
  57: ansVar999('reserved (national)'),
  58: ansVar999('reserved (national)'),
  59: ansVar999('reserved (national)'),
  60: ansVar999('reserved (national)'),
  61: ansVar999('reserved (private)'),
  62: ansVar999('reserved (private)'),
  63: ansVar999('reserved (private)'),
  64: ['b', 16, 0, 'message authentication code'],
  65: ['b', 2, 0, 'bitmap, extended'],
  66: ['n', 1, 0, 'settlement code'],
  67: ['n', 2, 0, 'extended payment code'],
  68: ['n', 3, 0, 'receiving institution country code'],
  69: ['n', 3, 0, 'settlement institution country code'],
  70: ['n', 3, 0, 'network management information code'],
  71: ['n', 4, 0, 'message number'],
  72: ['n', 4, 0, 'message number, last'],
  73: ['n', 6, 0, 'date, action'],
  74: ['n', 10, 0, 'credits, number'],
  75: ['n', 10, 0, 'credits reversal, number'],
  76: ['n', 10, 0, 'debits, number'],
  77: ['n', 10, 0, 'debits reversal, number'],
  78: ['n', 10, 0, 'transfer, number'],
  79: ['n', 10, 0, 'transfer reversal, number'],
  80: ['n', 10, 0, 'inquiries, number'],
  81: ['n', 10, 0, 'authorizations, number'],
  82: ['n', 12, 0, 'credits, processing fee amount'],
  83: ['n', 12, 0, 'credits, transaction fee amount'],
  84: ['n', 12, 0, 'debits, processing fee amount'],
  85: ['n', 12, 0, 'debits, transaction fee amount'],
  86: ['n', 16, 0, 'credits, amount'],
  87: ['n', 16, 0, 'credits reversal, amount'],
  88: ['n', 16, 0, 'debits, amount'],
  89: ['n', 16, 0, 'debits reversal, amount'],
  90: ['n', 42, 0, 'original data elements'],
  91: ['an', 1, 0, 'file update code'],
  92: ['an', 2, 0, 'file security code'],
  93: ['an', 5, 0, 'response indicator'],
  94: ['an', 7, 0, 'service indicator'],
  95: ['an', 42, 0, 'replacement amounts'],
  96: ['b', 16, 0, 'message security code'],
  97: ['xn', 17, 0, 'amount, net settlement'],
  98: ['ans', 25, 0, 'payee'],
  99: ['n', 11, 2, 'settlement institution identification code'],
  100: ['n', 11, 2, 'receiving institution identification code'],
  101: ['ans', 17, 2, 'file name'],
  102: ['ans', 28, 2, 'account identification 1'],
  103: ['ans', 28, 2, 'account identification 2'],
  104: ['ans', 100, 3, 'transaction description'],
  128: ['b', 16, 0, 'message authentication code'],
};
for (let f = 105; f <= 127; f++)
  TABLE[f] = ansVar999(f <= 111 ? 'reserved (ISO)' : f <= 119 ? 'reserved (national)' : 'reserved (private)');

/** Every field 1–128, indexed by number (index 0 unused). */
export const FIELDS: readonly FieldSpec[] = Array.from({ length: 129 }, (_, field) => {
  const row = TABLE[field];
  if (field === 0 || !row) return { field, cls: 'ans', length: 0, var: 0, name: 'none' } satisfies FieldSpec;
  const [cls, length, v, name] = row;
  return { field, cls, length, var: v, name };
});

/** The pattern each class's characters must match (one character). */
export const CLASS_CHARS: Readonly<Record<FieldClass, RegExp>> = {
  n: /^[0-9]*$/,
  an: /^[A-Za-z0-9 ]*$/,
  ans: /^[\x20-\x7e]*$/,
  ns: /^[0-9\x20-\x2f\x3a-\x40\x5b-\x60\x7b-\x7e]*$/,
  z: /^[0-9=D]*$/,
  xn: /^[CD][0-9]*$/,
  b: /^[0-9A-F]*$/,
};

/** The fields decisions §12.3 gives a meaning here: what a stored copy of a message keeps. */
export const USED_FIELDS: readonly number[] = [
  2, 3, 4, 6, 7, 11, 12, 13, 14, 18, 22, 32, 37, 38, 39, 41, 42, 43, 48, 49, 51, 54, 70, 90, 95,
];

/** Fields never to be logged (decisions §12.12 and issue 28: PAN, tracks, additional data with CVV2, PIN, chip data). */
export const REDACTED_FIELDS: readonly number[] = [2, 35, 45, 48, 52, 55];
