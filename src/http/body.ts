import type { FastifyInstance } from 'fastify';
import sjson from 'secure-json-parse';
import { invalid } from '../errors.js';

/** Deeper bodies than any operation needs are refused before anything walks them recursively. */
export const MAX_DEPTH = 32;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Why a parsed body cannot be signed or validated safely, or null. Iterative: no recursion limit to hit. */
export function jsonShapeProblem(value: unknown): string | null {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop() as [unknown, number];
    if (typeof v === 'number' && !Number.isFinite(v)) return 'numbers must be finite (a number too large for a double was sent)';
    if (v === null || typeof v !== 'object') continue;
    if (depth >= MAX_DEPTH) return `must not nest deeper than ${MAX_DEPTH} levels`;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
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

function charsetOf(contentType: string | undefined): string | null {
  const m = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType ?? '');
  return m?.[1]?.toLowerCase() ?? null;
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
    const buffer = raw as Buffer;
    if (buffer.length === 0) {
      done(invalid('body', 'must be a JSON object'), undefined);
      return;
    }
    let text: string;
    try {
      text = utf8.decode(buffer);
    } catch {
      done(invalid('body', 'must be UTF-8 encoded'), undefined);
      return;
    }
    let parsed: unknown;
    try {
      // __proto__ and constructor.prototype keys are refused: they are how prototype pollution starts.
      parsed = sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
    } catch (err) {
      const msg = /prototype/i.test((err as Error).message)
        ? 'must not contain __proto__ or constructor.prototype keys'
        : 'must be well-formed JSON';
      done(invalid('body', msg), undefined);
      return;
    }
    const problem = jsonShapeProblem(parsed);
    if (problem) {
      done(invalid('body', problem), undefined);
      return;
    }
    const repeated = duplicateKey(text);
    if (repeated !== null) {
      done(invalid('body', `must not repeat the key "${repeated.slice(0, 64)}"`), undefined);
      return;
    }
    done(null, parsed);
  });
}
