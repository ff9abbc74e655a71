import assert from 'node:assert/strict';
import { it } from 'node:test';
import { build, randomStr } from './helpers/app.js';
import { eachDialect } from './helpers/dialects.js';

// Request and reply schemas are compiled on first use, and by `serve` in the background once it is
// ready (src/http/compilers.ts): the answers are the same either way, and every schema compiles.
eachDialect('schemas compiled on first use', (dialect) => {
  it('answers the same before and after every schema is compiled, and every schema compiles', async (t) => {
    const h = await build(t, dialect);
    const calls = async () => [
      // Validation: an unknown field, a wrong type, a missing one.
      await h.call('/api/network/cardQuery.html', { cardID: 'card_x', randomStr: randomStr() }),
      await h.call('/api/network/cardQuery.html', { cardId: 12, randomStr: randomStr() }),
      await h.call('/sandbox/network/authorize', { amount: 1, randomStr: randomStr() }),
      // A domain error's envelope, and a success's, through the reply serializers.
      await h.call('/api/network/cardQuery.html', { cardId: 'card_nope', randomStr: randomStr() }),
      await h.call('/open/api/kyc/share/query', { requestNo: 'nope', randomStr: randomStr() }),
    ];
    const strip = (r: { status: number; body: Record<string, unknown> }) => ({ status: r.status, code: r.body.code, msg: r.body.msg });
    const before = (await calls()).map(strip);
    assert.equal(before[0]?.status, 400);
    assert.match(String(before[0]?.msg), /cardID/);
    await h.app.compileSchemas();
    const after = (await calls()).map(strip);
    assert.deepEqual(after, before);
  });
});
