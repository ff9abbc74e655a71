// The console's disputes (issue 29.6) through the real app on both databases: the queue's order and
// days left, a dispute's page, evidence downloads, an outcome recorded by an admin with the journal,
// balances and audit records, and refusals for lower roles that write nothing.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { OPERATOR_ROLES } from '../src/db/schema.js';
import { checkLedger } from '../src/ledger/check.js';
import { updateMerchant } from '../src/merchants/manage.js';
import { runVerb } from '../src/runner.js';
import type { Harness } from './helpers/app.js';
import { balances } from './helpers/cards.js';
import {
  buildConsole,
  type ConsoleHarness,
  type ConsoleSessionCookies,
  consoleGet,
  consolePost,
  login,
  makeOperator,
} from './helpers/console.js';
import { eachDialect } from './helpers/dialects.js';
import { clearedPurchase, disputeOk, file, pdf, png } from './helpers/disputes.js';

const DAY = 86_400_000;
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

async function sessions(h: ConsoleHarness) {
  const map = new Map<string, ConsoleSessionCookies>();
  for (const role of OPERATOR_ROLES) map.set(role, await login(h, await makeOperator(h, `${role}@example.com`, role)));
  return (role: string) => map.get(role) as ConsoleSessionCookies;
}

/** What an outcome could touch: a refused one must leave all of it as it was. */
async function written(h: Harness) {
  const db = h.db.database.db;
  return {
    disputes: await db.selectFrom('disputes').selectAll().orderBy('id').execute(),
    events: await db.selectFrom('dispute_events').select('id').orderBy('id').execute(),
    postings: await db.selectFrom('ledger_postings').select('id').orderBy('id').execute(),
    cards: await db.selectFrom('cards').select(['id', 'available_balance', 'ledger_balance', 'debt']).orderBy('id').execute(),
    audit: (await db.selectFrom('audit_events').select('action').where('action', 'not like', 'operator.%').execute()).map((r) => r.action),
  };
}

const clean = async (h: Harness) => assert.deepEqual((await checkLedger(h.db.database)).problems, []);

/** The queue's rows as (dispute id, days-left cell text). */
function queueRows(html: string): Array<{ id: string; days: string }> {
  const body = /<tbody>(.*)<\/tbody>/s.exec(html)?.[1] ?? '';
  return [...body.matchAll(/<tr>(.*?)<\/tr>/gs)].map((m) => {
    const cells = [...(m[1] as string).matchAll(/<td[^>]*>(.*?)<\/td>/gs)].map((c) => (c[1] as string).replace(/<[^>]+>/g, ''));
    return { id: cells[2] as string, days: cells[1] as string };
  });
}

eachDialect('the console’s disputes', (dialect) => {
  it('queues open disputes by the nearest deadline with the days left, filtered by merchant and status', async (t) => {
    const h = await buildConsole(t, dialect);
    const as = await sessions(h);
    const now = h.now.ms;
    // Cleared 100, 20 and 119 days ago: deadlines in 20, 100 and 1 day(s) (the 120th day after the clearing).
    const a = await clearedPurchase(h, { amount: 10, businessDate: dayOf(now - 100 * DAY) });
    const b = await clearedPurchase(h, { amount: 10, businessDate: dayOf(now - 20 * DAY), cardId: a.cardId });
    const c = await clearedPurchase(h, { amount: 10, businessDate: dayOf(now - 119 * DAY), cardId: a.cardId });
    const last = await clearedPurchase(h, { amount: 10, businessDate: dayOf(now - 120 * DAY), cardId: a.cardId });
    const da = await disputeOk(h, 'create', { tradeId: a.tradeId, reason: 'fraudulent', explanation: 'not me' });
    const db = await disputeOk(h, 'create', { tradeId: b.tradeId, reason: 'duplicate', explanation: 'twice' });
    const dc = await disputeOk(h, 'create', { tradeId: c.tradeId, reason: 'other', explanation: 'other' });
    const dl = await disputeOk(h, 'create', { tradeId: last.tradeId, reason: 'other', explanation: 'last day' });
    await disputeOk(h, 'submit', { disputeId: db.disputeId });
    // A decided one is not in the queue.
    const gone = await clearedPurchase(h, { amount: 10, businessDate: dayOf(now - 5 * DAY), cardId: a.cardId });
    const dg = await disputeOk(h, 'create', { tradeId: gone.tradeId, reason: 'other' });
    await disputeOk(h, 'withdraw', { disputeId: dg.disputeId });

    const res = await consoleGet(h, as('viewer'), '/console/disputes');
    assert.equal(res.statusCode, 200);
    assert.deepEqual(queueRows(res.body), [
      { id: dl.disputeId, days: 'last day today' },
      { id: dc.disputeId, days: '1 day' },
      { id: da.disputeId, days: '20 days' },
      { id: db.disputeId, days: 'submitted' },
    ]);
    assert.ok(!res.body.includes(dg.disputeId));
    assert.match(res.body, /<a href="\/console\/disputes" aria-current="page">Disputes<\/a>/, 'in the navigation');
    const submitted = await consoleGet(h, as('viewer'), '/console/disputes?status=submitted');
    assert.deepEqual(
      queueRows(submitted.body).map((r) => r.id),
      [db.disputeId],
    );
    const other = await consoleGet(h, as('viewer'), '/console/disputes?merchant=mch_nobody');
    assert.deepEqual(queueRows(other.body), []);
    const mine = await consoleGet(h, as('viewer'), `/console/disputes?merchant=${h.merchant.appId}&status=unsubmitted`);
    assert.equal(queueRows(mine.body).length, 3);
    // Bad filters are ignored, never a 500.
    const bad = await consoleGet(h, as('viewer'), '/console/disputes?merchant=%00%3Cx&status=%3Cscript%3E');
    assert.equal(bad.statusCode, 200);
    assert.equal(queueRows(bad.body).length, 4);
    // The overview counts them and links the queue.
    const overview = await consoleGet(h, as('viewer'), '/console');
    assert.match(overview.body, /<a href="\/console\/disputes"><span class="muted">Disputes open<\/span><b>4<\/b>/);
  });

  it('shows a dispute: its transaction, evidence (downloads for reviewers), history; views recorded', async (t) => {
    const h = await buildConsole(t, dialect);
    const as = await sessions(h);
    const { cardId, tradeId } = await clearedPurchase(h, { amount: 40 });
    const d = await disputeOk(h, 'create', {
      tradeId,
      reason: 'fraudulent',
      explanation: 'I never bought <b>this</b>',
      evidence: [file('receipt.pdf', 'application/pdf', pdf()), file('photo.png', 'image/png', png(2, 2))],
    });
    const page = await consoleGet(h, as('viewer'), `/console/disputes/${d.disputeId}`);
    assert.equal(page.statusCode, 200);
    assert.match(page.body, new RegExp(`<a href="/console/cards/${cardId}">`), 'the card page of the console');
    assert.ok(page.body.includes(tradeId));
    assert.ok(page.body.includes('I never bought &#60;b&#62;this&#60;/b&#62;'), 'escaped');
    assert.ok(page.body.includes(d.evidence[0].sha256));
    assert.ok(page.body.includes('receipt.pdf') && !page.body.includes('/evidence/'), 'a viewer sees the files, not their downloads');
    assert.match(page.body, /Opened<\/td>/);
    assert.ok(!page.body.includes('Record as won'), 'no outcome for an unsubmitted dispute');
    const view = await h.db.database.db
      .selectFrom('audit_events')
      .selectAll()
      .where('action', '=', 'dispute.view')
      .executeTakeFirstOrThrow();
    assert.deepEqual([view.actor, view.target, view.source], ['viewer@example.com', d.disputeId, 'console']);

    const reviewer = await consoleGet(h, as('reviewer'), `/console/disputes/${d.disputeId}`);
    const href = /href="(\/console\/disputes\/[^"]+\/evidence\/[^"]+)">receipt\.pdf/.exec(reviewer.body)?.[1] as string;
    assert.ok(href, 'a reviewer gets the download');
    const refused = await consoleGet(h, as('support'), href);
    assert.equal(refused.statusCode, 403);
    const dl = await consoleGet(h, as('reviewer'), href);
    assert.equal(dl.statusCode, 200);
    assert.equal(dl.headers['content-type'], 'application/pdf');
    assert.equal(dl.headers['content-disposition'], 'attachment; filename="receipt.pdf"');
    assert.equal(dl.headers['x-content-type-options'], 'nosniff');
    assert.deepEqual(dl.rawPayload, pdf());
    const record = await h.db.database.db
      .selectFrom('audit_events')
      .selectAll()
      .where('action', '=', 'dispute.evidence')
      .executeTakeFirstOrThrow();
    assert.equal(record.actor, 'reviewer@example.com');
    assert.equal(record.target, `${d.disputeId}/receipt.pdf`);
    // Unknown or malformed: the console's 404, never a 500.
    for (const url of [
      `/console/disputes/dsp_nope`,
      `/console/disputes/${'x'.repeat(80)}`,
      `/console/disputes/${d.disputeId}/evidence/nope.pdf`,
      `/console/disputes/${d.disputeId}/evidence/%3Cscript%3E.pdf`,
      `/console/disputes/dsp_nope/evidence/receipt.pdf`,
    ]) {
      assert.equal((await consoleGet(h, as('reviewer'), url)).statusCode, 404, url);
    }
  });

  it('records an outcome: admins only, confirmed, through the import’s verb; journal, balances and audit', async (t) => {
    const h = await buildConsole(t, dialect);
    const as = await sessions(h);
    await runVerb(h.app.svc, updateMerchant, { input: { appId: h.merchant.appId, disputeProvisionalCredit: true }, actor: 'test' });
    const { cardId, tradeId } = await clearedPurchase(h, { topUp: 100, amount: 40 });
    const won = await disputeOk(h, 'create', { tradeId, reason: 'fraudulent', explanation: 'not me' });
    await disputeOk(h, 'submit', { disputeId: won.disputeId });
    assert.deepEqual(await balances(h, cardId), { available: 100, ledger: 100, status: 'active' });
    const url = `/console/disputes/${won.disputeId}/outcome`;

    // Lower roles: refused, nothing written.
    for (const role of ['viewer', 'support', 'reviewer']) {
      const before = await written(h);
      const res = await consolePost(h, as(role), url, { outcome: 'won', amount: '40.00', confirm: 'yes' });
      assert.equal(res.statusCode, 403, role);
      assert.match(res.body, /may not record a dispute’s outcome/);
      assert.deepEqual(await written(h), before, `${role} wrote nothing`);
    }
    // An admin without the confirmation, with a bad amount, without the form token: refused, nothing written.
    const before = await written(h);
    for (const [fields, status] of [
      [{ outcome: 'won', amount: '40.00' }, 400],
      [{ outcome: 'won', amount: 'lots', confirm: 'yes' }, 400],
      [{ outcome: 'won', amount: '40.001', confirm: 'yes' }, 400],
      [{ outcome: 'won', amount: '50.00', confirm: 'yes' }, 400],
      [{ outcome: 'maybe', confirm: 'yes' }, 400],
      [{ outcome: 'won', amount: '40.00', confirm: 'yes', csrf: 'forged' }, 403],
    ] as const) {
      const res = await consolePost(h, as('admin'), url, fields);
      assert.equal(res.statusCode, status, JSON.stringify(fields));
    }
    assert.deepEqual(await written(h), before, 'nothing written by the refusals');

    // Won, 30 of 40: the network pays 30 to the merchant's funding (which advanced 40); 10 is taken back from the card.
    const page = await consoleGet(h, as('admin'), `/console/disputes/${won.disputeId}`);
    assert.match(page.body, /Record as won/);
    const res = await consolePost(h, as('admin'), url, { outcome: 'won', amount: '30.00', confirm: 'yes' });
    assert.equal(res.statusCode, 303, res.body);
    assert.equal(res.headers.location, `/console/disputes/${won.disputeId}?done=won`);
    const row = await h.db.database.db.selectFrom('disputes').selectAll().where('id', '=', won.disputeId).executeTakeFirstOrThrow();
    assert.deepEqual([row.status, Number(row.outcome_amount), row.decided_by], ['won', 3000, 'admin@example.com']);
    assert.deepEqual(await balances(h, cardId), { available: 90, ledger: 90, status: 'active' });
    const legs = await h.db.database.db
      .selectFrom('ledger_postings')
      .select(['account', 'amount'])
      .where('trade_id', '=', won.disputeId)
      .orderBy('id')
      .execute();
    assert.deepEqual(
      legs.map((l) => `${l.account.replace(/^(card|merchant):[^:]+:/, '$1:')} ${Number(l.amount)}`).sort(),
      [
        'card:available 4000',
        'merchant:funding -4000',
        'merchant:funding 3000',
        'network:disputes -3000',
        'card:available -1000',
        'merchant:funding 1000',
      ].sort(),
    );
    await clean(h);
    const audit = await h.db.database.db
      .selectFrom('audit_events')
      .selectAll()
      .where('action', '=', 'dispute.outcome')
      .executeTakeFirstOrThrow();
    assert.deepEqual([audit.actor, audit.source, audit.origin, audit.target], ['admin@example.com', 'console', '127.0.0.1', won.disputeId]);
    assert.equal(JSON.parse(audit.before_json ?? '').status, 'submitted');
    assert.deepEqual(JSON.parse(audit.after_json ?? ''), {
      disputeId: won.disputeId,
      result: 'applied',
      status: 'won',
      currency: 'EUR',
      amount: 30,
    });
    const after = await consoleGet(h, as('viewer'), `/console/disputes/${won.disputeId}?done=won`);
    assert.match(after.body, /recorded as won/);
    assert.match(after.body, /Won: credit from the network/);
    // A decided dispute offers no action, and a second outcome is refused with the verb's words.
    assert.ok(!after.body.includes('Record as'));
    const again = await consolePost(h, as('admin'), url, { outcome: 'lost', confirm: 'yes' });
    assert.equal(again.statusCode, 409);
    assert.match(again.body, /only for a submitted dispute/);

    // Lost: the provisional credit taken back.
    const second = await clearedPurchase(h, { amount: 20, cardId });
    const lost = await disputeOk(h, 'create', { tradeId: second.tradeId, reason: 'not_received', explanation: 'never came' });
    await disputeOk(h, 'submit', { disputeId: lost.disputeId });
    assert.equal((await balances(h, cardId)).available, 90);
    const res2 = await consolePost(h, as('admin'), `/console/disputes/${lost.disputeId}/outcome`, { outcome: 'lost', confirm: 'yes' });
    assert.equal(res2.statusCode, 303);
    assert.equal((await balances(h, cardId)).available, 70);
    assert.equal(
      (await h.db.database.db.selectFrom('disputes').select('status').where('id', '=', lost.disputeId).executeTakeFirstOrThrow()).status,
      'lost',
    );
    await clean(h);
    assert.equal(
      (await h.db.database.db.selectFrom('audit_events').select('id').where('action', '=', 'dispute.outcome').execute()).length,
      2,
    );
  });
});
