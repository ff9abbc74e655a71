// The sandbox's TSP (decisions §15.6): /sandbox/tokens/provision plays the wallet's token service
// provider for one of the merchant's cards and, for a step-up, asks for the first code at once (the
// merchant's token.otp callback, delivered by the service's worker to a receiver that verifies it
// with the public standardwebhooks package); /sandbox/tokens/verify finishes it. Both databases.
import assert from 'node:assert/strict';
import { it, type TestContext } from 'node:test';
import { build, type Harness, randomStr, testConfig } from '../helpers/app.js';
import { fundedCard } from '../helpers/cards.js';
import type { TestDialect } from '../helpers/db.js';
import { eachDialect } from '../helpers/dialects.js';
import { noteSecret } from '../helpers/log-audit.js';
import { eventually } from '../helpers/receiver.js';
import { notifyTo } from '../three-ds/helpers/acs.js';

const METRICS = 'metrics-token-for-the-tokens-test-0123456789';

async function world(t: TestContext, dialect: TestDialect) {
  const defaults = testConfig('');
  const h = await build(t, dialect, { callbacks: { ...defaults.callbacks, worker: true }, metricsToken: METRICS });
  const merchant = await notifyTo(t, h);
  /** The token.otp callbacks of a token, each verified. */
  const codeOf = async (tokenId: string, nth = 1) => {
    const of = () => merchant.received.filter((r) => r.body.type === 'token.otp' && r.body.tokenId === tokenId);
    await eventually(() => of().length >= nth, 10_000, `token.otp #${nth} for ${tokenId}`);
    const got = of()[nth - 1];
    assert.equal(got?.verified, true, 'signed by the program (standardwebhooks)');
    noteSecret('otp', String(got?.body.code));
    return got?.body as Record<string, any>;
  };
  return { h, merchant, codeOf };
}

const provision = (h: Harness, body: Record<string, unknown>, key = randomStr()) =>
  h.call('/sandbox/tokens/provision', { walletProvider: 'apple_pay', ...body, randomStr: key });
const verify = (h: Harness, tokenId: string, code: string) => h.call('/sandbox/tokens/verify', { tokenId, code, randomStr: randomStr() });
const wrong = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');

eachDialect('wallet tokens: the sandbox’s TSP (decisions §15.6)', (dialect) => {
  it('green, yellow by code (a wrong code, then the right one), red; a repeat answers the same and sends no second code', async (t) => {
    const { h, codeOf } = await world(t, dialect);
    const card = await fundedCard(h, { topUp: 50 });

    const green = await provision(h, { cardId: card.cardId, device: { type: 'watch', name: 'Ana’s Watch' } });
    assert.equal(green.status, 200, JSON.stringify(green.body));
    const g = green.body.model;
    assert.deepEqual([g.decision, g.reason, g.codeSent, g.token.status], ['approve', null, null, 'active']);
    assert.match(g.tokenId, /^tok_/);
    assert.match(g.tokenReferenceId, /^SBX-[0-9A-F]{24}$/);
    assert.equal(g.tokenRequestorId, '40010030273');
    assert.deepEqual(g.token.device, { type: 'watch', name: 'Ana’s Watch' });
    assert.equal(g.token.tokenRequestorName, 'Apple Pay');
    assert.deepEqual(
      g.token.history.map((e: { status: string }) => e.status),
      ['active'],
    );

    const key = randomStr();
    const yellow = await provision(h, { cardId: card.cardId, walletProvider: 'google_pay', walletRiskScore: 5 }, key);
    assert.equal(yellow.status, 200, JSON.stringify(yellow.body));
    const y = yellow.body.model;
    assert.deepEqual([y.decision, y.reason, y.token.status], ['require_authentication', 'wallet_risk', 'pending']);
    assert.deepEqual(
      y.authenticationMethods.map((m: { type: string }) => m.type),
      ['otp_sms', 'otp_email'],
    );
    assert.match(y.authenticationMethods[0].value, /^••• ••• \d{4}$/, 'masked');
    assert.equal(y.codeSent.methodId, y.authenticationMethods[0].id);
    assert.equal(y.codeSent.type, 'otp_sms');
    const otp = await codeOf(y.tokenId);
    assert.match(String(otp.code), /^\d{6}$/);
    assert.deepEqual([otp.cardId, otp.holderId, otp.method, otp.walletProvider], [card.cardId, card.holderId, 'otp_sms', 'google_pay']);
    // The same randomStr again: the same answer (a replay), no second code.
    const again = await provision(h, { cardId: card.cardId, walletProvider: 'google_pay', walletRiskScore: 5 }, key);
    assert.deepEqual(again.body.model, y);
    assert.equal(again.headers['x-idempotent-replay'], 'true');
    const changed = await provision(h, { cardId: card.cardId, walletProvider: 'google_pay', walletRiskScore: 6 }, key);
    assert.equal(changed.body.code, '1008', 'the key with another body');

    const bad = await verify(h, y.tokenId, wrong(String(otp.code)));
    assert.deepEqual([bad.status, bad.body.model.valid, bad.body.model.attemptsLeft, bad.body.model.reason], [200, false, 2, 'wrong']);
    const good = await verify(h, y.tokenId, String(otp.code));
    assert.deepEqual([good.body.model.valid, good.body.model.token.status], [true, 'active']);
    assert.deepEqual(
      good.body.model.token.history.map((e: { status: string; source: string }) => `${e.status}/${e.source}`),
      ['pending/tsp', 'active/service'],
    );
    const done = await verify(h, y.tokenId, String(otp.code));
    assert.deepEqual([done.status, done.body.code], [409, '2761'], 'no longer pending');
    assert.equal(
      (await new Promise((r) => setTimeout(r, 100)).then(() => codeOf(y.tokenId))).code,
      otp.code,
      'still one code: the replay sent none',
    );

    // The live tokens by wallet (the gauge read when scraped): one Apple Pay, one Google Pay; none else.
    const scraped = await h.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${METRICS}` } });
    for (const [wallet, n] of [
      ['apple_pay', 1],
      ['google_pay', 1],
      ['samsung_pay', 0],
      ['card_on_file', 0],
    ])
      assert.match(scraped.body, new RegExp(`^cardprogram_tokens_live\\{wallet="${wallet}"\\} ${n}$`, 'm'), String(wallet));

    const red = await provision(h, { cardId: card.cardId, walletRiskScore: 8 });
    assert.deepEqual(
      [red.status, red.body.model.decision, red.body.model.reason, red.body.model.tokenId, red.body.model.token],
      [200, 'decline', 'wallet_risk', null, null],
    );
  });

  it('three wrong codes delete the token; another merchant’s token and card are not found; bad input is 1002', async (t) => {
    const { h, codeOf } = await world(t, dialect);
    const card = await fundedCard(h, { topUp: 50 });
    const made = (await provision(h, { cardId: card.cardId, walletRiskScore: 4 })).body.model;
    const otp = await codeOf(made.tokenId);
    const other = await h.newMerchant();
    const notYours = await h.call(
      '/sandbox/tokens/verify',
      { tokenId: made.tokenId, code: otp.code, randomStr: randomStr() },
      { merchant: other },
    );
    assert.deepEqual([notYours.status, notYours.body.code], [404, '2760']);
    const foreignCard = await h.call(
      '/sandbox/tokens/provision',
      { cardId: card.cardId, walletProvider: 'apple_pay', randomStr: randomStr() },
      { merchant: other },
    );
    assert.deepEqual([foreignCard.status, foreignCard.body.code], [404, '2648']);

    for (const left of [2, 1]) assert.equal((await verify(h, made.tokenId, wrong(String(otp.code)))).body.model.attemptsLeft, left);
    const last = await verify(h, made.tokenId, wrong(String(otp.code)));
    assert.deepEqual([last.body.model.valid, last.body.model.attemptsLeft, last.body.model.token.status], [false, 0, 'deleted']);
    assert.equal((await verify(h, made.tokenId, String(otp.code))).body.code, '2761', 'the right code after the third wrong one: too late');

    for (const body of [
      { cardId: card.cardId, walletProvider: 'paypal' },
      { cardId: card.cardId, walletProvider: 'apple_pay', walletRiskScore: 10 },
      { cardId: card.cardId, walletProvider: 'apple_pay', device: { type: 'toaster' } },
      { cardId: card.cardId, walletProvider: 'apple_pay', device: { type: 'phone', name: 'x'.repeat(65) } },
    ]) {
      const res = await h.call('/sandbox/tokens/provision', { ...body, randomStr: randomStr() });
      assert.deepEqual([res.status, res.body.code], [400, '1002'], JSON.stringify(body));
    }
    const badCode = await verify(h, made.tokenId, '12345');
    assert.deepEqual([badCode.status, badCode.body.code], [400, '1002']);
  });
});
