import assert from 'node:assert/strict';
import { it } from 'node:test';
import { AUDIT_TRANSITIONS, type AuditStatusValue } from '../src/codes/audit-status.js';
import { reviewHolder } from '../src/holders/review.js';
import { runVerb } from '../src/runner.js';
import { build, holderBody, randomStr, rowCounts } from './helpers/app.js';
import { eachDialect } from './helpers/dialects.js';

const CREATE = '/api/network/holderCreate.html';
const QUERY = '/api/network/holderQuery.html';
const REVIEW = '/sandbox/holder/review';

eachDialect('cardholder review and query', (dialect) => {
  it('review moves the audit status; query shows it with errMsg; every decision is recorded', async (t) => {
    const h = await build(t, dialect);
    const { holderId } = (await h.call(CREATE, holderBody())).body;
    const r1 = await h.call(REVIEW, { holderId, auditStatus: 1, randomStr: randomStr() });
    assert.equal(r1.status, 200);
    assert.equal(r1.body.code, '0');
    assert.equal(r1.body.success, true);
    assert.equal(r1.body.error, false);
    assert.equal(r1.body.model.auditStatus, 1);
    const r2 = await h.call(REVIEW, { holderId, auditStatus: 4, errMsg: 'Proof of address missing', randomStr: randomStr() });
    assert.equal(r2.body.model.errMsg, 'Proof of address missing');
    const q = await h.call(QUERY, { holderId, randomStr: randomStr() });
    assert.equal(q.status, 200);
    assert.equal(q.body.code, '0');
    assert.equal(q.body.model.auditStatus, 4);
    assert.equal(q.body.model.errMsg, 'Proof of address missing');
    assert.equal(q.body.model.firstName, 'Alice');
    const reviews = await h.db.database.db
      .selectFrom('holder_reviews')
      .selectAll()
      .where('holder_id', '=', holderId)
      .orderBy('created_at')
      .execute();
    assert.deepEqual(
      reviews.map((r) => [r.from_status, r.to_status, r.actor]),
      [
        [0, 1, `sandbox:${h.merchant.appId}`],
        [1, 4, `sandbox:${h.merchant.appId}`],
      ],
    );
  });

  it('follows the state machine exactly: every (from, to) pair', async (t) => {
    const h = await build(t, dialect);
    const { holderId } = (await h.call(CREATE, holderBody())).body;
    for (const from of [0, 1, 2, 3, 4] as AuditStatusValue[]) {
      for (const to of [1, 2, 3, 4]) {
        await h.db.database.db.updateTable('cardholders').set({ audit_status: from }).where('id', '=', holderId).execute();
        const res = await h.call(REVIEW, { holderId, auditStatus: to, randomStr: randomStr() });
        const allowed = AUDIT_TRANSITIONS[from].includes(to as AuditStatusValue);
        assert.equal(res.status, allowed ? 200 : 409, `${from} -> ${to}: ${JSON.stringify(res.body)}`);
        if (!allowed) {
          assert.equal(res.body.code, '2612');
          assert.match(res.body.msg, new RegExp(`^auditStatus: cannot change from ${from} `));
        }
      }
    }
  });

  it('bad review input: auditStatus 0 or 5 or text is 1002; an unknown or another merchant’s holder is 2606', async (t) => {
    const h = await build(t, dialect);
    const { holderId } = (await h.call(CREATE, holderBody())).body;
    for (const auditStatus of [0, 5, '2', 2.5, null]) {
      const res = await h.call(REVIEW, { holderId, auditStatus, randomStr: randomStr() });
      assert.equal(res.body.code, '1002', JSON.stringify(auditStatus));
      assert.match(res.body.msg, /^auditStatus: /);
    }
    const other = await h.newMerchant();
    const before = await rowCounts(h);
    const foreign = await h.call(REVIEW, { holderId, auditStatus: 2, randomStr: randomStr() }, { merchant: other });
    const unknown = await h.call(REVIEW, { holderId: 'hld_unknown', auditStatus: 2, randomStr: randomStr() }, { merchant: other });
    assert.equal(foreign.status, 404);
    assert.deepEqual({ ...foreign.body, traceId: '' }, { ...unknown.body, traceId: '' }, 'indistinguishable from unknown');
    assert.equal(foreign.body.code, '2606');
    const q = await h.call(QUERY, { holderId, randomStr: randomStr() }, { merchant: other });
    assert.equal(q.status, 404);
    assert.equal(q.body.code, '2606');
    assert.equal((await rowCounts(h)).cardholders, before.cardholders);
  });

  it('query: holderId is required', async (t) => {
    const h = await build(t, dialect);
    const res = await h.call(QUERY, { randomStr: randomStr() });
    assert.equal(res.body.code, '1002');
    assert.equal(res.body.msg, 'holderId: is required');
  });

  it('the operator’s review verb (the CLI path) reaches any merchant’s holder and records the actor', async (t) => {
    const h = await build(t, dialect);
    const { holderId } = (await h.call(CREATE, holderBody())).body;
    const db = h.db.database;
    const rec = await runVerb(h.app.svc, reviewHolder, { input: { holderId, auditStatus: 2 }, actor: 'cli' });
    assert.equal(rec.auditStatus, 2);
    const row = await db.db.selectFrom('holder_reviews').select('actor').where('holder_id', '=', holderId).executeTakeFirstOrThrow();
    assert.equal(row.actor, 'cli');
  });

  it('in production the sandbox review operation does not exist (404, 1004)', async (t) => {
    const h = await build(t, dialect, { env: 'production' });
    const { holderId } = (await h.call(CREATE, holderBody())).body;
    const res = await h.call(REVIEW, { holderId, auditStatus: 2, randomStr: randomStr() });
    assert.equal(res.status, 404);
    assert.equal(res.body.code, '1004');
  });
});
