import assert from 'node:assert/strict';
import { it } from 'node:test';
import { sql } from 'kysely';
import { expireDisputes } from '../src/disputes/expire.js';
import { reapKeys } from '../src/idempotency/keys.js';
import { kycAutomation } from '../src/kyc/automation.js';
import { checkLedger } from '../src/ledger/check.js';
import { expireHolds } from '../src/ledger/expire.js';
import { build, kycBody } from './helpers/app.js';
import { balances, fundedCard, ok } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';
import { clearedPurchase, disputeOk } from './helpers/disputes.js';

/**
 * Issue 46: a periodic pass works row by row in pages; one row that throws is recorded and skipped,
 * every other row is worked, and the next pass tries it again without it blocking the rest.
 */

const DAY = 86_400_000;

eachDialect('periodic passes: one poison row blocks nothing (issue 46)', (dialect) => {
  it('a hold whose release throws is recorded and skipped: every other due hold is released, and the next passes try it again until it goes', async (t) => {
    const lines: string[] = [];
    const h = await build(t, dialect, {}, { logLines: lines });
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const { cardId: second } = await fundedCard(h, { topUp: 100 });
    // A card of another merchant: what the poison hold is made to point at.
    const other = await h.newMerchant();
    const { cardId: foreign } = await fundedCard(h, { merchant: other });
    const hold = async (card: string) => (await ok(h, '/sandbox/network/authorize', { cardId: card, amount: 5 })).tradeId as string;
    // The poison hold is the oldest: first in the pass's order, as the was every hour.
    const poison = await hold(cardId);
    const others = [await hold(cardId), await hold(second), await hold(cardId), await hold(second), await hold(second)];
    // Made inconsistent on purpose: its card_id names another merchant's card, so its release
    // cannot lock its card (cardNotFound) and throws, as a row a bug or a bad repair left would.
    await sql`update trades set card_id = ${foreign} where id = ${poison}`.execute(h.db.database.db);
    const svc = h.app.svc;
    const start = Date.now();

    // Pages of two: the poison one on the first page, the others on it and the next two.
    const first = await expireHolds(svc, start + 8 * DAY, undefined, { pageSize: 2 });
    assert.deepEqual(new Set(first.tradeIds), new Set(others), 'every other due hold released');
    assert.deepEqual(
      first.failed.map((f) => [f.tradeId, f.failures]),
      [[poison, 1]],
    );
    assert.match(first.failed[0]?.error ?? '', /card/i);
    assert.deepEqual(await balances(h, second), { available: 100, ledger: 100, status: 'active' });
    // Recorded: the table the alert's gauges read, the counter, the log.
    const recorded = await h.db.database.db.selectFrom('sweep_failures').selectAll().execute();
    assert.deepEqual(
      recorded.map((r) => [r.job, r.item_id, Number(r.failures)]),
      [['hold_expiry', poison, 1]],
    );
    const metrics = await svc.metrics.text();
    assert.match(metrics, /^cardprogram_sweep_failures_total\{job="hold_expiry"\} 1$/m);
    assert.match(metrics, /^cardprogram_sweep_items_failing\{job="hold_expiry"\} 1$/m);
    assert.match(metrics, /^cardprogram_sweep_oldest_failure_seconds\{job="hold_expiry"\} [\d.]+$/m);
    assert.ok(
      lines.some((l) => l.includes(poison) && l.includes('hold_expiry') && l.includes('"level":40')),
      'a warning names the poison hold',
    );

    // The next pass: the poison hold is tried again (and fails again), a hold that came due since is released.
    const later = await hold(second);
    const next = await expireHolds(svc, start + 8 * DAY, undefined, { pageSize: 2 });
    assert.deepEqual(next.tradeIds, [later]);
    assert.deepEqual(
      next.failed.map((f) => [f.tradeId, f.failures]),
      [[poison, 2]],
    );

    // Repaired: the next pass releases it, and nothing is failing any more.
    await sql`update trades set card_id = ${cardId} where id = ${poison}`.execute(h.db.database.db);
    const repaired = await expireHolds(svc, start + 8 * DAY, undefined, { pageSize: 2 });
    assert.deepEqual(repaired, { released: 1, tradeIds: [poison], failed: [] });
    assert.deepEqual(await balances(h, cardId), { available: 100, ledger: 100, status: 'active' });
    assert.equal((await h.db.database.db.selectFrom('sweep_failures').selectAll().execute()).length, 0);
    assert.doesNotMatch(await svc.metrics.text(), /^cardprogram_sweep_items_failing\{/m);
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
  });

  it('a dispute whose expiry throws is recorded and skipped: every other dispute past its deadline expires', async (t) => {
    let now = Date.now();
    const h = await build(t, dialect, {}, { clock: () => now });
    const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    // The poison dispute's deadline is the earliest: first in the pass's order.
    const p = await clearedPurchase(h, { amount: 10, businessDate: dayOf(now - 119 * DAY) });
    const poison = (await disputeOk(h, 'create', { tradeId: p.tradeId, reason: 'other', explanation: 'x' })).disputeId as string;
    const others: string[] = [];
    for (let i = 0; i < 3; i++) {
      const c = await clearedPurchase(h, { amount: 10, businessDate: dayOf(now - 118 * DAY), cardId: p.cardId });
      others.push((await disputeOk(h, 'create', { tradeId: c.tradeId, reason: 'other', explanation: 'x' })).disputeId as string);
    }
    const other = await h.newMerchant();
    const { cardId: foreign } = await fundedCard(h, { merchant: other });
    // Inconsistent on purpose: the dispute names another merchant's card; its expiry cannot lock it.
    await h.db.database.db.updateTable('disputes').set({ card_id: foreign }).where('id', '=', poison).execute();
    now += 5 * DAY;
    const first = await expireDisputes(h.app.svc, now);
    assert.equal(first.expired, 3);
    assert.deepEqual(
      first.failed.map((f) => [f.disputeId, f.failures]),
      [[poison, 1]],
    );
    const statuses = await h.db.database.db.selectFrom('disputes').select(['id', 'status']).where('id', 'in', others).execute();
    assert.ok(statuses.every((d) => d.status === 'expired'));
    assert.deepEqual(
      (await expireDisputes(h.app.svc, now)).failed.map((f) => [f.disputeId, f.failures]),
      [[poison, 2]],
      'tried again by the next pass',
    );
    await h.db.database.db.updateTable('disputes').set({ card_id: p.cardId }).where('id', '=', poison).execute();
    assert.deepEqual(await expireDisputes(h.app.svc, now), { expired: 1, failed: [] });
    assert.equal((await h.db.database.db.selectFrom('sweep_failures').selectAll().execute()).length, 0);
  });

  it('the sandbox’s KYC reviewer: a request whose review throws is put back by a minute; the requests after it are reviewed', async (t) => {
    const h = await build(t, dialect, { kyc: { platforms: ['SUMSUB'], autoDecisionMs: 1 } });
    const [bad, good] = [kycBody({ email: 'gina@example.com' }), kycBody({ email: 'hugo@example.com' })];
    for (const b of [bad, good]) assert.equal((await h.call('/open/api/kyc/share/information', b)).status, 200);
    // Its sealed e-mail corrupted: the review cannot open it.
    await h.db.database.db
      .updateTable('kyc_requests')
      .set({ email_enc: 'v1.garbage' })
      .where('request_no', '=', String(bad.requestNo))
      .execute();
    const now = Date.now() + 10;
    await kycAutomation(h.app.svc)(now);
    const rows = await h.db.database.db.selectFrom('kyc_requests').select(['request_no', 'status', 'auto_decide_at']).execute();
    const of = (b: Record<string, unknown>) => rows.find((r) => r.request_no === b.requestNo);
    assert.equal(of(good)?.status, 'reviewing');
    assert.deepEqual([of(bad)?.status, Number(of(bad)?.auto_decide_at)], ['init', now + 60_000]);
    assert.match(await h.app.svc.metrics.text(), /^cardprogram_sweep_failures_total\{job="kyc_auto_review"\} 1$/m);
  });

  it('the reaper deletes in pages: every key past the retention, none younger', async (t) => {
    const h = await build(t, dialect);
    const now = Date.now();
    const old = now - h.config.idempotencyRetentionMs - 1000;
    await h.db.database.withTx(async (tx) => {
      for (let i = 0; i < 2500; i++)
        await tx
          .insertInto('idempotency_keys')
          .values({
            merchant_id: h.merchant.appId,
            random_str: `old${String(i).padStart(5, '0')}`,
            kind: 'read',
            operation: 'cardQuery',
            fingerprint: '-',
            response_status: null,
            response_body: null,
            created_at: old - (i % 7),
          })
          .execute();
      for (let i = 0; i < 3; i++)
        await tx
          .insertInto('idempotency_keys')
          .values({
            merchant_id: h.merchant.appId,
            random_str: `new${i}`,
            kind: 'read',
            operation: 'cardQuery',
            fingerprint: '-',
            response_status: null,
            response_body: null,
            created_at: now,
          })
          .execute();
    });
    assert.equal(await reapKeys(h.app.svc, now - h.config.idempotencyRetentionMs), 2500);
    const left = await h.db.database.db
      .selectFrom('idempotency_keys')
      .select('random_str')
      .where('merchant_id', '=', h.merchant.appId)
      .execute();
    assert.deepEqual(left.map((r) => r.random_str).sort(), ['new0', 'new1', 'new2']);
  });
});
