import assert from 'node:assert/strict';
import { it } from 'node:test';
import { runVerb } from '../../src/runner.js';
import { finishChallenge } from '../../src/three-ds/finish.js';
import { eachDialect } from '../helpers/dialects.js';
import { type Acs, acs, card, notifyTo, stored, type TestCard } from './helpers/acs.js';
import { areq, send } from './helpers/ds.js';

/** One purchase of `cents` EUR cents through the ACS; its transStatus and acsTransID. */
async function buy(a: Acs, c: TestCard, cents: number, extra: { currency?: string } = {}) {
  const ares = (await send(a.url, areq({ pan: c.pan, expiry: c.expiry, amount: String(cents), ...extra }))).json ?? {};
  return { status: String(ares.transStatus), id: String(ares.acsTransID), reason: ares.transStatusReason };
}

async function statuses(a: Acs, c: TestCard, amounts: number[]) {
  const out: string[] = [];
  for (const cents of amounts) out.push((await buy(a, c, cents)).status);
  return out;
}

eachDialect('3-D Secure: the low-value exemption (PSD2 RTS art. 16) and the per-card limit', (dialect) => {
  it('at most 30.00 EUR each, at most 5 exempted since the last successful challenge: the sixth is challenged', async (t) => {
    const a = await acs(t, dialect);
    await notifyTo(t, a.h);
    const c = await card(a.h);
    assert.deepEqual(await statuses(a, c, [3001]), ['C'], 'above 30.00 EUR: challenged');
    assert.deepEqual(await statuses(a, c, [3000, 100, 100, 100, 100, 100]), ['Y', 'Y', 'Y', 'Y', 'Y', 'C']);
    const state = await a.h.db.database.db
      .selectFrom('three_ds_card_state')
      .selectAll()
      .where('card_id', '=', c.cardId)
      .executeTakeFirstOrThrow();
    assert.deepEqual([Number(state.exempt_count), Number(state.exempt_eur)], [5, 3400]);
  });

  it('at most 100.00 EUR in all, this one included; another currency counts at the program’s rates', async (t) => {
    const a = await acs(t, dialect);
    await notifyTo(t, a.h);
    const c = await card(a.h);
    assert.deepEqual(await statuses(a, c, [3000, 3000, 3000, 1001]), ['Y', 'Y', 'Y', 'C'], '90.00 + 10.01 > 100.00');
    assert.deepEqual(await statuses(a, c, [1000]), ['Y'], 'exactly 100.00 in all');
    const other = await card(a.h);
    // 32.40 USD is 30.00 EUR at 1.08: within; 32.41 USD is not.
    assert.equal((await buy(a, other, 3241, { currency: '840' })).status, 'C');
    assert.equal((await buy(a, other, 3240, { currency: '840' })).status, 'Y');
  });

  it('a successful challenge starts the count again; a failed or unfinished one does not', async (t) => {
    const a = await acs(t, dialect);
    await notifyTo(t, a.h);
    const c = await card(a.h);
    assert.deepEqual(await statuses(a, c, [100, 100, 100, 100, 100]), ['Y', 'Y', 'Y', 'Y', 'Y']);
    const failed = await buy(a, c, 100);
    assert.equal(failed.status, 'C');
    await runVerb(a.h.app.svc, finishChallenge, { input: { acsTransID: failed.id, transStatus: 'N', reason: '01' }, actor: 'test' });
    assert.equal((await stored(a.h, failed.id)).trans_status, 'N');
    const unfinished = await buy(a, c, 100);
    assert.equal(unfinished.status, 'C', 'still challenged after a failed one');
    assert.equal((await buy(a, c, 100)).status, 'C', 'and after an unfinished one');
    await runVerb(a.h.app.svc, finishChallenge, { input: { acsTransID: unfinished.id, transStatus: 'Y' }, actor: 'test' });
    const passed = await stored(a.h, unfinished.id);
    assert.deepEqual([passed.trans_status, passed.eci, passed.challenge_state], ['Y', '05', 'done']);
    assert.equal(passed.av_hash?.length, 64);
    assert.deepEqual(await statuses(a, c, [100, 100, 100, 100, 100, 100]), ['Y', 'Y', 'Y', 'Y', 'Y', 'C']);
    // A challenge ends once: a second end is 2751.
    await assert.rejects(
      runVerb(a.h.app.svc, finishChallenge, { input: { acsTransID: unfinished.id, transStatus: 'N' }, actor: 'test' }),
      (err: Error & { code?: string }) => err.code === '2751',
    );
  });

  it('a mandated challenge (threeDSRequestorChallengeInd 04) is challenged whatever the amount, and counts nothing', async (t) => {
    const a = await acs(t, dialect);
    await notifyTo(t, a.h);
    const c = await card(a.h);
    const ares = (await send(a.url, areq({ pan: c.pan, expiry: c.expiry, amount: '100', challengeInd: '04' }))).json ?? {};
    assert.equal(ares.transStatus, 'C');
    assert.deepEqual(await statuses(a, c, [100, 100, 100, 100, 100, 100]), ['Y', 'Y', 'Y', 'Y', 'Y', 'C']);
  });
});

eachDialect('3-D Secure: the exemption and the limit under concurrency', (dialect) => {
  it('AReqs of one card at once never share the fifth exempted slot nor pass 100.00 EUR', async (t) => {
    const a = await acs(t, dialect);
    await notifyTo(t, a.h);
    for (let round = 0; round < 4; round++) {
      const c = await card(a.h);
      const answers = await Promise.all(Array.from({ length: 8 }, () => buy(a, c, 100)));
      assert.equal(answers.filter((x) => x.status === 'Y').length, 5, `round ${round}: ${answers.map((x) => x.status).join('')}`);
      const d = await card(a.h);
      const big = await Promise.all(Array.from({ length: 6 }, () => buy(a, d, 3000)));
      assert.equal(big.filter((x) => x.status === 'Y').length, 3, `round ${round}: 3 × 30.00 fit in 100.00, a fourth does not`);
    }
  });

  it('40 AReqs of one card at once: 30 answered, 10 N/04', async (t) => {
    const a = await acs(t, dialect);
    await notifyTo(t, a.h);
    const c = await card(a.h);
    const answers = await Promise.all(Array.from({ length: 40 }, () => buy(a, c, 100)));
    assert.equal(answers.filter((x) => x.reason === '04').length, 10, answers.map((x) => `${x.status}${x.reason ?? ''}`).join(' '));
  });
});
