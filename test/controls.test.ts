import assert from 'node:assert/strict';
import { it } from 'node:test';
import { authorize as authorizeVerb } from '../src/ledger/authorize.js';
import { checkLedger } from '../src/ledger/check.js';
import { runVerb } from '../src/runner.js';
import { build, type Harness, holderBody, randomStr } from './helpers/app.js';
import { fundedCard, ok } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';

const N = '/sandbox/network';
const UPDATE = '/api/network/cardControlsUpdate.html';
/** Tuesday 24 November 2026, 10:00 UTC. */
const T0 = Date.UTC(2026, 10, 24, 10, 0);

async function setControls(h: Harness, target: { cardId?: string; holderId?: string }, controls: Record<string, unknown>) {
  return h.call(UPDATE, { ...target, controls, randomStr: randomStr() });
}

/** An authorization's answer: approved (its record) or the decline's code and reason. */
async function authorize(h: Harness, cardId: string, amount: number, extra: Record<string, unknown> = {}) {
  const res = await h.call(`${N}/authorize`, { cardId, amount, randomStr: randomStr(), ...extra });
  if (res.status === 200) return { approved: true as const, tradeId: res.body.model.tradeId as string };
  return {
    approved: false as const,
    code: res.body.code as string,
    reason: res.body.detail?.declineReason as string,
    declineId: res.body.detail?.tradeId as string,
    msg: res.body.msg as string,
  };
}

async function spending(h: Harness, cardId: string) {
  const res = await h.call('/api/network/cardQuery.html', { cardId, randomStr: randomStr() });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.model as { controls: Record<string, unknown>; spending: Array<Record<string, unknown>>; availableBalance: number };
}

async function approvedCard(h: Harness, holderId: string, topUp = 1000) {
  const card = await ok(h, '/api/network/cardApply.html', { holderId, currency: 'EUR' });
  await ok(h, '/api/network/cardTopUp.html', { cardId: card.cardId, amount: topUp });
  return card.cardId as string;
}

eachDialect('spending controls', (dialect) => {
  it('each acceptor rule declines with 2728 and its reason, books nothing, and tradeQuery reads the decline', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const before = await spending(h, cardId);
    const cases: Array<[Record<string, unknown>, Record<string, unknown>, string]> = [
      [{ channels: ['ecommerce'] }, { channel: 'pos' }, 'channel_not_allowed'],
      [{ channels: ['ecommerce'] }, {}, 'channel_not_allowed'],
      [{ allowedMccs: ['5411'] }, { mcc: '5812' }, 'mcc_not_allowed'],
      [{ allowedMccs: ['5411'] }, {}, 'mcc_not_allowed'],
      [{ blockedMccs: ['7995'] }, { mcc: '7995' }, 'mcc_blocked'],
      [{ allowedCountries: ['DE', 'FR'] }, { merchantCountry: 'US' }, 'country_not_allowed'],
      [{ blockedCountries: ['US'] }, { merchantCountry: 'US' }, 'country_blocked'],
      [{ spendingLimits: [{ amount: 5, interval: 'per_authorization' }] }, {}, 'spending_limit'],
    ];
    for (const [controls, acceptor, reason] of cases) {
      const set = await setControls(h, { cardId }, controls);
      assert.equal(set.status, 200, JSON.stringify(set.body));
      const a = await authorize(h, cardId, 6, acceptor);
      assert.equal(a.approved, false, `${JSON.stringify(controls)} ${JSON.stringify(acceptor)}`);
      assert.equal(a.code, '2728');
      assert.equal(a.reason, reason);
      if (a.approved) throw new Error('unreachable');
      const q = await h.call('/api/network/tradeQuery.html', { tradeId: a.declineId, randomStr: randomStr() });
      assert.equal(q.body.model.authorization.decision.declineReason, reason);
      assert.equal(q.body.model.authorization.decision.code, '2728');
    }
    // What passes each rule is approved.
    await setControls(h, { cardId }, { channels: ['pos'], allowedMccs: ['5411'], blockedCountries: ['US'] });
    assert.equal((await authorize(h, cardId, 6, { channel: 'pos', mcc: '5411', merchantCountry: 'DE' })).approved, true);
    const after = await spending(h, cardId);
    // The sandbox charges no authorization fee in the card's currency (docs/transactions.md).
    assert.equal(after.availableBalance, before.availableBalance - 6, 'only the approval moved money');
  });

  it('a daily limit: room is used by approvals, given back by reversals, voids and the unused part of a clearing; the next UTC day starts afresh', async (t) => {
    let now = T0;
    const h = await build(t, dialect, {}, { clock: () => now });
    const { cardId } = await fundedCard(h, { topUp: 1000 });
    assert.equal((await setControls(h, { cardId }, { spendingLimits: [{ amount: 100, interval: 'daily' }] })).status, 200);
    const a1 = await authorize(h, cardId, 60);
    assert.equal(a1.approved, true);
    const over = await authorize(h, cardId, 40.01);
    assert.deepEqual([over.approved, over.code, over.reason], [false, '2728', 'spending_limit']);
    assert.match(over.msg ?? '', /daily limit of 100 EUR has 40 EUR left/);
    const a2 = await authorize(h, cardId, 40);
    assert.equal(a2.approved, true, 'exactly the limit is allowed');
    let [state] = (await spending(h, cardId)).spending;
    assert.deepEqual(state, {
      source: 'card',
      amount: 100,
      interval: 'daily',
      mccs: null,
      spent: 100,
      remaining: 0,
      resetsAt: '2026-11-25T00:00:00.000Z',
    });
    // A partial reversal gives 10 back; a clearing of 30 of the remaining 50 gives 20 back.
    if (!a1.approved) throw new Error('unreachable');
    await ok(h, `${N}/reverse`, { tradeId: a1.tradeId, amount: 10 });
    await ok(h, `${N}/clear`, { tradeId: a1.tradeId, amount: 30 });
    [state] = (await spending(h, cardId)).spending;
    assert.equal(state?.spent, 70);
    // Voiding the payment gives its 30 back; a refund would not.
    const last = await ok(h, `${N}/authorize`, { cardId, amount: 30 });
    const pay = await ok(h, `${N}/clear`, { tradeId: last.tradeId });
    await ok(h, `${N}/refund`, { tradeId: pay.tradeId, amount: 5 });
    [state] = (await spending(h, cardId)).spending;
    assert.equal(state?.spent, 100, 'a refund gives no room back');
    assert.equal((await authorize(h, cardId, 0.01)).approved, false);
    // One millisecond before midnight: still today. At midnight UTC: a new day.
    now = Date.UTC(2026, 10, 24, 23, 59, 59, 999);
    assert.equal((await authorize(h, cardId, 0.01)).approved, false);
    now = Date.UTC(2026, 10, 25);
    [state] = (await spending(h, cardId)).spending;
    assert.deepEqual([state?.spent, state?.remaining], [0, 100]);
    assert.equal((await authorize(h, cardId, 100)).approved, true);
    // Reversing yesterday's authorization does not give today's room back.
    if (!a2.approved) throw new Error('unreachable');
    await ok(h, `${N}/reverse`, { tradeId: a2.tradeId });
    [state] = (await spending(h, cardId)).spending;
    assert.equal(state?.spent, 100);
  });

  it('weekly, monthly, yearly and all-time limits count their UTC calendar intervals; MCC-scoped limits count only their categories', async (t) => {
    let now = T0;
    const h = await build(t, dialect, {}, { clock: () => now });
    const { cardId } = await fundedCard(h, { topUp: 5000 });
    const limits = [
      { amount: 300, interval: 'weekly' },
      { amount: 500, interval: 'monthly' },
      { amount: 700, interval: 'yearly' },
      { amount: 900, interval: 'all_time' },
      { amount: 50, interval: 'daily', mccs: ['7995'] },
    ];
    assert.equal((await setControls(h, { cardId }, { spendingLimits: limits })).status, 200);
    assert.equal((await authorize(h, cardId, 50, { mcc: '7995' })).approved, true);
    assert.equal((await authorize(h, cardId, 1, { mcc: '7995' })).reason, 'spending_limit', 'the gambling limit is spent');
    assert.equal((await authorize(h, cardId, 250, { mcc: '5411' })).approved, true, 'other categories are not counted by it');
    assert.equal((await authorize(h, cardId, 1, { mcc: '5411' })).reason, 'spending_limit', 'the week has 300');
    now = Date.UTC(2026, 10, 30, 0, 0); // Monday: a new week, the same month
    const monday = await authorize(h, cardId, 200);
    assert.equal(monday.approved, true, JSON.stringify(monday));
    assert.equal((await authorize(h, cardId, 1)).reason, 'spending_limit', 'the month has 500');
    now = Date.UTC(2026, 11, 7); // December, a new week
    assert.equal((await authorize(h, cardId, 200)).approved, true);
    assert.equal((await authorize(h, cardId, 1)).reason, 'spending_limit', 'the year has 700');
    now = Date.UTC(2027, 0, 1); // a new year
    assert.equal((await authorize(h, cardId, 200)).approved, true);
    assert.equal((await authorize(h, cardId, 1)).reason, 'spending_limit', 'all time has 900');
    const s = (await spending(h, cardId)).spending.map((x) => [x.interval, x.spent, x.resetsAt]);
    assert.deepEqual(s, [
      ['weekly', 200, '2027-01-04T00:00:00.000Z'],
      ['monthly', 200, '2027-02-01T00:00:00.000Z'],
      ['yearly', 200, '2028-01-01T00:00:00.000Z'],
      ['all_time', 900, null],
      ['daily', 0, '2027-01-02T00:00:00.000Z'],
    ]);
  });

  it('a transaction that began before midnight and got its locks after is counted in the new day, never writing the counter back (outside review, H1)', async (t) => {
    let now = Date.UTC(2026, 10, 25, 0, 0, 0, 500);
    const h = await build(t, dialect, {}, { clock: () => now });
    const created = await h.call('/api/network/holderCreate.html', holderBody());
    const holderId = created.body.holderId as string;
    await ok(h, '/sandbox/holder/review', { holderId, auditStatus: 2 });
    const a = await approvedCard(h, holderId);
    const b = await approvedCard(h, holderId);
    await setControls(h, { holderId }, { spendingLimits: [{ amount: 100, interval: 'daily' }] });
    assert.equal((await authorize(h, b, 100)).approved, true, 'the new day’s 100');
    // What a request that began at 23:59:59.9 and waited for the card's lock until now looks like to the verb.
    const late = runVerb(h.app.svc, authorizeVerb, {
      input: { cardId: a, amount: 100 },
      merchantId: h.merchant.appId,
      actor: 'test',
      now: Date.UTC(2026, 10, 24, 23, 59, 59, 900),
    });
    await assert.rejects(late, (err: { code?: string; error?: { code?: string } }) => (err.error?.code ?? err.code) === '2728');
    const [state] = (await spending(h, b)).spending;
    assert.deepEqual([state?.spent, state?.resetsAt], [100, '2026-11-26T00:00:00.000Z'], 'the counter stays on the new day');
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
    now += 1000;
    assert.equal((await authorize(h, a, 0.01)).reason, 'spending_limit');
  });

  it('a limit set later counts what was already spent in its interval', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 500 });
    await ok(h, `${N}/authorize`, { cardId, amount: 70 });
    const reversed = await ok(h, `${N}/authorize`, { cardId, amount: 20 });
    await ok(h, `${N}/reverse`, { tradeId: reversed.tradeId });
    assert.equal((await setControls(h, { cardId }, { spendingLimits: [{ amount: 100, interval: 'daily' }] })).status, 200);
    assert.equal((await spending(h, cardId)).spending[0]?.spent, 70);
    assert.equal((await authorize(h, cardId, 30.01)).reason, 'spending_limit');
    assert.equal((await authorize(h, cardId, 30)).approved, true);
  });

  it('a cardholder’s controls apply to each of its cards that does not set the field; its limits count all its cards', async (t) => {
    const h = await build(t, dialect);
    const created = await h.call('/api/network/holderCreate.html', holderBody());
    const holderId = created.body.holderId as string;
    await ok(h, '/sandbox/holder/review', { holderId, auditStatus: 2 });
    const a = await approvedCard(h, holderId);
    const b = await approvedCard(h, holderId);
    const set = await setControls(h, { holderId }, { spendingLimits: [{ amount: 100, interval: 'daily' }], blockedMccs: ['7995'] });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    assert.deepEqual(set.body.model, {
      cardId: null,
      holderId,
      controls: { spendingLimits: [{ amount: 100, interval: 'daily' }], blockedMccs: ['7995'] },
    });
    assert.equal((await authorize(h, a, 60)).approved, true);
    assert.equal((await authorize(h, b, 41)).reason, 'spending_limit', 'the holder’s limit counts both cards');
    assert.equal((await authorize(h, b, 40)).approved, true);
    const blocked = await authorize(h, a, 1, { mcc: '7995' });
    assert.deepEqual(
      [blocked.reason, blocked.msg],
      ['mcc_blocked', 'cardId: merchant category 7995 is blocked by the cardholder’s controls'],
    );
    const shown = await spending(h, a);
    assert.deepEqual((shown as unknown as { holderControls: unknown }).holderControls, {
      spendingLimits: [{ amount: 100, interval: 'daily' }],
      blockedMccs: ['7995'],
    });
    assert.deepEqual(shown.controls, {}, 'the card’s own: none');
    assert.equal((await spending(h, b)).spending[0]?.source, 'cardholder');
    // Card b sets its own limit and categories: they replace the holder's for b (its spending still counts for the holder).
    await setControls(h, { cardId: b }, { spendingLimits: [{ amount: 500, interval: 'daily' }], allowedMccs: ['7995', '5411'] });
    assert.equal((await authorize(h, b, 100, { mcc: '7995' })).approved, true);
    assert.equal((await authorize(h, a, 1)).reason, 'spending_limit', 'the holder’s limit counted b’s 100 too');
    const sb = (await spending(h, b)).spending;
    assert.deepEqual([sb[0]?.source, sb[0]?.spent], ['card', 140], 'set after b spent 40 today: it counts those too');
    // {} removes the controls.
    await setControls(h, { holderId }, {});
    assert.equal((await authorize(h, a, 300)).approved, true);
  });

  it('bad controls are 1002 naming the field; another merchant’s card or cardholder is refused; nothing is written', async (t) => {
    const h = await build(t, dialect);
    const { cardId, holderId } = await fundedCard(h, { topUp: 10 });
    const bad: Array<[Record<string, unknown>, Record<string, unknown>, RegExp]> = [
      [{ cardId }, { allowedMccs: ['5411'], blockedMccs: ['7995'] }, /controls: set allowedMccs or blockedMccs, not both/],
      [{ cardId }, { blockedCountries: ['XX'] }, /controls.blockedCountries: XX is not an ISO/],
      [{ cardId }, { allowedMccs: ['541'] }, /allowedMccs/],
      [{ cardId }, { channels: ['phone'] }, /channels/],
      [{ cardId }, { spendingLimits: [{ amount: 0, interval: 'daily' }] }, /amount/],
      [{ cardId }, { spendingLimits: [{ amount: 1.001, interval: 'daily' }] }, /amount/],
      [{ cardId }, { spendingLimits: [{ amount: 1, interval: 'hourly' }] }, /interval/],
      [
        { cardId },
        {
          spendingLimits: [
            { amount: 1, interval: 'daily', mccs: ['1', '2'].map((x) => x.padStart(4, '0')) },
            { amount: 2, interval: 'daily', mccs: ['0002', '0001'] },
          ],
        },
        /repeats the interval and categories/,
      ],
      [{ cardId }, { allowedMccs: [] }, /allowedMccs/],
      [{ cardId }, { unknown: 1 }, /unknown/],
      [{ cardId, holderId }, {}, /cardId: send cardId .* or holderId/],
      [{}, {}, /cardId: send cardId/],
    ];
    for (const [target, controls, msg] of bad) {
      const res = await setControls(h, target, controls);
      assert.equal(res.status, 400, JSON.stringify([controls, res.body]));
      assert.equal(res.body.code, '1002');
      assert.match(res.body.msg, msg);
    }
    const other = await h.newMerchant();
    const res = await h.call(UPDATE, { cardId, controls: { channels: ['pos'] }, randomStr: randomStr() }, { merchant: other });
    assert.equal(res.body.code, '2648');
    const res2 = await h.call(UPDATE, { holderId, controls: { channels: ['pos'] }, randomStr: randomStr() }, { merchant: other });
    assert.equal(res2.body.code, '2606');
    assert.deepEqual((await spending(h, cardId)).controls, {}, 'nothing was set');
    assert.equal((await authorize(h, cardId, 1, { channel: 'atm' })).approved, true);
  });

  it('a cash withdrawal is decided as an authorization at an ATM (channel atm, MCC 6011) and counts against the limits (outside review, M1)', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 1000 });
    const withdraw = (amount: number, extra: Record<string, unknown> = {}) =>
      h.call(`${N}/withdraw`, { cardId, amount, randomStr: randomStr(), ...extra });
    await setControls(h, { cardId }, { channels: ['ecommerce'] });
    const refused = await withdraw(300);
    assert.deepEqual([refused.body.code, refused.body.msg], ['2728', 'cardId: channel atm is not allowed on this card']);
    await setControls(h, { cardId }, { blockedMccs: ['6011'] });
    assert.equal((await withdraw(10)).body.code, '2728');
    await setControls(h, { cardId }, { allowedCountries: ['DE'] });
    assert.equal((await withdraw(10, { merchantCountry: 'US' })).body.code, '2728');
    assert.equal((await withdraw(10, { merchantCountry: 'DE' })).status, 200);
    const unassigned = await withdraw(10, { merchantCountry: 'ZZ' });
    assert.deepEqual(
      [unassigned.status, unassigned.body.code, unassigned.body.msg],
      [400, '1002', 'merchantCountry: must be an ISO 3166-1 alpha-2 country code, e.g. DE'],
    );
    await setControls(
      h,
      { cardId },
      {
        spendingLimits: [
          { amount: 50, interval: 'daily', mccs: ['6011'] },
          { amount: 100, interval: 'daily' },
        ],
      },
    );
    assert.equal((await spending(h, cardId)).spending[1]?.spent, 10, 'the withdrawal already made today counts');
    assert.equal((await withdraw(41)).body.code, '2728', 'the cash limit has 40 left');
    assert.equal((await withdraw(40)).status, 200);
    assert.equal((await authorize(h, cardId, 50.01)).reason, 'spending_limit', 'the daily limit counts cash too');
    assert.equal((await authorize(h, cardId, 50)).approved, true);
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
    // Closing the card returns its balance as a 110 record that is no spending.
    await ok(h, '/api/network/cardClose.html', { cardId });
    assert.deepEqual((await checkLedger(h.db.database)).problems, []);
  });

  it('cardApply takes controls; a closed card’s controls cannot change', async (t) => {
    const h = await build(t, dialect);
    const { holderId } = await fundedCard(h);
    const card = await ok(h, '/api/network/cardApply.html', {
      holderId,
      currency: 'EUR',
      controls: { channels: ['ecommerce'], spendingLimits: [{ amount: 25, interval: 'monthly' }] },
    });
    assert.deepEqual(card.controls, { spendingLimits: [{ amount: 25, interval: 'monthly' }], channels: ['ecommerce'] });
    await ok(h, '/api/network/cardTopUp.html', { cardId: card.cardId, amount: 100 });
    assert.equal((await authorize(h, card.cardId, 26, { channel: 'ecommerce' })).reason, 'spending_limit');
    assert.equal((await authorize(h, card.cardId, 25, { channel: 'ecommerce' })).approved, true);
    await ok(h, '/api/network/cardClose.html', { cardId: card.cardId });
    const res = await setControls(h, { cardId: card.cardId }, {});
    assert.equal(res.body.code, '2724');
  });
});
