// Provisioning (decisions §15.2–15.3, §15.7) driven by a TSP written from the text: every path of
// the decision, the repeat of a requestId, the per-card limits, and what is (not) stored.
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { it } from 'node:test';
import { randomStr } from '../helpers/app.js';
import { eachDialect } from '../helpers/dialects.js';
import { receiver } from '../helpers/receiver.js';
import { card, notifyTo } from '../three-ds/helpers/acs.js';
import { delivered, provisionBody, tokenSettings, tspService } from './helpers/tsp.js';

const answer =
  (body: unknown, status = 200) =>
  (res: ServerResponse) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(typeof body === 'string' ? body : JSON.stringify(body));

/** The card's next expiry that is not its own (a mismatch). */
const otherExpiry = (expiry: string) =>
  `${expiry.slice(0, 2)}${expiry.slice(2) === '12' ? '11' : String(Number(expiry.slice(2)) + 1).padStart(2, '0')}`;

eachDialect('tokens: provisioning by the TSP (decisions §15.3)', (dialect) => {
  it('green: approve with the token active, its history and a token.updated callback; a repeated requestId gets the same answer and writes nothing', async (t) => {
    const { h, tsp } = await tspService(t, dialect);
    const rx = await notifyTo(t, h);
    const c = await card(h);
    const body = provisionBody(c, { cvv2: undefined });
    const first = await tsp.provision(body);
    assert.equal(first.status, 200, first.text);
    assert.equal(first.json.decision, 'approve');
    assert.match(String(first.json.tokenId), /^tok_[0-9a-z]{24}$/);
    assert.equal(first.json.reason, undefined, 'no reason when approved');
    assert.equal(first.json.authenticationMethods, undefined);
    const again = await tsp.provision(body);
    assert.deepEqual([again.status, again.json], [200, first.json], 'the same answer');
    const tokens = await h.db.database.db.selectFrom('tokens').selectAll().execute();
    assert.equal(tokens.length, 1, 'one token');
    const tok = tokens[0];
    assert.deepEqual(
      [tok?.status, tok?.card_id, tok?.wallet_provider, tok?.device_type, tok?.device_name, tok?.token_reference_id],
      ['active', c.cardId, 'apple_pay', 'phone', 'Anna’s iPhone', body.tokenReferenceId],
    );
    const rows =
      JSON.stringify(await h.db.database.db.selectFrom('token_provision_requests').selectAll().execute()) + JSON.stringify(tokens);
    assert.ok(!rows.includes(c.pan), 'the PAN is stored nowhere');
    assert.ok(!rows.includes('192.0.2.10'), 'nor the device’s IP address');
    const updated = await delivered(h, rx, 'token.updated');
    assert.ok(updated.verified);
    assert.deepEqual(
      [
        updated.body.token.tokenId,
        updated.body.token.status,
        updated.body.token.cardId,
        updated.body.token.device,
        updated.body.token.history.length,
      ],
      [first.json.tokenId, 'active', c.cardId, { type: 'phone', name: 'Anna’s iPhone' }, 1],
    );
    assert.deepEqual([updated.body.token.history[0].status, updated.body.token.history[0].source], ['active', 'tsp']);
    assert.ok(!updated.raw.includes(c.pan), 'the callback has no PAN');

    const other = await tsp.provision({ ...provisionBody(c), requestId: body.requestId });
    assert.deepEqual([other.status, other.json.error], [409, 'conflict'], 'a requestId used for another token: refused');
    assert.match(other.json.detail, /^requestId: /);
    const sameRef = await tsp.provision({ ...provisionBody(c), tokenReferenceId: body.tokenReferenceId });
    assert.deepEqual([sameRef.status, sameRef.json.error], [409, 'conflict'], 'a tokenReferenceId provisioned already');
    assert.match(sameRef.json.detail, /^tokenReferenceId: /);
  });

  it('red: an unknown card, an expiry or CVV2 mismatch (counted: 5 freeze the card), a frozen or closed card, a cardholder not approved', async (t) => {
    const { h, tsp, clock } = await tspService(t, dialect);
    const c = await card(h);
    const unknown = await tsp.provision(provisionBody({ pan: '4242420000000000', expiry: c.expiry }));
    assert.deepEqual([unknown.status, unknown.json], [200, { decision: 'decline', reason: 'card_verification' }]);

    const expiry = await tsp.provision(provisionBody({ pan: c.pan, expiry: otherExpiry(c.expiry) }));
    assert.deepEqual(expiry.json, { decision: 'decline', reason: 'card_verification' });
    const details = await h.call('/sandbox/network/cardDetails', { cardId: c.cardId, randomStr: randomStr() });
    const cvv = String(details.body.model.cvv);
    const wrongCvv = String((Number(cvv) + 1) % 1000).padStart(3, '0');
    const cvvMismatch = await tsp.provision(provisionBody(c, { cvv2: wrongCvv }));
    assert.deepEqual(cvvMismatch.json, { decision: 'decline', reason: 'card_verification' });
    const counted = await h.db.database.db
      .selectFrom('cards')
      .select('verification_failures')
      .where('id', '=', c.cardId)
      .executeTakeFirstOrThrow();
    assert.equal(JSON.parse(counted.verification_failures ?? '[]').length, 2, 'both mismatches counted (§12.13)');
    // A day later (its third request within 24 hours would ask a step-up), the count still stored.
    clock.now += 24 * 3_600_000 + 1000;
    const rightCvv = await tsp.provision(provisionBody(c, { cvv2: cvv }));
    assert.equal(rightCvv.json.decision, 'approve', 'the right CVV2 and expiry: approved');
    const reset = await h.db.database.db
      .selectFrom('cards')
      .select('verification_failures')
      .where('id', '=', c.cardId)
      .executeTakeFirstOrThrow();
    assert.equal(reset.verification_failures, null, 'an approval with both resets the count');
    for (let i = 0; i < 5; i++) await tsp.provision(provisionBody({ pan: c.pan, expiry: otherExpiry(c.expiry) }));
    const frozen = await h.db.database.db
      .selectFrom('cards')
      .select(['status', 'status_source'])
      .where('id', '=', c.cardId)
      .executeTakeFirstOrThrow();
    assert.deepEqual([frozen.status, frozen.status_source], ['frozen', 'security'], '5 mismatches within 24 hours freeze the card');
    assert.deepEqual((await tsp.provision(provisionBody(c))).json, { decision: 'decline', reason: 'card_frozen' });

    const d = await card(h);
    const close = await h.call('/api/network/cardClose.html', { cardId: d.cardId, randomStr: randomStr() });
    assert.equal(close.status, 200, JSON.stringify(close.body));
    assert.deepEqual((await tsp.provision(provisionBody(d))).json, { decision: 'decline', reason: 'card_closed' });

    const e = await card(h);
    await h.db.database.db.updateTable('cardholders').set({ audit_status: 3 }).where('id', '=', e.holderId).execute();
    assert.deepEqual((await tsp.provision(provisionBody(e))).json, { decision: 'decline', reason: 'holder_not_approved' });
    assert.equal((await h.db.database.db.selectFrom('tokens').selectAll().execute()).length, 1, 'a decline makes no token');
    const metrics = await h.app.svc.metrics.text();
    assert.match(metrics, /cardprogram_token_provisionings_total\{decision="decline",reason="card_unknown"\} 1\b/);
    assert.match(metrics, /cardprogram_token_provisionings_total\{decision="decline",reason="card_verification"\} [1-9]/);
  });

  it('built-in rules: risk ≥ 7 declines, ≥ 4 or a reason code asks a step-up; the third request of a card within 24 hours too, whatever the first two became', async (t) => {
    const { h, tsp, clock } = await tspService(t, dialect);
    await notifyTo(t, h);
    const a = await card(h);
    assert.deepEqual((await tsp.provision(provisionBody(a, { walletRiskScore: 7 }))).json, { decision: 'decline', reason: 'wallet_risk' });
    const four = await tsp.provision(provisionBody(a, { walletRiskScore: 4 }));
    assert.deepEqual([four.json.decision, four.json.reason], ['require_authentication', 'wallet_risk']);
    assert.match(String(four.json.tokenId), /^tok_/);
    assert.deepEqual(
      four.json.authenticationMethods.map((m: { type: string }) => m.type),
      ['otp_sms', 'otp_email'],
      'default: SMS (the holder has a mobile number) and e-mail',
    );
    for (const m of four.json.authenticationMethods) {
      assert.match(m.value, /•••/, 'masked');
      assert.match(m.id, /^[A-Za-z0-9_-]{1,16}$/);
    }
    const pending = await h.db.database.db
      .selectFrom('tokens')
      .select('status')
      .where('id', '=', four.json.tokenId)
      .executeTakeFirstOrThrow();
    assert.equal(pending.status, 'pending');

    const b = await card(h);
    const codes = await tsp.provision(provisionBody(b, { walletRiskScore: 0, walletReasonCodes: ['DEVICE_RECENTLY_RESET'] }));
    assert.deepEqual([codes.json.decision, codes.json.reason], ['require_authentication', 'wallet_reason_codes']);
    assert.equal((await tsp.provision(provisionBody(b, { walletRiskScore: 0 }))).json.decision, 'approve', 'the second request');
    const third = await tsp.provision(provisionBody(b, { walletRiskScore: 0 }));
    assert.deepEqual(
      [third.json.decision, third.json.reason],
      ['require_authentication', 'repeated_requests'],
      'the third within 24 hours',
    );
    clock.now += 24 * 3_600_000 + 1000;
    assert.equal((await tsp.provision(provisionBody(b, { walletRiskScore: 0 }))).json.decision, 'approve', 'a day later: counted afresh');
  });

  it('per-card limits: CARDPROGRAM_TOKENS_PER_CARD live tokens, 20 provisioning requests a day (§15.7)', async (t) => {
    const { h, tsp, clock } = await tspService(t, dialect, { perCard: 2 });
    const c = await card(h);
    assert.equal((await tsp.provision(provisionBody(c))).json.decision, 'approve');
    assert.equal((await tsp.provision(provisionBody(c))).json.decision, 'approve');
    clock.now += 24 * 3_600_000 + 1000;
    assert.deepEqual((await tsp.provision(provisionBody(c))).json, { decision: 'decline', reason: 'too_many_tokens' }, 'two live tokens');

    const d = await card(h);
    for (let i = 0; i < 20; i++) {
      const r = await tsp.provision(provisionBody({ pan: d.pan, expiry: '0101' }));
      // The fifth mismatch freezes the card (§12.13); a frozen card's data is no longer compared.
      assert.equal(r.json.reason, i < 5 ? 'card_verification' : 'card_frozen');
    }
    assert.deepEqual(
      (await tsp.provision(provisionBody(d))).json,
      { decision: 'decline', reason: 'too_many_requests' },
      'the 21st within 24 hours, before any card data is compared',
    );
    const failures = await h.db.database.db
      .selectFrom('cards')
      .select('verification_failures')
      .where('id', '=', d.cardId)
      .executeTakeFirstOrThrow();
    assert.equal(JSON.parse(failures.verification_failures ?? '[]').length, 5, '5 counted: the card frozen, nothing compared after');
  });

  it('the merchant’s token decision endpoint: approve, decline, require_authentication as it answers; a signed token.decision without the PAN; no answer in 500 ms → require_authentication', async (t) => {
    const { h, tsp } = await tspService(t, dialect);
    await notifyTo(t, h);
    const endpoint = await receiver(t, h.merchant.webhookSecret);
    await tokenSettings(h, { decisionUrl: endpoint.url });
    const c = await card(h);
    endpoint.respond(answer({ decision: 'approve' }));
    const approved = await tsp.provision(provisionBody(c, { walletRiskScore: 9 }));
    assert.deepEqual(
      [approved.json.decision, approved.json.reason],
      ['approve', undefined],
      'the endpoint decides, not the built-in rules',
    );
    const asked = endpoint.received[0];
    assert.ok(asked?.verified, 'signed as callbacks are');
    assert.deepEqual(
      [asked?.body.type, asked?.body.cardId, asked?.body.holderId, asked?.body.walletProvider, asked?.body.walletRiskScore],
      ['token.decision', c.cardId, c.holderId, 'apple_pay', 9],
    );
    assert.ok(!asked?.raw.includes(c.pan), 'never the card number');

    endpoint.respond(answer({ decision: 'decline' }));
    assert.deepEqual((await tsp.provision(provisionBody(c))).json, { decision: 'decline', reason: 'merchant_declined' });
    endpoint.respond(answer({ decision: 'require_authentication' }));
    const stepUp = await tsp.provision(provisionBody(c));
    assert.deepEqual([stepUp.json.decision, stepUp.json.reason], ['require_authentication', 'merchant']);

    endpoint.respond(() => undefined);
    const started = Date.now();
    const late = await tsp.provision(provisionBody(c));
    assert.deepEqual([late.json.decision, late.json.reason], ['require_authentication', 'merchant_no_answer']);
    assert.ok(Date.now() - started < 1000, 'answered within 1 s');
    endpoint.respond(answer('not json'));
    assert.equal((await tsp.provision(provisionBody(c))).json.reason, 'merchant_no_answer', 'an answer that cannot be read');

    const asks = endpoint.received.length;
    const d = await card(h);
    assert.deepEqual((await tsp.provision(provisionBody({ pan: d.pan, expiry: '0101' }))).json.reason, 'card_verification');
    assert.equal(endpoint.received.length, asks, 'a request the card’s checks refuse is not asked');
  });

  it('methods from the merchant’s settings; app only; none usable (no notify URL for codes) → decline', async (t) => {
    const { h, tsp } = await tspService(t, dialect);
    const c = await card(h);
    const noUrl = await tsp.provision(provisionBody(c, { walletRiskScore: 5 }));
    assert.deepEqual(noUrl.json, { decision: 'decline', reason: 'no_authentication_method' }, 'codes cannot be delivered');
    await tokenSettings(h, { methods: ['app'] });
    const app = await tsp.provision(provisionBody(c, { walletRiskScore: 5 }));
    assert.equal(app.json.decision, 'require_authentication');
    assert.deepEqual(
      app.json.authenticationMethods.map((m: { type: string }) => m.type),
      ['app'],
    );
  });
});
