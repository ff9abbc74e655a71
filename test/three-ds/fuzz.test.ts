// The AReq fuzzed (in the style of test/fuzz.test.ts): every element replaced by a wrong type, a huge
// or hostile value, or left out, unknown elements added, the body's bytes mangled. Whatever arrives,
// the ACS answers HTTP 200 with an ARes or an Erro in EMVCo's format: never a 500, never anything else.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import { eachDialect } from '../helpers/dialects.js';
import { acs, card, notifyTo } from './helpers/acs.js';
import { areq, aresProblems, erroProblems, type Message, send } from './helpers/ds.js';

/** AReqs per database in `npm test`; `npm run fuzz` sets FUZZ_RUNS. */
const RUNS = Number(process.env.FUZZ_RUNS ?? 150);
const SEED = Number(process.env.FUZZ_SEED ?? 20261127);

const hostile = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.constantFrom(
    '',
    ' ',
    '0',
    '00',
    '-1',
    '1e309',
    'NaN',
    '2.2.0',
    'AReq',
    '\u0000',
    '\u202e',
    '\ud800',
    '<script>',
    'javascript:alert(1)',
    '__proto__',
  ),
  fc.integer({ min: 3000, max: 70_000 }).map((n) => 'A'.repeat(n)),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 3 }),
  fc.constantFrom(['01'], { sdkInterface: '09' }, [{ name: 'x', id: 'y', criticalityIndicator: 'yes', data: 1 }]),
);

/** A valid AReq with some of its elements replaced, removed, or joined by unknown ones. */
function mutated(base: Message) {
  const names = Object.keys(base);
  return fc
    .record({
      replace: fc.array(fc.tuple(fc.constantFrom(...names), hostile), { maxLength: 3 }),
      remove: fc.array(fc.constantFrom(...names), { maxLength: 2 }),
      add: fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }), hostile, { maxKeys: 2 }),
    })
    .map(({ replace, remove, add }) => {
      const m: Message = { ...add, ...base };
      for (const [name, value] of replace) m[name] = value;
      for (const name of remove) delete m[name];
      return m;
    });
}

/** Every answer must be HTTP 200 and an ARes or an Erro in EMVCo's format. */
function wellFormed(res: { status: number; text: string; json: Message | null }, request: Message | null) {
  assert.equal(res.status, 200, res.text.slice(0, 300));
  const message = res.json ?? {};
  if (message.messageType === 'Erro') assert.deepEqual(erroProblems(message), [], res.text.slice(0, 300));
  else {
    assert.equal(message.messageType, 'ARes', res.text.slice(0, 300));
    assert.deepEqual(aresProblems(message, request ?? {}), [], res.text.slice(0, 300));
  }
  return message;
}

eachDialect('3-D Secure: the AReq fuzzed', (dialect) => {
  it('every element wrong, huge, hostile or missing, unknown ones added: HTTP 200 and an ARes or an Erro, never a 500', async (t) => {
    const { h, url } = await acs(t, dialect);
    await notifyTo(t, h);
    const c = await card(h);
    const seen = new Set<string>();
    const requests = fc
      .tuple(
        fc.constantFrom<'01' | '02' | '03'>('01', '02', '03'),
        fc.constantFrom<'2.1.0' | '2.2.0'>('2.1.0', '2.2.0'),
        fc.constantFrom<'01' | '02'>('01', '02'),
        fc.integer({ min: 100, max: 9000 }),
      )
      .chain(([deviceChannel, version, messageCategory, amount]) =>
        mutated(areq({ pan: c.pan, expiry: c.expiry, amount: String(amount), deviceChannel, version, messageCategory })),
      );
    await fc.assert(
      fc.asyncProperty(requests, async (request) => {
        const message = wellFormed(await send(url, request), request);
        seen.add(String(message.errorCode ?? message.transStatus));
      }),
      { numRuns: RUNS, seed: SEED },
    );
    // The properties reached both sides: answers and refusals.
    assert.ok(
      [...seen].some((s) => s.length === 1),
      `some ARes among ${[...seen]}`,
    );
    assert.ok(
      [...seen].some((s) => s.length === 3),
      `some Erro among ${[...seen]}`,
    );
  });

  it('mangled bytes (cut, truncated, doubled, binary): HTTP 200 and an Erro (an ARes when what is left is still an AReq)', async (t) => {
    const { url } = await acs(t, dialect);
    const text = JSON.stringify(areq({ pan: '4242424242424242', expiry: '3012' }));
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.nat({ max: text.length - 1 }).map((n) => text.slice(0, n)),
          fc
            .tuple(fc.nat({ max: text.length }), fc.string({ minLength: 1, maxLength: 4 }))
            .map(([n, s]) => text.slice(0, n) + s + text.slice(n)),
          fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString('latin1')),
          fc.constant(`${text}${text}`),
        ),
        async (body) => {
          const res = await send(url, body);
          let sent: Message | null = null;
          try {
            sent = JSON.parse(body) as Message;
          } catch {
            sent = null;
          }
          // Still an AReq after the change (a space between tokens): answered as one.
          const message = wellFormed(res, sent);
          if (message.messageType === 'ARes') assert.equal(message.transStatusReason, '08');
        },
      ),
      { numRuns: Math.max(30, Math.floor(RUNS / 3)), seed: SEED },
    );
  });
});
