import type { FastifyInstance } from 'fastify';
import sjson from 'secure-json-parse';
import { invalid } from '../errors.js';

/** Deeper bodies than any operation needs are refused before anything walks them recursively. */
export const MAX_DEPTH = 32;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A problem of a parsed body: the field it is in (`body` for the body as a whole) and the rule broken. */
export interface ShapeProblem {
  field: string;
  rule: string;
}

/**
 * Characters that change how text around them reads without being seen: the bidirectional embeddings,
 * overrides and isolates (U+202A–U+202E, U+2066–U+2069: "Trojan Source" text that shows one thing and
 * stores another), the line and paragraph separators (U+2028, U+2029: line breaks to a log reader),
 * and the byte-order mark (U+FEFF). No field has a use for them.
 */
const INVISIBLE = new Set([0x2028, 0x2029, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0xfeff]);

/**
 * Why a string cannot be accepted, or null. Refused: C0 controls (NUL included), DEL and the C1
 * controls (U+0080–U+009F: CSI, NEL), and the invisible formatting characters above. Why: PostgreSQL
 * cannot store NUL in text (the query failed with 500) while SQLite stores it silently, so the two
 * databases disagreed; and no field of any operation has business holding a control character (they
 * corrupt logs, exports and the page). A lone surrogate is not Unicode: it cannot be written as
 * UTF-8 (it would be stored as U+FFFD, so what is kept would differ from what was signed).
 */
function stringProblem(s: string): string | null {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return 'must not contain control characters';
    if (INVISIBLE.has(c)) return 'must not contain invisible formatting characters (direction overrides, line separators, BOM)';
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = s.charCodeAt(i + 1);
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) i++;
      else return 'must not contain a lone surrogate (not valid Unicode)';
    }
  }
  return null;
}

function childPath(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return path === '' ? key : `${path}.${key}`;
}

/**
 * Why a parsed body cannot be signed, validated or stored safely, or null: non-finite numbers,
 * nesting deeper than MAX_DEPTH, and strings (keys included) holding control characters or lone
 * surrogates, at any depth. Iterative: no recursion limit to hit.
 */
export function jsonShapeProblem(value: unknown): ShapeProblem | null {
  const stack: Array<[unknown, number, string]> = [[value, 0, '']];
  while (stack.length > 0) {
    const [v, depth, path] = stack.pop() as [unknown, number, string];
    if (typeof v === 'number' && !Number.isFinite(v)) {
      return { field: 'body', rule: 'numbers must be finite (a number too large for a double was sent)' };
    }
    if (typeof v === 'string') {
      const rule = stringProblem(v);
      if (rule) return { field: path === '' ? 'body' : path, rule };
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (depth >= MAX_DEPTH) return { field: 'body', rule: `must not nest deeper than ${MAX_DEPTH} levels` };
    if (Array.isArray(v)) {
      // Pushed in reverse so the first offending element is the one reported.
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], depth + 1, childPath(path, i)]);
      continue;
    }
    const entries = Object.entries(v);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i] as [string, unknown];
      if (stringProblem(key)) return { field: 'body', rule: 'keys must not contain control characters or lone surrogates' };
      stack.push([child, depth + 1, childPath(path, key.length > 64 ? `${key.slice(0, 64)}…` : key)]);
    }
  }
  return null;
}

/**
 * The first key that an object of this (already valid) JSON text repeats, or null. JSON.parse keeps
 * the last value silently; a proxy, firewall or log that keeps the first would see another request
 * than the one signed and executed, so such bodies are refused. One pass over the text; keys are
 * compared decoded ("a" and "\u0061" are one key).
 */
export function duplicateKey(text: string): string | null {
  const stack: Array<{ keys: Set<string> | null; expectKey: boolean }> = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      let j = i + 1;
      while (text.charCodeAt(j) !== 0x22) j += text.charCodeAt(j) === 0x5c /* \ */ ? 2 : 1;
      const top = stack.at(-1);
      if (top?.keys && top.expectKey) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        if (top.keys.has(key)) return key;
        top.keys.add(key);
        top.expectKey = false;
      }
      i = j;
    } else if (c === 0x7b /* { */) stack.push({ keys: new Set(), expectKey: true });
    else if (c === 0x5b /* [ */) stack.push({ keys: null, expectKey: false });
    else if (c === 0x7d /* } */ || c === 0x5d /* ] */) stack.pop();
    else if (c === 0x2c /* , */) {
      const top = stack.at(-1);
      if (top?.keys) top.expectKey = true;
    }
  }
  return null;
}

export function charsetOf(contentType: string | undefined): string | null {
  const m = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType ?? '');
  return m?.[1]?.toLowerCase() ?? null;
}

/** Why a body is not JSON the service reads: the kind of problem, the field it is in and the rule broken. */
export interface BodyProblem extends ShapeProblem {
  kind: 'empty' | 'encoding' | 'syntax' | 'prototype' | 'shape' | 'duplicate';
}

/**
 * Parses a body by the service's rules, for every listener that reads JSON (the HTTP API here, the
 * 3-D Secure ACS in src/three-ds/listener.ts): UTF-8, well-formed, no `__proto__` or
 * `constructor.prototype` keys, no control characters or lone surrogates, not nested deeper than
 * MAX_DEPTH, no key repeated in an object.
 */
export function parseJsonBody(buffer: Buffer): { value: unknown } | { problem: BodyProblem } {
  if (buffer.length === 0) return { problem: { kind: 'empty', field: 'body', rule: 'must be a JSON object' } };
  let text: string;
  try {
    text = utf8.decode(buffer);
  } catch {
    return { problem: { kind: 'encoding', field: 'body', rule: 'must be UTF-8 encoded' } };
  }
  let parsed: unknown;
  try {
    // __proto__ and constructor.prototype keys are refused: they are how prototype pollution starts.
    parsed = sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (err) {
    return /prototype/i.test((err as Error).message)
      ? { problem: { kind: 'prototype', field: 'body', rule: 'must not contain __proto__ or constructor.prototype keys' } }
      : { problem: { kind: 'syntax', field: 'body', rule: 'must be well-formed JSON' } };
  }
  const problem = jsonShapeProblem(parsed);
  if (problem) return { problem: { kind: 'shape', ...problem } };
  const repeated = duplicateKey(text);
  if (repeated !== null) {
    return { problem: { kind: 'duplicate', field: repeated.slice(0, 64), rule: `must not repeat the key "${repeated.slice(0, 64)}"` } };
  }
  return { value: parsed };
}

/**
 * The only body the service reads: UTF-8 JSON, uncompressed, within the body limit. Every way a body
 * can be wrong is a 1002 naming what is wrong, never a 500.
 */
export function registerJsonBody(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addHook('onRequest', async (req) => {
    const encoding = req.headers['content-encoding'];
    if (encoding && encoding.toLowerCase() !== 'identity') {
      throw invalid('Content-Encoding', 'is not supported: send the body uncompressed');
    }
  });
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, raw, done) => {
    const charset = charsetOf(req.headers['content-type']);
    if (charset !== null && charset !== 'utf-8' && charset !== 'utf8') {
      done(invalid('Content-Type', 'charset must be utf-8'), undefined);
      return;
    }
    const parsed = parseJsonBody(raw as Buffer);
    if ('problem' in parsed) {
      const { kind, field, rule } = parsed.problem;
      done(invalid(kind === 'duplicate' ? 'body' : field, rule), undefined);
      return;
    }
    done(null, parsed.value);
  });
}
