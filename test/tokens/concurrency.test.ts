// Provisioning at once (docs/architecture.md, Concurrency): the same requestId sent five times at
// once makes one token and gets one answer; a card's requests sent at once are counted one after
// the other (the third within 24 hours asks a step-up, whichever instance decides it).
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { eachDialect } from '../helpers/dialects.js';
import { card, notifyTo } from '../three-ds/helpers/acs.js';
import { provisionBody, tspService } from './helpers/tsp.js';

eachDialect('tokens: provisioning at once', (dialect) => {
  it('one requestId five times at once: one token, one answer; three requests of a card at once: two approved, one step-up', async (t) => {
    const { h, tsp } = await tspService(t, dialect);
    await notifyTo(t, h);
    const c = await card(h);
    const body = provisionBody(c, { walletRiskScore: 0 });
    const answers = await Promise.all(Array.from({ length: 5 }, () => tsp.provision(body)));
    assert.deepEqual(
      answers.map((a) => a.status),
      [200, 200, 200, 200, 200],
      answers.map((a) => a.text).join('\n'),
    );
    for (const a of answers) assert.deepEqual(a.json, answers[0]?.json);
    assert.equal((await h.db.database.db.selectFrom('tokens').selectAll().execute()).length, 1);

    const d = await card(h);
    const three = await Promise.all(Array.from({ length: 3 }, () => tsp.provision(provisionBody(d, { walletRiskScore: 0 }))));
    const decisions = three.map((a) => a.json.decision).sort();
    assert.deepEqual(decisions, ['approve', 'approve', 'require_authentication'], three.map((a) => a.text).join('\n'));

    // One tokenReferenceId under two requestIds at once: one token, the other refused 409 (never a 5xx).
    const e = await card(h);
    const first = provisionBody(e, { walletRiskScore: 0 });
    const both = await Promise.all([
      tsp.provision(first),
      tsp.provision({ ...provisionBody(e, { walletRiskScore: 0 }), tokenReferenceId: first.tokenReferenceId }),
    ]);
    assert.deepEqual(both.map((a) => a.status).sort(), [200, 409], both.map((a) => a.text).join('\n'));
  });
});
