// Wallet tokens attacked as an outsider would (issue 45, decisions §15.7): each test here is a
// finding that held before its fix, or a probe that held, through the real app (the TSP's requests
// over HTTP to the TSP endpoint's listener, the merchant's signed operations), on SQLite and
// PostgreSQL (the races matter on PostgreSQL; SQLite's writer is one at a time).
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { randomStr } from '../helpers/app.js';
import { eachDialect } from '../helpers/dialects.js';
import { card, notifyTo } from '../three-ds/helpers/acs.js';
import { delivered, provisionBody, type Tsp, tspService } from '../tokens/helpers/tsp.js';

/** The card's next expiry that is not its own (a mismatch). */
const otherExpiry = (expiry: string) =>
  `${expiry.slice(0, 2)}${expiry.slice(2) === '12' ? '11' : String(Number(expiry.slice(2)) + 1).padStart(2, '0')}`;
const wrongCode = (code: string, k = 1) => String((Number(code) + k) % 1_000_000).padStart(6, '0');

/** A pending token (risk 5: require_authentication) and its SMS method. */
async function pending(tsp: Tsp, c: { pan: string; expiry: string }) {
  const body = provisionBody(c, { walletRiskScore: 5 });
  const res = await tsp.provision(body);
  assert.equal(res.json.decision, 'require_authentication', res.text);
  const sms = res.json.authenticationMethods.find((m: { type: string }) => m.type === 'otp_sms');
  return { ref: body.tokenReferenceId as string, tokenId: res.json.tokenId as string, methodId: sms.id as string };
}

eachDialect('wallet tokens attacked: provisioning', (dialect) => {
  // Finding 1 (medium): a repeat of a requestId was matched by its tokenReferenceId alone: the same
  // requestId and tokenReferenceId with another card's number got the first card's answer (its
  // tokenId, its cardholder's masked phone and e-mail), without any check of the number presented.
  it('a requestId repeated with another body (another card’s number, another CVV2) is a 409 that tells nothing of the first answer', async (t) => {
    const { h, tsp } = await tspService(t, dialect);
    await notifyTo(t, h);
    const victim = await card(h);
    const mine = await card(h);
    const body = provisionBody(victim, { walletRiskScore: 5 });
    const first = await tsp.provision(body);
    assert.equal(first.json.decision, 'require_authentication', first.text);
    const other = await tsp.provision({ ...body, accountNumber: mine.pan, expiry: mine.expiry });
    assert.deepEqual([other.status, other.json.error], [409, 'conflict'], other.text);
    assert.match(other.json.detail, /^requestId: /);
    assert.ok(!other.text.includes(first.json.tokenId), 'not the other card’s token');
    assert.ok(!other.text.includes('•••'), 'nor its cardholder’s masked addresses');
    const cvv = await tsp.provision({ ...body, cvv2: '000' });
    assert.deepEqual([cvv.status, cvv.json.error], [409, 'conflict'], 'another CVV2 is another request');
    const same = await tsp.provision(body);
    assert.deepEqual([same.status, same.json], [200, first.json], 'the very same request still gets the same answer');
  });

  // Finding 2 (medium): the card's data was compared before its state, so once 5 mismatches had
  // frozen the card (§12.13, to stop the guessing) every further guess was still answered right or
  // wrong: `card_frozen` for the right CVV2 and expiry, `card_verification` for a wrong one.
  it('a frozen or closed card is declined for its state whatever data is presented: no CVV2 or expiry oracle, nothing more counted', async (t) => {
    const { h, tsp } = await tspService(t, dialect);
    const c = await card(h);
    const details = await h.call('/sandbox/network/cardDetails', { cardId: c.cardId, randomStr: randomStr() });
    const cvv = String(details.body.model.cvv);
    const badCvv = String((Number(cvv) + 1) % 1000).padStart(3, '0');
    for (let i = 0; i < 5; i++) {
      const res = await tsp.provision(provisionBody(c, { expiry: otherExpiry(c.expiry) }));
      assert.deepEqual(res.json, { decision: 'decline', reason: 'card_verification' });
    }
    const frozen = await h.db.database.db.selectFrom('cards').selectAll().where('id', '=', c.cardId).executeTakeFirstOrThrow();
    assert.equal(frozen.status, 'frozen', '5 mismatches freeze the card');
    const right = await tsp.provision(provisionBody(c, { cvv2: cvv }));
    const wrongCvv = await tsp.provision(provisionBody(c, { cvv2: badCvv }));
    const wrongExpiry = await tsp.provision(provisionBody(c, { expiry: otherExpiry(c.expiry), cvv2: cvv }));
    assert.deepEqual(
      [right.json, wrongCvv.json, wrongExpiry.json],
      Array(3).fill({ decision: 'decline', reason: 'card_frozen' }),
      'the same answer, right data or wrong',
    );
    const after = await h.db.database.db.selectFrom('cards').selectAll().where('id', '=', c.cardId).executeTakeFirstOrThrow();
    assert.equal(JSON.parse(after.verification_failures ?? '[]').length, 5, 'a frozen card’s data is not compared, so not counted');
  });

  // Finding 6 (medium): an unknown number was answered `card_unknown` and a card's number with a
  // wrong expiry `card_verification`: one request per number told an enumerator which numbers are
  // cards (then 60 expiries and the CVV2 to guess), although §15.3 groups the two.
  it('an unknown number is answered exactly as a card’s number with a wrong expiry or CVV2; the record keeps card_unknown', async (t) => {
    const { h, tsp } = await tspService(t, dialect);
    const c = await card(h);
    const unknownBody = provisionBody({ pan: `${c.pan.slice(0, -4)}${c.pan.slice(-4) === '0000' ? '0001' : '0000'}`, expiry: c.expiry });
    const unknown = await tsp.provision(unknownBody);
    const wrongExpiry = await tsp.provision(provisionBody(c, { expiry: otherExpiry(c.expiry) }));
    const wrongCvv = await tsp.provision(provisionBody(c, { cvv2: '0000' }));
    assert.deepEqual([unknown.status, unknown.text], [wrongExpiry.status, wrongExpiry.text]);
    assert.deepEqual([unknown.status, unknown.text], [wrongCvv.status, wrongCvv.text]);
    assert.deepEqual(unknown.json, { decision: 'decline', reason: 'card_verification' });
    const record = await h.db.database.db
      .selectFrom('token_provision_requests')
      .select(['card_id', 'reason'])
      .where('request_id', '=', unknownBody.requestId)
      .executeTakeFirstOrThrow();
    assert.deepEqual([record.card_id, record.reason], [null, 'card_unknown'], 'the operator still sees which it was');
  });

  it('held: concurrent provisioning of one card stays within 20 requests a day and its live tokens (PostgreSQL: 30 at once)', async (t) => {
    const { h, tsp } = await tspService(t, dialect, { perCard: 3 });
    await notifyTo(t, h);
    const c = await card(h);
    const answers = await Promise.all(Array.from({ length: 30 }, () => tsp.provision(provisionBody(c, { walletRiskScore: 0 }))));
    for (const a of answers) assert.equal(a.status, 200, a.text);
    const reasons = answers.map((a) => a.json.reason ?? 'approved');
    assert.equal(reasons.filter((r) => r === 'too_many_requests').length, 10, 'the 21st request of the day and later: declined');
    const live = await h.db.database.db
      .selectFrom('tokens')
      .select('status')
      .where('card_id', '=', c.cardId)
      .where('status', 'in', ['pending', 'active', 'suspended'])
      .execute();
    assert.equal(live.length, 3, 'never more live tokens than the limit');
  });
});

eachDialect('wallet tokens attacked: activation codes', (dialect) => {
  it('held: wrong codes sent at once are counted one after another: 3 evaluated, the token deleted, the right code refused after', async (t) => {
    const { h, tsp } = await tspService(t, dialect);
    const rx = await notifyTo(t, h);
    const c = await card(h);
    const p = await pending(tsp, c);
    assert.equal((await tsp.activationCode({ tokenReferenceId: p.ref, methodId: p.methodId })).status, 200);
    const code = String((await delivered(h, rx, 'token.otp')).body.code);
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => tsp.verify({ tokenReferenceId: p.ref, code: wrongCode(code, i + 1) })),
    );
    const wrong = answers.filter((a) => a.status === 200 && a.json.reason === 'wrong');
    assert.equal(wrong.length, 3, answers.map((a) => a.text).join('\n'));
    assert.ok(
      answers.every((a) => a.status === 200 || (a.status === 409 && a.json.error === 'conflict')),
      'the rest: conflict (deleted)',
    );
    const late = await tsp.verify({ tokenReferenceId: p.ref, code });
    assert.deepEqual([late.status, late.json.error], [409, 'conflict'], 'the right code after the deletion: refused');
    const tok = await h.db.database.db.selectFrom('tokens').select('status').where('id', '=', p.tokenId).executeTakeFirstOrThrow();
    assert.equal(tok.status, 'deleted');
  });

  // Finding 7 (medium): each token allowed 3 wrong codes and nothing counted them across a card's
  // tokens: a guesser holding the card's data provisions again (20 requests a day) and gets 3 more
  // guesses each time, 60 a day on one card.
  it('the wrong codes of all a card’s tokens count together: after 9 within 24 hours no code is compared, the token is deleted', async (t) => {
    const { h, tsp } = await tspService(t, dialect);
    const rx = await notifyTo(t, h);
    const c = await card(h);
    for (let i = 0; i < 3; i++) {
      const p = await pending(tsp, c);
      assert.equal((await tsp.activationCode({ tokenReferenceId: p.ref, methodId: p.methodId })).status, 200);
      const code = String((await delivered(h, rx, 'token.otp', (b) => b.tokenId === p.tokenId)).body.code);
      for (let k = 1; k <= 3; k++)
        assert.equal((await tsp.verify({ tokenReferenceId: p.ref, code: wrongCode(code, k) })).json.reason, 'wrong');
    }
    const p = await pending(tsp, c);
    assert.equal((await tsp.activationCode({ tokenReferenceId: p.ref, methodId: p.methodId })).status, 200);
    const code = String((await delivered(h, rx, 'token.otp', (b) => b.tokenId === p.tokenId)).body.code);
    const res = await tsp.verify({ tokenReferenceId: p.ref, code });
    assert.deepEqual([res.status, res.json.valid, res.json.attemptsLeft, res.json.reason], [200, false, 0, 'too_many_failures'], res.text);
    const tok = await h.db.database.db.selectFrom('tokens').select('status').where('id', '=', p.tokenId).executeTakeFirstOrThrow();
    assert.equal(tok.status, 'deleted', 'the step-up is over');
    const other = await card(h);
    const q = await pending(tsp, other);
    assert.equal((await tsp.activationCode({ tokenReferenceId: q.ref, methodId: q.methodId })).status, 200);
    const right = String((await delivered(h, rx, 'token.otp', (b) => b.tokenId === q.tokenId)).body.code);
    assert.equal((await tsp.verify({ tokenReferenceId: q.ref, code: right })).json.valid, true, 'another card is not concerned');
  });

  // Finding 3 (low): a pending token's step-up finished on a frozen card: the right code made the
  // token active while its card was frozen (the freeze leaves pending tokens pending, "its step-up
  // cannot finish on a frozen card", and tokenActivate refuses it), and the card's unfreeze then had
  // an active token it had never approved; the code was spent.
  it('the right code for a token whose card is frozen is refused (409), not spent and not counted; after the unfreeze it activates', async (t) => {
    const { h, tsp } = await tspService(t, dialect);
    const rx = await notifyTo(t, h);
    const c = await card(h);
    const p = await pending(tsp, c);
    assert.equal((await tsp.activationCode({ tokenReferenceId: p.ref, methodId: p.methodId })).status, 200);
    const code = String((await delivered(h, rx, 'token.otp')).body.code);
    const freeze = await h.call('/api/network/cardFreeze.html', { cardId: c.cardId, reason: 'lost', randomStr: randomStr() });
    assert.equal(freeze.status, 200, JSON.stringify(freeze.body));
    const res = await tsp.verify({ tokenReferenceId: p.ref, code });
    assert.deepEqual([res.status, res.json.error], [409, 'conflict'], res.text);
    assert.match(res.json.detail, /frozen/);
    const tok = await h.db.database.db.selectFrom('tokens').select('status').where('id', '=', p.tokenId).executeTakeFirstOrThrow();
    assert.equal(tok.status, 'pending', 'still pending');
    const unfreeze = await h.call('/api/network/cardUnfreeze.html', { cardId: c.cardId, randomStr: randomStr() });
    assert.equal(unfreeze.status, 200, JSON.stringify(unfreeze.body));
    const again = await tsp.verify({ tokenReferenceId: p.ref, code });
    assert.deepEqual([again.status, again.json.valid, again.json.attemptsLeft], [200, true, 3], again.text);
  });
});

eachDialect('wallet tokens attacked: notifications', (dialect) => {
  const at = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString();

  // Finding 4 (low): the TSP's `resumed` (of a token it had suspended) or `activated` (of a pending
  // token) applied while the token's card was frozen: the token was active on a frozen card, the TSP's
  // wallet offered it, and nothing told the TSP otherwise.
  it('a token the TSP resumes or activates while its card is frozen is taken by the freeze at once: suspended (source card), the TSP told, resumed by the unfreeze', async (t) => {
    const { h, tsp } = await tspService(t, dialect);
    await notifyTo(t, h);
    const c = await card(h);
    const body = provisionBody(c, { walletRiskScore: 0 });
    const green = await tsp.provision(body);
    assert.equal(green.json.decision, 'approve', green.text);
    const ref = body.tokenReferenceId as string;
    const p = await pending(tsp, c);
    assert.equal((await tsp.notify({ tokenReferenceId: ref, event: 'suspended', at: at(1000) })).json.status, 'suspended');
    const freeze = await h.call('/api/network/cardFreeze.html', { cardId: c.cardId, reason: 'lost', randomStr: randomStr() });
    assert.equal(freeze.status, 200, JSON.stringify(freeze.body));
    const resumed = await tsp.notify({ tokenReferenceId: ref, event: 'resumed', at: at(60_000) });
    assert.deepEqual([resumed.status, resumed.json.status], [200, 'suspended'], resumed.text);
    const activated = await tsp.notify({ tokenReferenceId: p.ref, event: 'activated', at: at(60_000) });
    assert.deepEqual([activated.status, activated.json.status], [200, 'suspended'], activated.text);
    const rows = await h.db.database.db.selectFrom('tokens').select(['token_reference_id', 'status', 'suspended_by']).execute();
    for (const r of [ref, p.ref]) {
      const row = rows.find((x) => x.token_reference_id === r);
      assert.deepEqual([row?.status, row?.suspended_by], ['suspended', 'card'], `${r}: held by the card’s freeze`);
    }
    const calls = await h.db.database.db.selectFrom('tsp_calls').select(['token_reference_id', 'action', 'reason']).execute();
    assert.deepEqual(
      calls.map((x) => [x.token_reference_id, x.action, x.reason]).sort(),
      [
        [p.ref, 'suspend', 'card_frozen'],
        [ref, 'suspend', 'card_frozen'],
      ].sort(),
      'the TSP told',
    );
    const unfreeze = await h.call('/api/network/cardUnfreeze.html', { cardId: c.cardId, randomStr: randomStr() });
    assert.equal(unfreeze.status, 200, JSON.stringify(unfreeze.body));
    const after = await h.db.database.db.selectFrom('tokens').select('status').where('card_id', '=', c.cardId).execute();
    assert.deepEqual(
      after.map((x) => x.status),
      ['active', 'active'],
      'the unfreeze brings both back',
    );
  });

  // Finding 5 (medium): a notification older than one that changed nothing was still applied: the
  // TSP suspended a token at T0 and resumed it at T1, the `resumed` arrived first (the token active:
  // nothing to change, and its moment not kept as the token's last), then the late `suspended` of T0
  // suspended it — the issuer's token suspended for good while the TSP's was active.
  it('notifications out of order: a late event older than one that found the token already in its state is stale', async (t) => {
    const { h, tsp } = await tspService(t, dialect);
    await notifyTo(t, h);
    const c = await card(h);
    const body = provisionBody(c, { walletRiskScore: 0 });
    assert.equal((await tsp.provision(body)).json.decision, 'approve');
    const ref = body.tokenReferenceId as string;
    const resumed = await tsp.notify({ tokenReferenceId: ref, event: 'resumed', at: at(2000) });
    assert.deepEqual([resumed.status, resumed.json.status], [200, 'active']);
    const late = await tsp.notify({ tokenReferenceId: ref, event: 'suspended', at: at(1000) });
    assert.deepEqual([late.status, late.json.status], [200, 'active'], 'the TSP’s latest word was active');
    const row = await h.db.database.db
      .selectFrom('tokens')
      .select('status')
      .where('token_reference_id', '=', ref)
      .executeTakeFirstOrThrow();
    assert.equal(row.status, 'active');
    const outcome = await h.db.database.db
      .selectFrom('token_notifications')
      .select('outcome')
      .where('token_reference_id', '=', ref)
      .where('event', '=', 'suspended')
      .executeTakeFirstOrThrow();
    assert.equal(outcome.outcome, 'ignored_stale');
  });

  it('held: deleted is final (activated, resumed after it change nothing); unknown tokens 404; a repeat changes nothing', async (t) => {
    const { h, tsp } = await tspService(t, dialect);
    await notifyTo(t, h);
    const c = await card(h);
    const body = provisionBody(c, { walletRiskScore: 0 });
    assert.equal((await tsp.provision(body)).json.decision, 'approve');
    const ref = body.tokenReferenceId as string;
    const unknown = await tsp.notify({ tokenReferenceId: 'DNITHE0000UNKNOWN', event: 'deleted', at: at(0) });
    assert.deepEqual([unknown.status, unknown.json.error], [404, 'not_found']);
    const repeat = { tokenReferenceId: ref, event: 'suspended', at: at(100) };
    assert.equal((await tsp.notify(repeat)).json.status, 'suspended');
    assert.equal((await tsp.notify({ tokenReferenceId: ref, event: 'resumed', at: at(200) })).json.status, 'active');
    assert.equal((await tsp.notify(repeat)).json.status, 'active', 'a repeat changes nothing');
    const del = { tokenReferenceId: ref, event: 'deleted', at: at(1000) };
    assert.equal((await tsp.notify(del)).json.status, 'deleted');
    for (const event of ['activated', 'resumed', 'created', 'suspended']) {
      const res = await tsp.notify({ tokenReferenceId: ref, event, at: at(5000) });
      assert.deepEqual([res.status, res.json.status], [200, 'deleted'], event);
    }
    assert.equal((await tsp.notify(del)).json.status, 'deleted');
    const merchantResume = await h.call('/api/network/tokenResume.html', {
      tokenId: (await h.db.database.db.selectFrom('tokens').select('id').executeTakeFirstOrThrow()).id,
      randomStr: randomStr(),
    });
    assert.equal(merchantResume.body.code, '2761', 'nor the merchant: deleted is final');
  });
});

eachDialect('wallet tokens attacked: the merchant’s operations', (dialect) => {
  it('held: the token decision endpoint cannot point into the operator’s network (metadata, private, mapped addresses): 1002, nothing stored', async (t) => {
    const { h } = await tspService(t, dialect);
    for (const decisionUrl of [
      'http://169.254.169.254/latest/meta-data/',
      'http://10.0.0.1/decide',
      'http://[::ffff:a9fe:a9fe]/decide',
      'http://[fd00::1]/decide',
      'http://192.168.1.1:8080/decide',
    ]) {
      const res = await h.call('/api/network/tokenSettingsUpdate.html', { decisionUrl, randomStr: randomStr() });
      assert.deepEqual([res.status, res.body.code], [400, '1002'], `${decisionUrl}: ${JSON.stringify(res.body)}`);
    }
    const stored = await h.db.database.db.selectFrom('merchant_token_settings').selectAll().execute();
    assert.equal(stored.length, 0);
  });
});
