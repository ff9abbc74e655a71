import { type TSchema, Type } from 'typebox';
import { DeclineDetailSchema } from './decline-detail.js';
import { SignatureDetailSchema } from './signature-detail.js';

/**
 * Shapes shared by every operation. The `description` of a constrained field is written as the
 * rule itself: the error mapper quotes it after the field's name ("mobile: must be + and 6 to 15
 * digits"), and the OpenAPI document shows the same sentence.
 */
export const RandomStr = Type.String({
  pattern: '^[A-Za-z0-9]{32}$',
  description: 'must be exactly 32 letters or digits',
});

export const Money = Type.Number({ description: 'amount in major units of the currency, e.g. 12.5' });

/** An integer drawn from a fixed list: one `enum`, so a bad value's message is the rule itself. */
export const IntEnum = <const V extends readonly number[]>(values: V, description: string) =>
  Type.Unsafe<V[number]>({ type: 'integer', enum: [...values], description });

/** A string drawn from a fixed list. */
export const StringEnum = <const V extends readonly string[]>(values: V, description: string) =>
  Type.Unsafe<V[number]>({ type: 'string', enum: [...values], description });

/** A list written as a sentence: "1, 2, 3 or 4". */
export function orList(values: readonly (string | number)[]): string {
  return values.length < 2 ? values.join('') : `${values.slice(0, -1).join(', ')} or ${values.at(-1)}`;
}

/** A code table's key as words: `dataToBeCompleted` -> "data to be completed". */
const words = (key: string) => key.replace(/[A-Z]/g, (c) => ` ${c.toLowerCase()}`);

/**
 * An integer code of a table such as TradeType (`{ authorization: 150, … }`): the table's values are
 * its `enum`, and its description lists each code with its name ("150 authorization, 151 payment, …"),
 * so neither is typed out again beside the table.
 */
export const CodeEnum = <const T extends Readonly<Record<string, number>>>(table: T) =>
  Type.Unsafe<T[keyof T]>({
    type: 'integer',
    enum: Object.values(table),
    description: Object.entries(table)
      .map(([name, code]) => `${code} ${words(name)}`)
      .join(', '),
  });

/** Fields every signed body carries (decisions §3). */
export const SignedFields = {
  appId: Type.String({ minLength: 1, maxLength: 32, description: 'must be the merchant appId (at most 32 characters)' }),
  sign: Type.String({ minLength: 1, maxLength: 512, description: 'must be the request signature (at most 512 characters)' }),
  timestamp: Type.Optional(Type.Integer({ minimum: 0, description: 'must be Unix time in milliseconds' })),
};

export const Envelope = <T extends TSchema>(model: T) =>
  Type.Object({
    code: Type.String({ description: '"0" on success' }),
    msg: Type.String(),
    model,
    traceId: Type.String(),
    success: Type.Boolean(),
    error: Type.Boolean(),
  });

export const ErrorEnvelope = Type.Object({
  code: Type.String({ description: 'result code, never "0" (docs/errors.md)' }),
  msg: Type.String({ description: 'what went wrong; for a bad field, its name and the rule' }),
  model: Type.Null(),
  traceId: Type.String(),
  success: Type.Literal(false),
  error: Type.Literal(true),
  errMsg: Type.Optional(Type.String({ description: 'same text as msg (cardholder creation only)' })),
  detail: Type.Optional(Type.Union([SignatureDetailSchema, DeclineDetailSchema])),
});

export const errorResponses = {
  400: ErrorEnvelope,
  401: ErrorEnvelope,
  403: ErrorEnvelope,
  404: ErrorEnvelope,
  409: ErrorEnvelope,
  413: ErrorEnvelope,
  429: ErrorEnvelope,
  500: ErrorEnvelope,
  503: ErrorEnvelope,
};

export function ok<T>(model: T, traceId: string) {
  return { code: '0', msg: 'success', model, traceId, success: true, error: false };
}
