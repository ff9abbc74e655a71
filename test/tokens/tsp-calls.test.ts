import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { it } from 'node:test';
import { sendTspCalls, TSP_CALL_MAX_AGE_MS, tspBackoffMs } from '../../src/tokens/tsp-calls.js';
import { build, type Harness } from '../helpers/app.js';
import { fundedCard, ok } from '../helpers/cards.js';
import type { TestDialect } from '../helpers/db.js';
import { eachDialect } from '../helpers/dialects.js';
import { seedToken } from '../helpers/tokens.js';
import { attemptsOf, callsOf, flushTsp, tspSimulator } from '../helpers/tsp.js';

/*
 * The service's calls to the TSP (decisions §15.1, §15.4) against a TSP simulator written from the
 * spec: the TSP down and back (retried with backoff, each attempt recorded), a token's calls in the
 * order they were made, a final refusal, giving up after 24 hours, and no TSP configured.
 */

const METRICS_TOKEN = 'metrics-token-tsp-0123456789abcdef';

/** The value of one sample line of GET /metrics; undefined when absent. */
async function metric(h: Harness, sample: string): Promise<number | undefined> {
  const res = await h.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  assert.equal(res.statusCode, 200, res.body);
  const line = res.body.split('\n').find((l) => l.startsWith(`${sample} `));
  return line === undefined ? undefined : Number(line.slice(sample.length + 1));
}

async function setUp(t: TestContext, dialect: TestDialect, opts: { tsp?: boolean } = {}) {
  const tsp = await tspSimulator(t);
  // The service's clock is the test's: time moves only when the test moves it (the backoff's waits).
  const clock = { now: Date.now() };
  const h = await build(
    t,
    dialect,
    { metricsToken: METRICS_TOKEN, ...(opts.tsp === false ? {} : { tspClient: { url: tsp.url, cert: null, key: null } }) },
    { clock: () => clock.now },
  );
  const { cardId } = await fundedCard(h);
  return { h, tsp, clock, cardId };
}

eachDialect('calls to the TSP', (dialect) => {
  it('the TSP down and back: each try recorded, tried again after a growing wait, sent once it answers, with the same Idempotency-Key', async (t) => {
    const { h, tsp, clock, cardId } = await setUp(t, dialect);
    const tok = await seedToken(h.app.svc, { cardId });
    tsp.answer(503);
    await ok(h, '/api/network/tokenSuspend.html', { tokenId: tok.tokenId, reason: 'phone lost' });
    await flushTsp(h.app.svc);
    let [call] = await callsOf(h, tok.tokenId);
    assert.ok(call);
    assert.equal(call.status, 'pending');
    assert.equal(call.attempts, 1);
    assert.equal(call.last_error, 'HTTP 503');
    assert.equal(Number(call.next_at), clock.now + tspBackoffMs(1));
    // Not due yet: nothing is sent.
    await flushTsp(h.app.svc);
    assert.equal(tsp.calls.length, 1);

    // Still down.
    clock.now += tspBackoffMs(1);
    await flushTsp(h.app.svc);
    [call] = await callsOf(h, tok.tokenId);
    assert.equal(call?.attempts, 2);
    assert.equal(Number(call?.next_at), clock.now + tspBackoffMs(2));
    assert.equal(tspBackoffMs(2), 2 * tspBackoffMs(1));

    tsp.answer(200);
    clock.now += tspBackoffMs(2);
    await flushTsp(h.app.svc);
    [call] = await callsOf(h, tok.tokenId);
    assert.equal(call?.status, 'done');
    assert.equal(call?.attempts, 3);
    assert.deepEqual(
      (await attemptsOf(h, call?.id as string)).map((a) => [a.attempt, a.http_status, a.outcome]),
      [
        [1, 503, 'retry'],
        [2, 503, 'retry'],
        [3, 200, 'done'],
      ],
    );
    assert.deepEqual(
      tsp.calls.map((c) => [c.tokenReferenceId, c.action, c.body, c.idempotencyKey, c.answered]),
      [503, 503, 200].map((answered) => [tok.tokenReferenceId, 'suspend', { reason: 'phone lost' }, call?.id, answered]),
    );
    // Done is done: never sent again.
    clock.now += 3_600_000;
    await flushTsp(h.app.svc);
    assert.equal(tsp.calls.length, 3);
  });

  it('a token’s calls reach the TSP in the order they were made: a failing suspend holds back the resume after it', async (t) => {
    const { h, tsp, clock, cardId } = await setUp(t, dialect);
    const tok = await seedToken(h.app.svc, { cardId });
    const other = await seedToken(h.app.svc, { cardId });
    tsp.answer(500);
    await ok(h, '/api/network/tokenSuspend.html', { tokenId: tok.tokenId });
    clock.now += 1;
    await ok(h, '/api/network/tokenResume.html', { tokenId: tok.tokenId });
    await flushTsp(h.app.svc);
    assert.deepEqual(
      tsp.calls.map((c) => c.action),
      ['suspend'],
      'the resume waits for the suspend',
    );
    // Another token's call is not held back by this one's.
    tsp.answer(200);
    await ok(h, '/api/network/tokenDelete.html', { tokenId: other.tokenId });
    await flushTsp(h.app.svc);
    assert.deepEqual(
      tsp.taken().map((c) => [c.tokenReferenceId, c.action]),
      [[other.tokenReferenceId, 'delete']],
    );
    clock.now += tspBackoffMs(1);
    await flushTsp(h.app.svc);
    await flushTsp(h.app.svc);
    assert.deepEqual(
      tsp
        .taken()
        .filter((c) => c.tokenReferenceId === tok.tokenReferenceId)
        .map((c) => c.action),
      ['suspend', 'resume'],
    );
  });

  it('a refusal the TSP would repeat (404) ends the call at once: failed, not retried', async (t) => {
    const { h, tsp, clock, cardId } = await setUp(t, dialect);
    const tok = await seedToken(h.app.svc, { cardId });
    tsp.answer(404);
    await ok(h, '/api/network/tokenDelete.html', { tokenId: tok.tokenId });
    await flushTsp(h.app.svc);
    const [call] = await callsOf(h, tok.tokenId);
    assert.equal(call?.status, 'failed');
    assert.deepEqual(
      (await attemptsOf(h, call?.id as string)).map((a) => [a.http_status, a.outcome]),
      [[404, 'failed']],
    );
    clock.now += 3_600_000;
    tsp.answer(200);
    await flushTsp(h.app.svc);
    assert.equal(tsp.calls.length, 1);
  });

  it('a TSP down for 24 hours: the call is given up (failed, logged), and the next call of the token goes', async (t) => {
    const { h, tsp, clock, cardId } = await setUp(t, dialect);
    const tok = await seedToken(h.app.svc, { cardId });
    tsp.answer(503);
    await ok(h, '/api/network/tokenSuspend.html', { tokenId: tok.tokenId });
    const start = clock.now;
    assert.equal(await metric(h, 'cardprogram_tsp_calls_pending'), 1);
    assert.equal(await metric(h, 'cardprogram_tsp_calls_failed'), 0);
    clock.now += 90_000;
    assert.equal(await metric(h, 'cardprogram_tsp_calls_oldest_seconds'), 90);
    let tries = 0;
    while (clock.now < start + TSP_CALL_MAX_AGE_MS + 3_600_000) {
      await flushTsp(h.app.svc);
      const [call] = await callsOf(h, tok.tokenId);
      if (call?.status !== 'pending') break;
      tries++;
      clock.now = Number(call.next_at);
    }
    const [call] = await callsOf(h, tok.tokenId);
    assert.equal(call?.status, 'failed');
    assert.ok(tries > 5 && tries < 200, `tries: ${tries}`);
    const attempts = await attemptsOf(h, call?.id as string);
    assert.equal(attempts.length, call?.attempts);
    assert.equal(attempts.at(-1)?.outcome, 'failed');
    assert.equal(await metric(h, 'cardprogram_tsp_calls_pending'), 0);
    assert.equal(await metric(h, 'cardprogram_tsp_calls_oldest_seconds'), 0);
    assert.equal(await metric(h, 'cardprogram_tsp_calls_failed'), 1);
    // The TSP is back: the token's later change is not held back by the failed one.
    tsp.answer(200);
    clock.now += 1;
    await ok(h, '/api/network/tokenResume.html', { tokenId: tok.tokenId });
    await flushTsp(h.app.svc);
    assert.deepEqual(
      tsp.taken().map((c) => c.action),
      ['resume'],
    );
  });

  it('without CARDPROGRAM_TSP_URL the calls wait (the sandbox): nothing sent, nothing tried', async (t) => {
    const { h, tsp, cardId } = await setUp(t, dialect, { tsp: false });
    const tok = await seedToken(h.app.svc, { cardId });
    await ok(h, '/api/network/tokenSuspend.html', { tokenId: tok.tokenId });
    assert.equal(await sendTspCalls(h.app.svc), 0);
    const [call] = await callsOf(h, tok.tokenId);
    assert.equal(call?.status, 'pending');
    assert.equal(call?.attempts, 0);
    assert.equal(tsp.calls.length, 0);
    // No TSP configured: no gauges of it.
    assert.equal(await metric(h, 'cardprogram_tsp_calls_pending'), undefined);
  });
});
