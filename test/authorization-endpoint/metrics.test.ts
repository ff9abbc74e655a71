import assert from 'node:assert/strict';
import type http from 'node:http';
import { it } from 'node:test';
import { build, type Harness, randomStr } from '../helpers/app.js';
import { fundedCard } from '../helpers/cards.js';
import { eachDialect } from '../helpers/dialects.js';
import { receiver } from '../helpers/receiver.js';

// Issue 32, point 4: what an operator sees of the merchant's endpoint (docs/operations.md, "Metrics").
const SET = '/api/network/authorizationEndpointUpdate.html';
const TOKEN = 'metrics-token-0123456789abcdef';
const answer =
  (delayMs = 0) =>
  (res: http.ServerResponse) =>
    setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"approved":true}'), delayMs);

async function endpointMetrics(h: Harness): Promise<Record<string, number>> {
  const text = await h.app.svc.metrics.text();
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const m = /^cardprogram_authorization_endpoint_(\S+) (\S+)$/.exec(line);
    if (m?.[1] && !m[1].includes('_bucket')) out[m[1]] = Number(m[2]);
  }
  return out;
}

eachDialect('cardprogram_authorization_endpoint_* metrics', (dialect) => {
  it('asked, answered, timed out waiting, and the time before sending by phase', async (t) => {
    const h = await build(t, dialect, { metricsToken: TOKEN });
    const { cardId } = await fundedCard(h, { topUp: 50 });
    const r = await receiver(t, h.merchant.webhookSecret);
    const set = await h.call(SET, { authorizationUrl: r.url, timeoutMs: 300, randomStr: randomStr() });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    r.respond(answer(), answer(1500));
    assert.equal((await h.call('/sandbox/network/authorize', { cardId, amount: 1, randomStr: randomStr() })).status, 200);
    const late = await h.call('/sandbox/network/authorize', { cardId, amount: 1, randomStr: randomStr() });
    assert.equal(late.body.detail?.declineReason, 'merchant_timeout', JSON.stringify(late.body));
    const m = await endpointMetrics(h);
    assert.equal(m.asked_total, 2);
    assert.equal(m['results_total{result="answered"}'], 1);
    assert.equal(m['results_total{result="timeout_waiting"}'], 1);
    assert.equal(m['results_total{result="timeout_before_sending"}'], undefined);
    for (const phase of ['claim', 'rules', 'connect']) {
      assert.equal(m[`send_delay_seconds_count{phase="${phase}"}`], 2, phase);
      assert.ok((m[`send_delay_seconds_sum{phase="${phase}"}`] ?? -1) >= 0, phase);
    }
    // Served at /metrics like every other metric.
    const scraped = await h.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
    assert.match(scraped.body, /cardprogram_authorization_endpoint_results_total\{result="timeout_waiting"\} 1/);
  });

  it('a deadline that passed before the request could be sent counts as timed out before sending, and the endpoint is not asked', async (t) => {
    // A clock that moves 200 ms on each reading: by the time the request would be sent, its 100 ms are gone.
    let now = Date.now();
    const h = await build(t, dialect, {}, { clock: () => (now += 200) });
    const { cardId } = await fundedCard(h, { topUp: 50 });
    const r = await receiver(t, h.merchant.webhookSecret);
    const set = await h.call(SET, { authorizationUrl: r.url, timeoutMs: 100, randomStr: randomStr() });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    const res = await h.call('/sandbox/network/authorize', { cardId, amount: 1, randomStr: randomStr() });
    assert.equal(res.body.detail?.declineReason, 'merchant_timeout', JSON.stringify(res.body));
    assert.equal(r.received.length, 0);
    const m = await endpointMetrics(h);
    assert.deepEqual([m.asked_total, m['results_total{result="timeout_before_sending"}']], [1, 1]);
  });
});
