import assert from 'node:assert/strict';
import { it } from 'node:test';
import { build, randomStr } from '../helpers/app.js';
import { fundedCard, ok } from '../helpers/cards.js';
import { eachDialect } from '../helpers/dialects.js';
import { seedToken } from '../helpers/tokens.js';
import { flushTsp, tspSimulator } from '../helpers/tsp.js';

/*
 * A card's freeze and a token's resume at the same moment (docs/architecture.md, Concurrency): the
 * resume locks the card before the token, so either it commits first and the freeze then suspends
 * the token, or it waits for the freeze and refuses (2724). Never a frozen card with an active token.
 */

eachDialect('tokens: races', (dialect) => {
  it('a freeze and a resume at once never leave an active token on a frozen card', async (t) => {
    const tsp = await tspSimulator(t);
    const h = await build(t, dialect, { tspClient: { url: tsp.url, cert: null, key: null } });
    for (let round = 0; round < 8; round++) {
      const { cardId } = await fundedCard(h);
      const { tokenId, tokenReferenceId } = await seedToken(h.app.svc, { cardId });
      await ok(h, '/api/network/tokenSuspend.html', { tokenId });
      const [freeze, resume] = await Promise.all([
        h.call('/api/network/cardFreeze.html', { cardId, randomStr: randomStr() }),
        h.call('/api/network/tokenResume.html', { tokenId, randomStr: randomStr() }),
      ]);
      assert.equal(freeze.status, 200, JSON.stringify(freeze.body));
      assert.ok(resume.status === 200 || resume.body.code === '2724', JSON.stringify(resume.body));
      const token = await ok(h, '/api/network/tokenQuery.html', { tokenId });
      assert.equal(token.status, 'suspended', `round ${round}: resume ${resume.status}`);
      // Whoever won, the token's history says so in order, and the TSP is told each change once.
      const calls = await h.db.database.db
        .selectFrom('tsp_calls')
        .select(['action'])
        .where('token_id', '=', tokenId)
        .orderBy('token_seq')
        .execute();
      const expected = resume.status === 200 ? ['suspend', 'resume', 'suspend'] : ['suspend'];
      assert.deepEqual(
        calls.map((c) => c.action),
        expected,
      );
      // And the TSP hears them in that order (the token's history's, not the moments the transactions began).
      await flushTsp(h.app.svc);
      await flushTsp(h.app.svc);
      assert.deepEqual(
        tsp
          .taken()
          .filter((c) => c.tokenReferenceId === tokenReferenceId)
          .map((c) => c.action),
        expected,
      );
    }
  });
});
