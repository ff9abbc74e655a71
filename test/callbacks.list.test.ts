import assert from 'node:assert/strict';
import { it } from 'node:test';
import { emitEvent } from '../src/callbacks/outbox.js';
import { updateMerchant } from '../src/merchants/manage.js';
import { runVerb } from '../src/runner.js';
import { kycBody, randomStr } from './helpers/app.js';
import { fundedCard, ok } from './helpers/cards.js';
import { childDatabaseUrl, runCli } from './helpers/cli.js';
import { buildConsole, consoleGet, login, makeOperator } from './helpers/console.js';
import { eachDialect } from './helpers/dialects.js';

interface Listed {
  eventId: string;
  type: string;
  payload: Record<string, any>;
}

/**
 * Issue 43.15: `cardprogram callbacks list --json` carries each event's payload, so an operator sees
 * what a merchant was told (a dispute's outcome, a KYC decision) without the database, and without
 * what must not be on a screen: a card number (masked, in any text), a one-time code or a secret
 * (redacted, whatever event carries it: the 3-D Secure and wallet-token events will have `code`),
 * a KYC request's e-mail (read on its own page).
 */
eachDialect('cardprogram callbacks list --json: the payloads, redacted', (dialect) => {
  it('trade, authorization.declined (its decline code kept) and kyc.result (its e-mail sealed); a code, an OTP and a card number redacted wherever they are', async (t) => {
    const h = await buildConsole(t, dialect);
    // A URL nobody answers: the events stay pending, which is all a list needs.
    await runVerb(h.app.svc, updateMerchant, { input: { appId: h.merchant.appId, notifyUrl: 'http://127.0.0.1:9/hooks' }, actor: 'test' });
    const { cardId } = await fundedCard(h, { topUp: 20 });
    const declined = await h.call('/sandbox/network/authorize', { cardId, amount: 500, randomStr: randomStr() });
    assert.equal(declined.body.code, '2725');
    const kyc = kycBody({ callbackUrl: 'http://127.0.0.1:9/kyc', email: 'erin@example.com' });
    assert.equal((await h.call('/open/api/kyc/share/information', kyc)).status, 200);
    await ok(h, '/sandbox/kyc/review', { requestNo: kyc.requestNo, kycStatus: 'approved', randomStr: randomStr() });
    // An event as a 3-D Secure or wallet-token one will be: a one-time code, nested too, and a card number where none belongs.
    const pan = '4242424242424242';
    const otpEvent = await h.db.database.withTx((tx) =>
      emitEvent(tx, {
        merchantId: h.merchant.appId,
        type: 'card.status',
        subject: `card:${cardId}`,
        url: 'http://127.0.0.1:9/hooks',
        body: {
          cardId,
          code: '493817',
          challenge: { otp: '112233', Code: '445566', channel: 'sms' },
          note: `for ${pan}`,
          spaced: '4242 4242 4242 4242',
        },
        now: Date.now(),
      }),
    );

    const env = {
      DATABASE_URL: childDatabaseUrl(h.db),
      CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex'),
      CARDPROGRAM_DATA_DIR: h.db.dataDir,
    };
    const res = await runCli(['callbacks', 'list', '--json'], env);
    assert.equal(res.code, 0, res.stderr);
    const listed = JSON.parse(res.stdout) as Listed[];
    const of = (type: string) => listed.filter((e) => e.type === type);

    const topUp = of('trade').find((e) => e.payload.tradeType === 100);
    assert.ok(topUp, res.stdout);
    assert.equal(topUp.payload.eventId, topUp.eventId);
    assert.equal(topUp.payload.amount, 20);
    assert.match(topUp.payload.cardNo, /^\d{6}\*{6}\d{4}$/);

    const decline = of('authorization.declined')[0];
    assert.ok(decline, res.stdout);
    assert.equal(decline.payload.authorization.decision.code, '2725', 'a decline code is not a secret');
    assert.equal(decline.payload.authorization.decision.declineReason, 'insufficient_funds');

    const kycResult = of('kyc.result').find((e) => e.payload.requestNo === kyc.requestNo);
    assert.ok(kycResult, res.stdout);
    assert.equal(kycResult.payload.email, '[sealed: see the KYC request]');
    assert.ok(!res.stdout.includes('erin@example.com'));

    const otp = listed.find((e) => e.eventId === otpEvent);
    assert.ok(otp, res.stdout);
    assert.deepEqual(
      { ...otp.payload, eventId: 'x', occurredAt: 'x', sequence: 0 },
      {
        type: 'card.status',
        cardId,
        code: '[redacted]',
        challenge: { otp: '[redacted]', Code: '[redacted]', channel: 'sms' },
        note: 'for 424242******4242',
        spaced: '424242******4242',
        eventId: 'x',
        sequence: 0,
        occurredAt: 'x',
      },
    );
    for (const secret of [pan, '493817', '112233', '445566']) assert.ok(!res.stdout.includes(secret), secret);

    // The console's callback page shows the same payload, redacted the same way.
    const support = await login(h, await makeOperator(h, 'sam@example.com', 'support'));
    const page = await consoleGet(h, support, `/console/callbacks/${otpEvent}`);
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /424242\*{6}4242/);
    assert.match(page.body, /\[redacted\]/);
    for (const secret of [pan, '493817', '112233', '445566']) assert.ok(!page.body.includes(secret), secret);
  });
});
