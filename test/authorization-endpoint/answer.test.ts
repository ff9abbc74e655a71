import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readAnswer } from '../../src/authorization-endpoint/ask.js';

// How a merchant's authorization endpoint's answer is read (decisions §11): only a 2xx with a JSON
// object whose `approved` is a boolean decides; a reason is kept only as plain text, cut between characters.
describe('reading an authorization endpoint’s answer', () => {
  it('approved or declined only from a 2xx JSON object with a boolean approved', () => {
    assert.deepEqual(readAnswer(200, '{"approved":true}'), { approved: true, reason: null });
    assert.deepEqual(readAnswer(204, '{"approved":false,"reason":"velocity"}'), { approved: false, reason: 'velocity' });
    for (const [status, body] of [
      [500, '{"approved":true}'],
      [302, '{"approved":true}'],
      [null, ''],
      [200, 'ok'],
      [200, '{"approved":"true"}'],
      [200, '{"approved":1}'],
      [200, '[true]'],
      [200, 'null'],
    ] as const) {
      assert.equal(typeof readAnswer(status, body), 'string', `${status} ${body}`);
    }
  });

  it('a reason with control or invisible formatting characters is dropped; a long one is cut between characters', () => {
    for (const bad of ['a\u0000b', 'a\u009bb', 'pay\u202eevil', 'line\u2028break', '\ufeffbom']) {
      assert.deepEqual(
        readAnswer(200, JSON.stringify({ approved: false, reason: bad })),
        { approved: false, reason: null },
        JSON.stringify(bad),
      );
    }
    const long = `${'x'.repeat(199)}🙂🙂`;
    const read = readAnswer(200, JSON.stringify({ approved: false, reason: long }));
    assert.ok(typeof read === 'object');
    assert.equal(read.reason, `${'x'.repeat(199)}🙂`, 'no lone surrogate');
  });
});
