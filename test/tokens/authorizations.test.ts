// Authorizations made with a wallet token (decisions §15.5, issue 45 item 4): the sandbox's
// `tokenId` and the card network link's field 48 subelements 33 (tokenReferenceId) and 34
// (tokenRequestorId), sent by an acquirer built on the published iso_8583 package; one check for
// both (src/tokens/authorization.ts): the card's active token approves, another card's or an
// unknown one is token_unknown, a pending or suspended one token_inactive (2734, the link's 05);
// `allowedWallets` in the controls (2728, the link's 57); tradeQuery's `token`.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { it, type TestContext } from 'node:test';
import { decodeField48, encodeField48, Field48Error } from '../../src/iso8583/field48.js';
import { updateMerchant } from '../../src/merchants/manage.js';
import { runVerb } from '../../src/runner.js';
import { build, type Harness, randomStr } from '../helpers/app.js';
import { fundedCard } from '../helpers/cards.js';
import type { TestDialect } from '../helpers/db.js';
import { eachDialect } from '../helpers/dialects.js';
import { exchange } from '../helpers/iso8583-peer.js';
import { cardSecrets, linkOf } from '../helpers/link.js';
import { noteSecret } from '../helpers/log-audit.js';

interface Provisioned {
  decision: string;
  tokenId: string | null;
  tokenReferenceId: string;
  tokenRequestorId: string;
  token: { status: string } | null;
}

/** A token for the card through the sandbox's TSP; risk 0 approves, 4 to 6 asks for a step-up (pending). */
async function provision(h: Harness, cardId: string, walletProvider = 'apple_pay', walletRiskScore = 0): Promise<Provisioned> {
  const res = await h.call('/sandbox/tokens/provision', {
    cardId,
    walletProvider,
    walletRiskScore,
    device: { type: 'phone', name: 'Ana’s iPhone' },
    randomStr: randomStr(),
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.model as Provisioned;
}

async function tradeQuery(h: Harness, tradeId: string) {
  const res = await h.call('/api/network/tradeQuery.html', { tradeId, randomStr: randomStr() });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.model as {
    authorization: { decision: { approved: boolean; declineReason: string | null } };
    token: { tokenId: string; walletProvider: string; device: { type: string | null; name: string | null } } | null;
  };
}

const authorize = (h: Harness, cardId: string, extra: Record<string, unknown> = {}) =>
  h.call('/sandbox/network/authorize', { cardId, amount: 10, mcc: '5411', channel: 'pos', ...extra, randomStr: randomStr() });

const controls = (h: Harness, target: { cardId: string } | { holderId: string }, c: Record<string, unknown>) =>
  h.call('/api/network/cardControlsUpdate.html', { ...target, controls: c, randomStr: randomStr() });

/** The merchant suspends the token (tokenSuspend: the TSP and the merchant told). */
const suspend = async (h: Harness, tokenId: string) => {
  const res = await h.call('/api/network/tokenSuspend.html', { tokenId, reason: 'phone lost', randomStr: randomStr() });
  assert.equal(res.status, 200, JSON.stringify(res.body));
};

/** The merchant's notify URL set (a step-up's code is a token.otp callback; nothing delivers it here). */
const notifies = (h: Harness, appId: string) =>
  runVerb(h.app.svc, updateMerchant, { input: { appId, notifyUrl: 'http://127.0.0.1:9/hooks' }, actor: 'test' });

async function world(t: TestContext, dialect: TestDialect) {
  const h = await build(t, dialect);
  await notifies(h, h.merchant.appId);
  const a = await fundedCard(h, { topUp: 500 });
  const b = await fundedCard(h, { topUp: 500 });
  return { h, a, b };
}

it('field 48 subelements 33 and 34: decoded and encoded by their formats', () => {
  const golden = '3318DNITHE3812123456783411400100302739203123';
  assert.deepEqual(
    [...decodeField48(golden)],
    [
      ['33', 'DNITHE381212345678'],
      ['34', '40010030273'],
      ['92', '123'],
    ],
  );
  assert.equal(
    encodeField48([
      ['33', 'DNITHE381212345678'],
      ['34', '40010030273'],
      ['92', '123'],
    ]),
    golden,
  );
  for (const [bad, tag] of [
    ['34104001003027', '34'], // 10 digits
    ['34114001003027X', '34'], // not digits
    [`3365${'A'.repeat(65)}`, '33'], // 65 characters
    ['3300', '33'], // empty
    ['3302A\u0001', '33'], // a control character
  ] as const) {
    assert.throws(
      () => decodeField48(bad),
      (e: unknown) => e instanceof Field48Error && e.tag === tag,
      bad,
    );
  }
});

eachDialect('wallet tokens: authorizations in the sandbox (decisions §15.5)', (dialect) => {
  it('the card’s active token approves and tradeQuery shows it; pending, suspended, another card’s and unknown tokens decline 2734', async (t) => {
    const { h, a, b } = await world(t, dialect);
    const active = await provision(h, a.cardId);
    assert.equal(active.decision, 'approve');
    const approved = await authorize(h, a.cardId, { tokenId: active.tokenId });
    assert.equal(approved.status, 200, JSON.stringify(approved.body));
    const shown = await tradeQuery(h, approved.body.model.tradeId);
    assert.deepEqual(shown.token, {
      tokenId: active.tokenId,
      walletProvider: 'apple_pay',
      device: { type: 'phone', name: 'Ana’s iPhone' },
    });
    const plain = await authorize(h, a.cardId);
    assert.equal(plain.status, 200);
    assert.equal((await tradeQuery(h, plain.body.model.tradeId)).token, null, 'without a token');

    const declined = async (label: string, cardId: string, tokenId: string, reason: string) => {
      const res = await authorize(h, cardId, { tokenId });
      assert.equal(res.status, 409, label);
      assert.equal(res.body.code, '2734', `${label}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.detail.declineReason, reason, label);
      return tradeQuery(h, res.body.detail.tradeId);
    };
    const pending = await provision(h, a.cardId, 'google_pay', 5);
    assert.deepEqual([pending.decision, pending.token?.status], ['require_authentication', 'pending']);
    const pendingDecline = await declined('pending', a.cardId, pending.tokenId as string, 'token_inactive');
    assert.equal(pendingDecline.token?.tokenId, pending.tokenId, 'the card’s own token is recorded with its decline');
    assert.equal(pendingDecline.authorization.decision.declineReason, 'token_inactive');

    await suspend(h, active.tokenId as string);
    await declined('suspended', a.cardId, active.tokenId as string, 'token_inactive');

    const other = await provision(h, b.cardId);
    const otherDecline = await declined('another card’s', a.cardId, other.tokenId as string, 'token_unknown');
    assert.equal(otherDecline.token, null, 'another card’s token is not shown with this card’s decline');
    await declined('unknown', a.cardId, 'tok_doesnotexist', 'token_unknown');
    // The other card's own authorization with it still approves.
    assert.equal((await authorize(h, b.cardId, { tokenId: other.tokenId })).status, 200);

    // Another merchant's card and token: its id is unknown here, as any other.
    const m2 = await h.newMerchant();
    const foreign = await fundedCard(h, { topUp: 100, merchant: m2 });
    const res = await h.call(
      '/sandbox/tokens/provision',
      { cardId: foreign.cardId, walletProvider: 'apple_pay', randomStr: randomStr() },
      { merchant: m2 },
    );
    assert.equal(res.status, 200, JSON.stringify(res.body));
    await declined('another merchant’s', a.cardId, res.body.model.tokenId, 'token_unknown');
    const notYours = await h.call('/sandbox/tokens/provision', {
      cardId: foreign.cardId,
      walletProvider: 'apple_pay',
      randomStr: randomStr(),
    });
    assert.equal(notYours.body.code, '2648', 'another merchant’s card is not found');
  });

  it('allowedWallets: a token of a wallet not listed is 2728 wallet_not_allowed; a payment without a token is not concerned; validation', async (t) => {
    const { h, a } = await world(t, dialect);
    const apple = await provision(h, a.cardId, 'apple_pay');
    const google = await provision(h, a.cardId, 'google_pay');
    assert.equal((await controls(h, { cardId: a.cardId }, { allowedWallets: ['google_pay', 'card_on_file'] })).status, 200);
    const q = await h.call('/api/network/cardQuery.html', { cardId: a.cardId, randomStr: randomStr() });
    assert.deepEqual(q.body.model.controls, { allowedWallets: ['card_on_file', 'google_pay'] }, 'stored sorted');
    const refused = await authorize(h, a.cardId, { tokenId: apple.tokenId });
    assert.deepEqual([refused.status, refused.body.code, refused.body.detail?.declineReason], [409, '2728', 'wallet_not_allowed']);
    assert.match(refused.body.msg, /wallet apple_pay is not allowed on this card/);
    assert.equal((await authorize(h, a.cardId, { tokenId: google.tokenId })).status, 200);
    assert.equal((await authorize(h, a.cardId)).status, 200, 'the card’s own number: not a wallet payment');

    // The cardholder's rule applies where the card sets none; the card's wins.
    assert.equal((await controls(h, { cardId: a.cardId }, {})).status, 200);
    assert.equal((await controls(h, { holderId: a.holderId }, { allowedWallets: ['samsung_pay'] })).status, 200);
    const byHolder = await authorize(h, a.cardId, { tokenId: google.tokenId });
    assert.equal(byHolder.body.detail?.declineReason, 'wallet_not_allowed');
    assert.match(byHolder.body.msg, /by the cardholder’s controls/);
    assert.equal((await controls(h, { cardId: a.cardId }, { allowedWallets: ['google_pay'] })).status, 200);
    assert.equal((await authorize(h, a.cardId, { tokenId: google.tokenId })).status, 200, 'the card’s rule wins');

    for (const bad of [['paypal'], [], ['apple_pay', 'apple_pay'], 'apple_pay']) {
      const res = await controls(h, { cardId: a.cardId }, { allowedWallets: bad });
      assert.deepEqual([res.status, res.body.code], [400, '1002'], JSON.stringify(bad));
      assert.match(res.body.msg, /allowedWallets/, JSON.stringify(res.body));
    }
  });

  it('a token payment needs neither a CVV2 nor 3-D Secure: CARDPROGRAM_3DS_REQUIRED declines the card’s number, not its token', async (t) => {
    const { h, a } = await world(t, dialect);
    const token = await provision(h, a.cardId);
    h.app.svc.config.threeDs = { ...h.app.svc.config.threeDs, required: true };
    const online = { amount: 45, channel: 'ecommerce', mcc: '5732' };
    const bare = await authorize(h, a.cardId, online);
    assert.equal(bare.body.code, '2733', JSON.stringify(bare.body));
    const tokenized = await authorize(h, a.cardId, { ...online, tokenId: token.tokenId });
    assert.equal(tokenized.status, 200, JSON.stringify(tokenized.body));
  });
});

eachDialect('wallet tokens: authorizations on the card network link, field 48 subelements 33/34 (decisions §15.5)', (dialect) => {
  it('an acquirer (iso_8583 package): 00 with the card’s active token, 05 suspended or unknown or another requestor, 57 a wallet not allowed, 30 a malformed 34', async (t) => {
    const { h, a, b } = await world(t, dialect);
    const link = await linkOf(t, h);
    const socket = connect(link.port, '127.0.0.1');
    t.after(() => socket.destroy());
    await new Promise((resolve) => socket.once('connect', resolve));
    const secrets = await cardSecrets(h, a.cardId);
    const token = await provision(h, a.cardId, 'google_pay');
    const otherCards = await provision(h, b.cardId);
    let stan = 450_000;
    /** A contactless purchase with the phone (field 22 071), or in-app e-commerce without a CVV2 (812). */
    const pay = (minor: number, field48: string | null, entry = '071') => {
      stan += 1;
      noteSecret('pan', secrets.pan);
      return exchange(socket, {
        0: '0100',
        2: secrets.pan,
        3: '000000',
        4: String(minor).padStart(12, '0'),
        7: '1127120000',
        11: String(stan),
        12: '120000',
        13: '1127',
        14: secrets.expiry,
        18: '5411',
        22: entry,
        32: '987654',
        37: `TOK${stan}`.padEnd(12, '0'),
        41: 'TERM0001',
        42: 'ACCEPTOR0000001',
        43: 'Corner Grocery           Berlin       DE',
        ...(field48 === null ? {} : { 48: field48 }),
        49: '978',
      });
    };
    const sub = (ref: string, requestor?: string) =>
      `33${String(ref.length).padStart(2, '0')}${ref}${requestor === undefined ? '' : `3411${requestor}`}`;
    const lastAuthorization = () =>
      h.db.database.db
        .selectFrom('authorizations')
        .select(['id', 'approved', 'decline_reason', 'token_id'])
        .where('card_id', '=', a.cardId)
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .executeTakeFirstOrThrow();

    const ok = await pay(1250, sub(token.tokenReferenceId, token.tokenRequestorId));
    assert.deepEqual([ok['0'], ok['39']], ['0110', '00'], JSON.stringify(ok));
    const approved = await lastAuthorization();
    assert.equal(approved.token_id, token.tokenId);
    assert.deepEqual((await tradeQuery(h, approved.id)).token, {
      tokenId: token.tokenId,
      walletProvider: 'google_pay',
      device: { type: 'phone', name: 'Ana’s iPhone' },
    });
    // 34 is optional; in-app e-commerce with the token needs no CVV2 (the same without a token: 05).
    assert.equal((await pay(300, sub(token.tokenReferenceId), '812'))['39'], '00', 'token, no CVV2, e-commerce');
    assert.equal((await pay(300, null, '812'))['39'], '05', 'the card’s number without a CVV2');
    assert.equal((await lastAuthorization()).decline_reason, 'card_verification_missing');

    const declined = async (label: string, field48: string, code: string, reason: string) => {
      const got = await pay(100, field48);
      assert.equal(got['39'], code, label);
      const row = await lastAuthorization();
      assert.deepEqual([row.approved, row.decline_reason], [0, reason], label);
      return row;
    };
    await declined('another requestor', sub(token.tokenReferenceId, '99999999999'), '05', 'token_unknown');
    await declined('unknown', sub('NO-SUCH-TOKEN'), '05', 'token_unknown');
    const foreign = await declined('another card’s', sub(otherCards.tokenReferenceId, otherCards.tokenRequestorId), '05', 'token_unknown');
    assert.equal(foreign.token_id, null);
    assert.equal((await controls(h, { cardId: a.cardId }, { allowedWallets: ['apple_pay'] })).status, 200);
    await declined('a wallet not allowed', sub(token.tokenReferenceId), '57', 'wallet_not_allowed');
    assert.equal((await controls(h, { cardId: a.cardId }, {})).status, 200);
    await suspend(h, token.tokenId as string);
    const inactive = await declined('suspended', sub(token.tokenReferenceId), '05', 'token_inactive');
    assert.equal(inactive.token_id, token.tokenId);

    // A 34 that is not 11 digits breaks field 48's format: 30, nothing decided.
    const count = async () =>
      (await h.db.database.db.selectFrom('authorizations').select('id').where('card_id', '=', a.cardId).execute()).length;
    const before = await count();
    assert.equal((await pay(100, `${sub(token.tokenReferenceId)}3403123`))['39'], '30');
    assert.equal(await count(), before);
  });
});
