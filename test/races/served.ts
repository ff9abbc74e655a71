import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { Config } from '../../src/config.js';
import { build, type Harness, holderBody, randomStr, sign, type TestMerchant } from '../helpers/app.js';
import type { TestDialect } from '../helpers/db.js';

export interface Reply {
  status: number;
  body: Record<string, any>;
}

/** The real app listening on loopback, and a client that signs and sends over HTTP. */
export interface Served {
  h: Harness;
  post(path: string, body: Record<string, unknown>, merchant?: TestMerchant): Promise<Reply>;
  /** Like post, for a request that must succeed; returns its model. */
  must(path: string, body: Record<string, unknown>): Promise<Record<string, any>>;
}

export async function served(t: TestContext, dialect: TestDialect, overrides: Partial<Config> = {}): Promise<Served> {
  const h = await build(t, dialect, overrides);
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  const address = h.app.server.address();
  assert.ok(address && typeof address === 'object');
  const base = `http://127.0.0.1:${address.port}`;
  const post = async (path: string, body: Record<string, unknown>, merchant?: TestMerchant): Promise<Reply> => {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(sign({ randomStr: randomStr(), ...body }, merchant ?? h.merchant)),
    });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };
  const must = async (path: string, body: Record<string, unknown>) => {
    const res = await post(path, body);
    assert.equal(res.status, 200, `${path} ${JSON.stringify(body)} → ${JSON.stringify(res.body)}`);
    return res.body.model ?? res.body;
  };
  return { h, post, must };
}

/** An approved cardholder (its id), optionally with a card in EUR topped up by `topUp`. */
export async function holderWithCard(s: Served, topUp?: number): Promise<{ holderId: string; cardId: string }> {
  const holder = await s.must('/api/network/holderCreate.html', holderBody());
  await s.must('/sandbox/holder/review', { holderId: holder.holderId, auditStatus: 2 });
  const card = await s.must('/api/network/cardApply.html', { holderId: holder.holderId, currency: 'EUR' });
  if (topUp) await s.must('/api/network/cardTopUp.html', { cardId: card.cardId, amount: topUp });
  return { holderId: holder.holderId, cardId: card.cardId };
}

/** Counts of each answer code, e.g. { '0': 12, '2724': 28 }. */
export function tally(replies: Reply[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of replies) {
    const code = r.status === 200 ? '0' : String(r.body.code ?? r.status);
    out[code] = (out[code] ?? 0) + 1;
  }
  return out;
}
