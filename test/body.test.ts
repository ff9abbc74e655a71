import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { duplicateKey, jsonShapeProblem } from '../src/http/body.js';

describe('JSON body checks', () => {
  it('duplicate keys: none reported for any serialised value; a repeated key is found at any depth (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => duplicateKey(JSON.stringify(v)) === null),
      { seed: 11, numRuns: 1000 },
    );
    const key = fc.string({ minLength: 1, maxLength: 6 });
    fc.assert(
      fc.property(fc.jsonValue(), key, fc.jsonValue(), fc.jsonValue(), (outer, k, a, b) => {
        // Splice an object with k twice into a serialised value.
        const dup = `{${JSON.stringify(k)}:${JSON.stringify(a)},${JSON.stringify(k)}:${JSON.stringify(b)}}`;
        assert.equal(duplicateKey(`{"outer":${JSON.stringify(outer)},"x":[${dup}]}`), k);
      }),
      { seed: 12, numRuns: 500 },
    );
    assert.equal(duplicateKey('{"a":"\\\\","b":"\\"a\\"","\\u0061":1}'), 'a', 'escaped forms are the same key');
    assert.equal(duplicateKey('[{"k":1},{"k":2}]'), null, 'the same key in two objects is fine');
  });

  it('shape: non-finite numbers and nesting deeper than 32 are problems; ordinary bodies are not', () => {
    assert.equal(jsonShapeProblem({ a: [1, { b: 'x' }] }), null);
    assert.match(jsonShapeProblem({ a: Number.POSITIVE_INFINITY })?.rule ?? '', /finite/);
    let deep: unknown = 1;
    for (let i = 0; i < 40; i++) deep = [deep];
    assert.match(jsonShapeProblem(deep)?.rule ?? '', /32 levels/);
    assert.deepEqual(jsonShapeProblem({ a: [{ b: 'x' }, { b: 'y\u0000' }] }), {
      field: 'a[1].b',
      rule: 'must not contain control characters',
    });
    // Found by an outside review: C1 controls and invisible formatting characters went through.
    for (const c of ['\u0080', '\u0085', '\u009b', '\u009f']) {
      assert.equal(jsonShapeProblem({ remark: `a${c}b` })?.rule, 'must not contain control characters', escape(c));
    }
    for (const c of ['\u2028', '\u2029', '\u202e', '\u2066', '\u2069', '\ufeff']) {
      assert.match(jsonShapeProblem({ remark: `a${c}b` })?.rule ?? '', /invisible formatting/, escape(c));
    }
    // Ordinary text outside ASCII is fine: accents, CJK, emoji, the no-break space.
    assert.equal(jsonShapeProblem({ name: 'Zoë Ørsted 张伟 🙂\u00a0x' }), null);
  });
});
