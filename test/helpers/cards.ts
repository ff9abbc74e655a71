import assert from 'node:assert/strict';
import type { Harness, TestMerchant } from './app.js';
import { holderBody, randomStr } from './app.js';

/** An approved cardholder with one card in `currency`, optionally funded. */
export async function fundedCard(h: Harness, opts: { currency?: string; topUp?: number; merchant?: TestMerchant } = {}) {
  const merchant = opts.merchant ?? h.merchant;
  const holder = await h.call('/api/network/holderCreate.html', holderBody(), { merchant });
  assert.equal(holder.status, 200, JSON.stringify(holder.body));
  const review = await h.call(
    '/sandbox/holder/review',
    { holderId: holder.body.holderId, auditStatus: 2, randomStr: randomStr() },
    { merchant },
  );
  assert.equal(review.status, 200, JSON.stringify(review.body));
  const card = await h.call(
    '/api/network/cardApply.html',
    { holderId: holder.body.holderId, currency: opts.currency ?? 'EUR', randomStr: randomStr() },
    { merchant },
  );
  assert.equal(card.status, 200, JSON.stringify(card.body));
  if (opts.topUp) {
    const t = await h.call(
      '/api/network/cardTopUp.html',
      { cardId: card.body.model.cardId, amount: opts.topUp, randomStr: randomStr() },
      { merchant },
    );
    assert.equal(t.status, 200, JSON.stringify(t.body));
  }
  return { holderId: holder.body.holderId as string, cardId: card.body.model.cardId as string, cardNo: card.body.model.cardNo as string };
}

/** The card's balances as the API reports them. */
export async function balances(h: Harness, cardId: string, merchant?: TestMerchant) {
  const res = await h.call('/api/network/cardQuery.html', { cardId, randomStr: randomStr() }, merchant ? { merchant } : {});
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return {
    available: res.body.model.availableBalance as number,
    ledger: res.body.model.ledgerBalance as number,
    status: res.body.model.status as string,
  };
}

/** A simulation or operation that must succeed; returns its model. */
export async function ok(h: Harness, path: string, body: Record<string, unknown>, merchant?: TestMerchant) {
  const res = await h.call(path, { randomStr: randomStr(), ...body }, merchant ? { merchant } : {});
  assert.equal(res.status, 200, `${path} ${JSON.stringify(body)} → ${JSON.stringify(res.body)}`);
  return res.body.model;
}

/** The card's records of today (UTC) in the 4.1 list (`extra`: more of its fields, `tradeStatusList`…); asserts the call succeeded. */
export async function todaysTrades(h: Harness, cardId: string, extra: Record<string, unknown> = {}) {
  const day = new Date().toISOString().slice(0, 10);
  const res = await h.call('/api/network/networkAuthTradeList.html', {
    cardId,
    beginDate: day,
    endDate: day,
    start: 0,
    ...extra,
    randomStr: randomStr(),
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.tradeList as Array<Record<string, any>>;
}
