// The network side of disputes (issue 29, decisions §13.4): the day's export (the original's RRN and
// acquirer, PAN masked, evidence digests) and the outcome import through the `cardprogram` command,
// applied once however often it is imported, each outcome in the audit trail; and the sandbox's
// automatic decisions by the explanation, on both databases.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { startWorker } from '../src/callbacks/manage.js';
import { exportDisputes } from '../src/disputes/network-file.js';
import { periodicJobs } from '../src/jobs/periodic.js';
import { checkLedger } from '../src/ledger/check.js';
import { build, type Harness } from './helpers/app.js';
import { balances, fundedCard, todaysTrades } from './helpers/cards.js';
import { childDatabaseUrl, runCli } from './helpers/cli.js';
import { eachDialect } from './helpers/dialects.js';
import { clearedPurchase, disputeOk, file, pdf } from './helpers/disputes.js';
import { authorizationRequest, cardSecrets, linkOf, Peer } from './helpers/link.js';

const cliEnv = (h: Harness) => ({
  DATABASE_URL: childDatabaseUrl(h.db),
  CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex'),
  CARDPROGRAM_DATA_DIR: h.db.dataDir,
});

async function clean(h: Harness): Promise<void> {
  assert.deepEqual((await checkLedger(h.db.database)).problems, []);
}

eachDialect('disputes: the network side', (dialect) => {
  it('export: the day’s submitted disputes with the original’s RRN and acquirer, PAN masked; import: once, a line each', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const card = await cardSecrets(h, cardId);
    const link = await linkOf(t, h);
    const peer = await Peer.open(t, link.port);
    // A purchase through the network link (0200: authorized and cleared at once), RRN RRN000000001.
    const answer = await peer.ask(authorizationRequest(card, { amount: 3000, mti: '0200' }));
    assert.equal(answer.fields.get(39), '00');
    const day = new Date().toISOString().slice(0, 10);
    const trades = await todaysTrades(h, cardId);
    const payment = trades.find((r) => r.tradeType === 151);
    assert.ok(payment, JSON.stringify(trades));
    const evidence = pdf(100);
    const d1 = await disputeOk(h, 'create', {
      tradeId: payment.tradeId,
      reason: 'fraudulent',
      explanation: 'card was stolen',
      evidence: [file('police-report.pdf', 'application/pdf', evidence)],
    });
    await disputeOk(h, 'submit', { disputeId: d1.disputeId });
    // A sandbox purchase: no network message behind it.
    const sandbox = await clearedPurchase(h, { cardId, amount: 20 });
    const d2 = await disputeOk(h, 'create', { tradeId: sandbox.tradeId, reason: 'not_received', explanation: 'never came' });
    await disputeOk(h, 'submit', { disputeId: d2.disputeId });
    // Unsubmitted: not exported.
    const d3 = await disputeOk(h, 'create', { tradeId: (await clearedPurchase(h, { cardId, amount: 1 })).tradeId, reason: 'other' });

    const exported = await exportDisputes(h.app.svc, day);
    assert.deepEqual(
      exported.map((e) => e.disputeId),
      [d1.disputeId, d2.disputeId],
    );
    const [e1, e2] = exported;
    assert.ok(e1 && e2);
    assert.deepEqual(
      { rrn: e1.rrn, acquirer: e1.acquirer, amount: e1.amount, currency: e1.currency, networkReason: e1.networkReason },
      { rrn: 'RRN000000001', acquirer: '12345678', amount: 30, currency: 'EUR', networkReason: '10.4' },
    );
    assert.equal(e1.pan, `${card.pan.slice(0, 6)}${'*'.repeat(card.pan.length - 10)}${card.pan.slice(-4)}`);
    assert.equal(e1.explanation, 'card was stolen');
    assert.deepEqual(e1.evidence, [
      {
        fileName: 'police-report.pdf',
        contentType: 'application/pdf',
        size: evidence.length,
        sha256: (await import('node:crypto')).createHash('sha256').update(evidence).digest('hex'),
      },
    ]);
    assert.deepEqual([e2.rrn, e2.acquirer, e2.networkReason], [null, null, '13.1']);
    assert.deepEqual(await exportDisputes(h.app.svc, '2020-01-01'), []);

    // The same through the command: JSON lines, no full card number anywhere.
    const env = cliEnv(h);
    const out = await runCli(['disputes', 'export', '--date', day], env);
    assert.equal(out.code, 0, out.stderr);
    const lines = out.stdout.trim().split('\n');
    assert.deepEqual(
      lines.map((l) => JSON.parse(l).disputeId),
      [d1.disputeId, d2.disputeId],
    );
    assert.ok(!out.stdout.includes(card.pan));

    const outcomes = join(h.db.dataDir, 'outcomes.jsonl');
    writeFileSync(
      outcomes,
      [
        JSON.stringify({ disputeId: d1.disputeId, outcome: 'won', amount: 25, decidedAt: '2026-11-25T12:00:00Z' }),
        JSON.stringify({ disputeId: d2.disputeId, outcome: 'lost', amount: 0 }),
        JSON.stringify({ disputeId: d3.disputeId, outcome: 'won' }),
        JSON.stringify({ disputeId: 'dsp_unknown', outcome: 'won' }),
        '{not json',
        '',
      ].join('\n'),
    );
    const first = await runCli(['disputes', 'import', outcomes], env);
    assert.equal(first.code, 1, first.stderr);
    const rows = first.stdout.trimEnd().split('\n');
    assert.match(rows[0] ?? '', new RegExp(`^ {3}1 {2}${d1.disputeId} +applied +won 25 EUR$`));
    assert.match(rows[1] ?? '', new RegExp(`^ {3}2 {2}${d2.disputeId} +applied +lost 0 EUR$`));
    assert.match(rows[2] ?? '', /refused +disputeId: the dispute is unsubmitted; an outcome is recorded only for a submitted dispute$/);
    assert.match(rows[3] ?? '', /dsp_unknown +refused +disputeId: dispute not found$/);
    assert.match(rows[4] ?? '', /^ {3}5 {2}- +refused +line: must be one JSON object$/);
    assert.equal(rows[5], '2 applied, 0 duplicate, 3 refused');
    // 100 − 30 − 20 − 1 + 25 won back.
    assert.equal((await balances(h, cardId)).available, 74);
    await clean(h);

    const again = await runCli(['disputes', 'import', outcomes], env);
    assert.equal(again.code, 1);
    assert.equal(again.stdout.trim().split('\n').at(-1), '0 applied, 2 duplicate, 3 refused');
    assert.equal((await balances(h, cardId)).available, 74);
    await clean(h);
    const q = await disputeOk(h, 'query', { disputeId: d1.disputeId });
    assert.deepEqual([q.status, q.outcomeAmount, q.decidedAt], ['won', 25, '2026-11-25T12:00:00.000Z']);
    const audit = await h.db.database.db
      .selectFrom('audit_events')
      .select(['action', 'target', 'source'])
      .where('action', '=', 'dispute.outcome')
      .orderBy('created_at')
      .execute();
    assert.deepEqual(
      audit.map((a) => `${a.target} ${a.source}`),
      [`${d1.disputeId} network`, `${d2.disputeId} network`],
      'each outcome applied once is in the audit trail, with the network as its actor',
    );

    // The operator's `call` reaches the dispute operations like any other (by the OpenAPI document).
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`;
    const listed = await runCli(['call', 'disputeList', '--merchant', h.merchant.appId, '--data', '{"start":0,"status":"won"}'], {
      ...env,
      CARDPROGRAM_PUBLIC_URL: url,
    });
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(
      JSON.parse(listed.stdout).model.disputes.map((d: { disputeId: string }) => d.disputeId),
      [d1.disputeId],
    );
  });

  it('the sandbox network decides by the explanation after CARDPROGRAM_DISPUTE_SANDBOX_MS', async (t) => {
    const h = await build(t, dialect, { disputes: { sandboxMs: 1 } });
    const win = await clearedPurchase(h, { topUp: 100, amount: 40 });
    const lose = await clearedPurchase(h, { cardId: win.cardId, amount: 10 });
    const none = await clearedPurchase(h, { cardId: win.cardId, amount: 5 });
    const dw = await disputeOk(h, 'create', { tradeId: win.tradeId, reason: 'fraudulent', explanation: 'has winning_evidence' });
    const dl = await disputeOk(h, 'create', { tradeId: lose.tradeId, reason: 'fraudulent', explanation: 'has losing_evidence' });
    const dn = await disputeOk(h, 'create', { tradeId: none.tradeId, reason: 'fraudulent', explanation: 'a plain story' });
    for (const d of [dw, dl, dn]) await disputeOk(h, 'submit', { disputeId: d.disputeId });
    const worker = startWorker(h.app.svc, { jobs: periodicJobs(h.app.svc).worker });
    // Stopped before the test ends: the harness closes the database in its own after-hook, which runs
    // first, and a job of the worker's next poll would then fail on it.
    t.after(() => worker.stop().catch(() => undefined));
    const status = async (id: string) => (await disputeOk(h, 'query', { disputeId: id })).status;
    for (let i = 0; i < 200 && ((await status(dw.disputeId)) === 'submitted' || (await status(dl.disputeId)) === 'submitted'); i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.deepEqual([await status(dw.disputeId), await status(dl.disputeId), await status(dn.disputeId)], ['won', 'lost', 'submitted']);
    assert.equal((await balances(h, win.cardId)).available, 100 - 40 - 10 - 5 + 40);
    const decided = await h.db.database.db
      .selectFrom('disputes')
      .select('decided_by')
      .where('id', '=', dw.disputeId)
      .executeTakeFirstOrThrow();
    assert.equal(decided.decided_by, 'network:sandbox');
    await worker.stop();
    await clean(h);
  });
});
