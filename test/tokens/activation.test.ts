// Step-up by code (decisions §15.2): the TSP asks for a code for one of the methods, the merchant
// delivers it (a sealed token.otp callback), the TSP verifies what the cardholder typed. Right: the
// token active; wrong three times: deleted and the TSP told; expired: not valid, not counted.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { eachDialect } from '../helpers/dialects.js';
import { card, notifyTo } from '../three-ds/helpers/acs.js';
import { delivered, provisionBody, type Tsp, tspService } from './helpers/tsp.js';

/** A pending token (risk 5: require_authentication) and its first code method. */
async function pending(tsp: Tsp, c: { pan: string; expiry: string }) {
  const body = provisionBody(c, { walletRiskScore: 5 });
  const res = await tsp.provision(body);
  assert.equal(res.json.decision, 'require_authentication', res.text);
  const sms = res.json.authenticationMethods.find((m: { type: string }) => m.type === 'otp_sms');
  assert.ok(sms, 'an SMS method');
  return {
    ref: body.tokenReferenceId as string,
    tokenId: res.json.tokenId as string,
    methodId: sms.id as string,
    methods: res.json.authenticationMethods,
  };
}

const wrong = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');

eachDialect('tokens: step-up by activation code (decisions §15.2)', (dialect) => {
  it('right code: a token.otp callback (sealed, the code only as a keyed hash in the token’s rows), valid → the token active, the merchant told', async (t) => {
    const { h, tsp } = await tspService(t, dialect);
    const rx = await notifyTo(t, h);
    const c = await card(h);
    const p = await pending(tsp, c);
    const asked = await tsp.activationCode({ tokenReferenceId: p.ref, methodId: p.methodId });
    assert.equal(asked.status, 200, asked.text);
    assert.equal(asked.json.methodId, p.methodId);
    const otp = await delivered(h, rx, 'token.otp');
    assert.ok(otp.verified);
    const code = String(otp.body.code);
    assert.match(code, /^\d{6}$/);
    assert.deepEqual(
      [otp.body.tokenId, otp.body.cardId, otp.body.holderId, otp.body.method, otp.body.walletProvider, otp.body.expiresAt],
      [p.tokenId, c.cardId, c.holderId, 'otp_sms', 'apple_pay', asked.json.expiresAt],
    );
    assert.equal(Date.parse(otp.body.expiresAt) - Date.parse(otp.body.occurredAt), 10 * 60_000, 'valid 10 minutes');
    const events = await h.db.database.db.selectFrom('callback_events').select('payload').where('type', '=', 'token.otp').execute();
    assert.match(events[0]?.payload ?? '', /^v1\./, 'stored sealed');
    const codeRow = await h.db.database.db.selectFrom('token_activation_codes').selectAll().executeTakeFirstOrThrow();
    assert.equal(codeRow.code_hash.length, 64);
    assert.ok(!JSON.stringify(codeRow).includes(code), 'the code itself is not stored');

    const ok = await tsp.verify({ tokenReferenceId: p.ref, code });
    assert.deepEqual([ok.status, ok.json.valid, ok.json.attemptsLeft], [200, true, 3]);
    const tok = await h.db.database.db.selectFrom('tokens').selectAll().where('id', '=', p.tokenId).executeTakeFirstOrThrow();
    assert.equal(tok.status, 'active');
    const history = await h.db.database.db
      .selectFrom('token_history')
      .selectAll()
      .where('token_id', '=', p.tokenId)
      .orderBy('seq')
      .execute();
    assert.deepEqual(
      history.map((e) => [e.status, e.source]),
      [
        ['pending', 'tsp'],
        ['active', 'service'],
      ],
    );
    const calls = await h.db.database.db.selectFrom('tsp_calls').selectAll().execute();
    assert.equal(calls.length, 0, 'the TSP verified the code itself: nothing to tell it');
    const updated = await delivered(h, rx, 'token.updated', (b) => b.token.status === 'active');
    assert.equal(updated.body.token.tokenId, p.tokenId);
    const again = await tsp.verify({ tokenReferenceId: p.ref, code });
    assert.deepEqual([again.status, again.json.error], [409, 'conflict'], 'the step-up is over');
    assert.match(again.json.detail, /^tokenReferenceId: the token is active/);
  });

  it('three wrong codes: attemptsLeft 2, 1, 0, the token deleted and the TSP told (a delete call queued); a new code does not reset the count', async (t) => {
    const { h, tsp } = await tspService(t, dialect);
    const rx = await notifyTo(t, h);
    const c = await card(h);
    const p = await pending(tsp, c);
    assert.equal((await tsp.activationCode({ tokenReferenceId: p.ref, methodId: p.methodId })).status, 200);
    const first = String((await delivered(h, rx, 'token.otp')).body.code);
    const one = await tsp.verify({ tokenReferenceId: p.ref, code: wrong(first) });
    assert.deepEqual([one.json.valid, one.json.attemptsLeft, one.json.reason], [false, 2, 'wrong']);
    const two = await tsp.verify({ tokenReferenceId: p.ref, code: wrong(first) });
    assert.deepEqual([two.json.valid, two.json.attemptsLeft], [false, 1]);
    const email = p.methods.find((m: { type: string }) => m.type === 'otp_email');
    assert.equal((await tsp.activationCode({ tokenReferenceId: p.ref, methodId: email.id })).status, 200, 'a new code by e-mail');
    const second = String((await delivered(h, rx, 'token.otp', (b) => b.method === 'otp_email')).body.code);
    const three = await tsp.verify({ tokenReferenceId: p.ref, code: first === second ? wrong(second) : first });
    assert.deepEqual([three.json.valid, three.json.attemptsLeft], [false, 0], 'the replaced code is wrong now: the third wrong one');
    const tok = await h.db.database.db.selectFrom('tokens').selectAll().where('id', '=', p.tokenId).executeTakeFirstOrThrow();
    assert.equal(tok.status, 'deleted', 'the third wrong code ends the step-up');
    const calls = await h.db.database.db.selectFrom('tsp_calls').selectAll().execute();
    assert.deepEqual(
      calls.map((call) => [call.token_reference_id, call.action, call.status]),
      [[p.ref, 'delete', 'pending']],
      'the TSP is told',
    );
    const late = await tsp.verify({ tokenReferenceId: p.ref, code: second });
    assert.deepEqual([late.status, late.json.error], [409, 'conflict'], 'the right code after the end changes nothing');
    assert.equal((await tsp.activationCode({ tokenReferenceId: p.ref, methodId: p.methodId })).status, 409);
  });

  it('an expired code is not valid and not counted; none asked yet: no_code; a method not offered, or the app method: 400', async (t) => {
    const { h, tsp, clock } = await tspService(t, dialect);
    const rx = await notifyTo(t, h);
    const c = await card(h);
    const p = await pending(tsp, c);
    const none = await tsp.verify({ tokenReferenceId: p.ref, code: '123456' });
    assert.deepEqual([none.json.valid, none.json.attemptsLeft, none.json.reason], [false, 3, 'no_code']);
    assert.equal((await tsp.activationCode({ tokenReferenceId: p.ref, methodId: p.methodId })).status, 200);
    const code = String((await delivered(h, rx, 'token.otp')).body.code);
    clock.now += 10 * 60_000 + 1;
    const expired = await tsp.verify({ tokenReferenceId: p.ref, code });
    assert.deepEqual([expired.json.valid, expired.json.attemptsLeft, expired.json.reason], [false, 3, 'expired']);
    const unknown = await tsp.activationCode({ tokenReferenceId: p.ref, methodId: '99' });
    assert.deepEqual([unknown.status, unknown.json.error], [400, 'invalid_request']);
    assert.match(unknown.json.detail, /^methodId: /);
    const missing = await tsp.activationCode({ tokenReferenceId: 'DNITHE-nope', methodId: p.methodId });
    assert.deepEqual([missing.status, missing.json.error], [404, 'not_found']);
    // A fresh code after the expiry is right.
    assert.equal((await tsp.activationCode({ tokenReferenceId: p.ref, methodId: p.methodId })).status, 200);
    const fresh = String((await delivered(h, rx, 'token.otp', (b) => b.code !== code)).body.code);
    assert.equal((await tsp.verify({ tokenReferenceId: p.ref, code: fresh })).json.valid, true);
  });
});
