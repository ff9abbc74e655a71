import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { VerbCtx } from '../src/context.js';
import { DomainError } from '../src/errors.js';
import { updateMerchant } from '../src/merchants/manage.js';
import { runVerb } from '../src/runner.js';
import { build, type Harness, holderBody, randomStr } from './helpers/app.js';
import { eachDialect } from './helpers/dialects.js';

// The one runner of verbs (src/runner.ts, docs/architecture.md "Verbs and the runner"): after the
// commit it wakes the worker only when the verb left it work, and runs afterCommit work only for
// what was committed; a transaction run again starts from nothing.

/** Counts the runner's wake-ups of the worker for the rest of the test. */
function countPokes(t: { after(fn: () => void): void }, h: Harness): { count: number } {
  const pokes = { count: 0 };
  const notifier = h.app.svc.notifier;
  const real = notifier.poke;
  notifier.poke = () => {
    pokes.count++;
  };
  t.after(() => {
    notifier.poke = real;
  });
  return pokes;
}

eachDialect('the verb runner', (dialect) => {
  it('wakes the worker after a write that left an event, not after one that left none, nor for a replay', async (t) => {
    const h = await build(t, dialect);
    await runVerb(h.app.svc, updateMerchant, {
      input: { appId: h.merchant.appId, notifyUrl: 'http://127.0.0.1:9/hooks' },
      actor: 'test',
    });
    const pokes = countPokes(t, h);
    const created = await h.call('/api/network/holderCreate.html', holderBody());
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.equal(pokes.count, 0, 'a cardholder’s creation writes no event');
    const review = { holderId: created.body.holderId, auditStatus: 2, randomStr: randomStr() };
    assert.equal((await h.call('/sandbox/holder/review', review)).status, 200);
    assert.equal(pokes.count, 1, 'the review wrote holder.audit: the worker is woken once');
    const again = await h.call('/sandbox/holder/review', review);
    assert.equal(again.headers['x-idempotent-replay'], 'true');
    assert.equal(pokes.count, 1, 'a replay commits nothing and wakes nothing');
    const events = await h.db.database.db.selectFrom('callback_events').select('type').execute();
    assert.deepEqual(
      events.map((e) => e.type),
      ['holder.audit'],
    );
  });

  it('runs afterCommit work once the verb committed, never for a verb that failed', async (t) => {
    const h = await build(t, dialect);
    const pokes = countPokes(t, h);
    const done: string[] = [];
    const failing = async ({ ctx }: { ctx: VerbCtx; input: null }) => {
      await ctx.tx.updateTable('merchants').set({ name: 'Renamed' }).where('id', '=', h.merchant.appId).execute();
      ctx.afterCommit(() => {
        done.push('failed');
      });
      ctx.wake.worker = true;
      throw new DomainError('validation', 'name: refused');
    };
    await assert.rejects(runVerb(h.app.svc, failing, { input: null, actor: 'test' }), /name: refused/);
    const name = async () =>
      (await h.db.database.db.selectFrom('merchants').select('name').where('id', '=', h.merchant.appId).executeTakeFirstOrThrow()).name;
    assert.notEqual(await name(), 'Renamed', 'the failed verb’s write was rolled back');
    assert.equal(done.length, 0, 'no afterCommit work for what was rolled back');
    assert.equal(pokes.count, 0);
    const succeeding = async ({ ctx }: { ctx: VerbCtx; input: string }) => {
      ctx.afterCommit(() => {
        done.push(ctx.actor);
      });
      await ctx.tx.updateTable('merchants').set({ name: 'Renamed' }).where('id', '=', h.merchant.appId).execute();
      return 'ok';
    };
    assert.equal(await runVerb(h.app.svc, succeeding, { input: 'x', actor: 'cli' }), 'ok');
    assert.equal(await name(), 'Renamed');
    assert.deepEqual(done, ['cli']);
    assert.equal(pokes.count, 0, 'no event, no wake-up');
  });

  it('a verb run again after a lost conflict starts from nothing: what its first try asked for is not done', {
    skip: dialect.name === 'postgres' ? false : 'PostgreSQL only: SQLite never loses a conflict',
  }, async (t) => {
    const h = await build(t, dialect);
    const pokes = countPokes(t, h);
    const done: number[] = [];
    let runs = 0;
    const verb = async ({ ctx }: { ctx: VerbCtx; input: null }) => {
      runs++;
      ctx.afterCommit(() => {
        done.push(runs);
      });
      if (runs === 1) {
        ctx.wake.worker = true;
        throw Object.assign(new Error('could not serialize access'), { code: '40001' });
      }
      return runs;
    };
    assert.equal(await runVerb(h.app.svc, verb, { input: null, actor: 'test' }), 2);
    assert.deepEqual(done, [2], 'only the committed try’s afterCommit work');
    assert.equal(pokes.count, 0, 'the first try’s wake-up went with its rollback');
  });
});
