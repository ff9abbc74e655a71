// Two instances of the service on one database, each with its own TSP endpoint (a TSP spreading
// its requests over them): one requestId at once on both makes one token; a card's requests at once
// on both are counted one after the other; a code asked on one is verified on the other.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { buildApp } from '../../src/app.js';
import { openDatabase } from '../../src/db/index.js';
import { startTsp } from '../../src/tokens/listener.js';
import { testConfig } from '../helpers/app.js';
import { eachDialect } from '../helpers/dialects.js';
import { testLogging } from '../helpers/log-audit.js';
import { card, notifyTo } from '../three-ds/helpers/acs.js';
import { delivered, provisionBody, tspAt, tspService } from './helpers/tsp.js';

eachDialect('tokens: two instances', (dialect) => {
  it('share requestIds, the per-card counts and the step-up', async (t) => {
    const a = await tspService(t, dialect);
    const rx = await notifyTo(t, a.h);
    const database = openDatabase(a.h.db.url, a.h.db.pgSchema ? { pgSchema: a.h.db.pgSchema } : {});
    const config = testConfig(a.h.db.dataDir, { masterKey: a.h.config.masterKey, tokens: { ...a.h.config.tokens, port: 0 } });
    const appB = await buildApp(config, { database, ...testLogging() });
    const serverB = await startTsp(appB.svc);
    assert.ok(serverB);
    t.after(async () => {
      await serverB.stop();
      await appB.close();
      await database.close();
    });
    const b = tspAt(`http://127.0.0.1:${serverB.port}`);

    const c = await card(a.h);
    const body = provisionBody(c, { walletRiskScore: 0 });
    const once = await Promise.all([a.tsp.provision(body), b.provision(body), a.tsp.provision(body), b.provision(body)]);
    for (const r of once) assert.deepEqual([r.status, r.json], [200, once[0]?.json], r.text);
    assert.equal((await a.h.db.database.db.selectFrom('tokens').selectAll().execute()).length, 1);

    const d = await card(a.h);
    const three = await Promise.all([a.tsp, b, a.tsp].map((tsp) => tsp.provision(provisionBody(d, { walletRiskScore: 0 }))));
    assert.deepEqual(
      three.map((r) => r.json.decision).sort(),
      ['approve', 'approve', 'require_authentication'],
      three.map((r) => r.text).join('\n'),
    );
    const pending = three.find((r) => r.json.decision === 'require_authentication');
    const ref = (
      await a.h.db.database.db
        .selectFrom('tokens')
        .select('token_reference_id')
        .where('id', '=', pending?.json.tokenId)
        .executeTakeFirstOrThrow()
    ).token_reference_id;
    assert.equal((await b.activationCode({ tokenReferenceId: ref, methodId: pending?.json.authenticationMethods[0].id })).status, 200);
    const code = String((await delivered(a.h, rx, 'token.otp')).body.code);
    const verified = await a.tsp.verify({ tokenReferenceId: ref, code });
    assert.deepEqual([verified.status, verified.json.valid], [200, true], 'asked on B, verified on A');
  });
});
