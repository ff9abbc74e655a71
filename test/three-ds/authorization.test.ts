import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { it } from 'node:test';
import { decode } from '../../src/iso8583/codec.js';
import { decodeField48, encodeField48, Field48Error } from '../../src/iso8583/field48.js';
import { build, type Harness, randomStr } from '../helpers/app.js';
import { balances } from '../helpers/cards.js';
import { eachDialect } from '../helpers/dialects.js';
import { exchange } from '../helpers/iso8583-peer.js';
import { authorizationRequest, cardSecrets, linkOf, Peer } from '../helpers/link.js';
import { noteSecret } from '../helpers/log-audit.js';
import { acs, card } from './helpers/acs.js';
import { areq, send } from './helpers/ds.js';

/**
 * 3-D Secure in the authorization (decisions §14.5, issue 41 item 4): the value an authentication
 * gave, carried on the card network link in field 48 (subelement 42, the ECI; 43, the value) or in
 * the sandbox's authorize (`eci`, `authenticationValue`), checked once, for its card and amount;
 * `1A` for an e-commerce authorization without one when CARDPROGRAM_3DS_REQUIRED is on.
 */

const hexAscii = (s: string) => Buffer.from(s, 'latin1').toString('hex').toUpperCase();

it('field 48 subelements 42 and 43: decoded and encoded by their formats, field by field', () => {
  const value = 'AAABBEg0VhI0VniQEjRWAAAAAAA=';
  // Golden: tag 42, length 02, "05"; tag 43, length 28, the value; tag 92, length 03, a CVV2.
  const golden = `420205${'4328'}${value}9203123`;
  assert.equal(
    encodeField48([
      ['42', '05'],
      ['43', value],
      ['92', '123'],
    ]),
    golden,
  );
  assert.deepEqual(
    [...decodeField48(golden)],
    [
      ['42', '05'],
      ['43', value],
      ['92', '123'],
    ],
  );
  // Unknown tags are read by their length and kept (ignored by the link).
  assert.deepEqual(
    [...decodeField48('0103abc420207')],
    [
      ['01', 'abc'],
      ['42', '07'],
    ],
  );
  for (const [bad, tag] of [
    ['42015', '42'], // an ECI of 1 digit
    ['4202AB', '42'], // not digits
    [`4327${value.slice(1)}`, '43'], // 27 characters
    ['9202 1', '92'],
    ['420205420207', '42'], // given twice
    ['4205', '42'], // ends inside it
    ['4x', null],
  ] as const) {
    assert.throws(
      () => decodeField48(bad),
      (e: unknown) => e instanceof Field48Error && e.tag === tag,
      bad,
    );
  }
  assert.throws(() => encodeField48([['43', 'short']]), Field48Error);
});

/** The value of a frictionless authentication of `amount` EUR for the card, through the sandbox's DS. */
async function authenticated(h: Harness, cardId: string, amount: number): Promise<{ acsTransID: string; eci: string; value: string }> {
  const res = await h.call('/sandbox/3ds/authenticate', { cardId, amount, randomStr: randomStr() });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const ares = res.body.model.ares as { transStatus: string; acsTransID: string; eci: string; authenticationValue: string };
  assert.equal(ares.transStatus, 'Y', JSON.stringify(ares));
  noteSecret('authentication-value', ares.authenticationValue);
  return { acsTransID: ares.acsTransID, eci: ares.eci, value: ares.authenticationValue };
}

async function tradeQuery(h: Harness, tradeId: string) {
  const res = await h.call('/api/network/tradeQuery.html', { tradeId, randomStr: randomStr() });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.model as {
    trade: unknown;
    authorization: { decision: { approved: boolean; declineReason: string | null; code: string | null; message: string } };
    authentication: { acsTransID: string; transStatus: string; eci: string | null; method: string } | null;
  };
}

async function declineOf(h: Harness, cardId: string) {
  const row = await h.db.database.db
    .selectFrom('authorizations')
    .select(['id', 'decline_reason', 'message'])
    .where('card_id', '=', cardId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .executeTakeFirstOrThrow();
  return row;
}

eachDialect('3-D Secure: the authentication value on the card network link (decisions §14.5)', (dialect) => {
  it('the full purchase: authenticate through the ACS, authorize with 42/43 → 00; reuse, another card, a smaller authenticated amount, a forged value, another ECI → 05 authentication_failed', async (t) => {
    const { h, url } = await acs(t, dialect);
    const link = await linkOf(t, h);
    const peer = await Peer.open(t, link.port);
    const a = await card(h);
    const b = await card(h);
    const secretsA = await cardSecrets(h, a.cardId);
    const secretsB = await cardSecrets(h, b.cardId);

    // Authenticated by the DS simulator over the ACS's own port (AReq → ARes Y under the low-value exemption).
    const res = await send(url, areq({ pan: a.pan, expiry: a.expiry, amount: '2500', currency: '978', exponent: '2' }));
    const ares = res.json as { transStatus: string; eci: string; authenticationValue: string; acsTransID: string };
    assert.equal(ares.transStatus, 'Y', res.text);
    assert.equal(ares.eci, '05', 'a Visa card (BIN 424242)');
    noteSecret('authentication-value', ares.authenticationValue);
    const field48 = (eci: string, value: string, cvv?: string) =>
      encodeField48([['42', eci], ['43', value], ...(cvv ? [['92', cvv] as const] : [])]);

    // Golden: the 0100 as the acquirer writes it (e-commerce 812, EUR 25.00), checked on the wire and field by field.
    const request = authorizationRequest(secretsA, { amount: 2500, extra: { 22: '812', 48: field48(ares.eci, ares.authenticationValue) } });
    const f = request.fields;
    const text = [
      '0100',
      '723C440108E18000', // fields 2 3 4 7 11 12 13 14 18 22 32 37 41 42 43 48 49
      `16${secretsA.pan}`,
      '000000',
      '000000002500',
      f.get(7),
      f.get(11),
      '171500',
      '1125',
      secretsA.expiry,
      '5411',
      '812',
      '0812345678',
      'RRN000000001',
      'TERM0001',
      'ACCEPTOR0000001',
      `${'Corner Grocery'.padEnd(25)}${'Berlin'.padEnd(13)}DE`,
      `038420205${'4328'}${ares.authenticationValue}`,
      '978',
    ].join('');
    const { encode } = await import('../../src/iso8583/codec.js');
    assert.equal(hexAscii(encode(request).toString('latin1')), hexAscii(text), 'the request, byte for byte');
    const header = Buffer.alloc(2);
    header.writeUInt16BE(text.length);
    peer.writeRaw(Buffer.concat([header, Buffer.from(text, 'latin1')]));
    const answer = decode(await peer.next());
    assert.equal(answer.mti, '0110');
    assert.deepEqual(
      Object.fromEntries([...answer.fields].filter(([n]) => n !== 38)),
      {
        3: '000000',
        4: '000000002500',
        7: f.get(7),
        11: f.get(11),
        12: '171500',
        13: '1125',
        32: '12345678',
        37: 'RRN000000001',
        39: '00',
        41: 'TERM0001',
        42: 'ACCEPTOR0000001',
        49: '978',
      },
      'approved; no PAN, expiry or field 48 echoed',
    );
    assert.match(answer.fields.get(38) ?? '', /^[A-Z0-9]{6}$/);
    assert.equal((await balances(h, a.cardId)).available, 500 - 25);
    // tradeQuery shows the authentication; the authentication lists the authorization.
    const approvedId = (await declineOf(h, a.cardId)).id;
    assert.deepEqual((await tradeQuery(h, approvedId)).authentication, {
      acsTransID: ares.acsTransID,
      transStatus: 'Y',
      eci: '05',
      method: 'frictionless',
    });
    // The stored copy keeps the ECI, never the value.
    const stored = await h.db.database.db
      .selectFrom('network_messages')
      .select('request')
      .where('trade_id', '=', approvedId)
      .executeTakeFirstOrThrow();
    assert.equal(JSON.parse(stored.request)['48'], '420205');
    assert.ok(!stored.request.includes(ares.authenticationValue));

    const refused = async (label: string, req: ReturnType<typeof authorizationRequest>, cardId: string, words: RegExp) => {
      const got = await peer.ask(req);
      assert.equal(got.fields.get(39), '05', label);
      const decline = await declineOf(h, cardId);
      assert.equal(decline.decline_reason, 'authentication_failed', label);
      assert.match(decline.message, words, label);
    };
    // Reuse: the value was taken by the approval.
    await refused(
      'reuse',
      authorizationRequest(secretsA, { amount: 100, extra: { 22: '812', 48: field48('05', ares.authenticationValue) } }),
      a.cardId,
      /already used/,
    );
    // Another card: a second value of card A presented with card B.
    const second = await authenticated(h, a.cardId, 10);
    await refused(
      'another card',
      authorizationRequest(secretsB, { amount: 500, extra: { 22: '812', 48: field48('05', second.value) } }),
      b.cardId,
      /another card/,
    );
    // A smaller authenticated amount: 10.00 authenticated, 10.01 asked.
    await refused(
      'a smaller authenticated amount',
      authorizationRequest(secretsA, { amount: 1001, extra: { 22: '812', 48: field48('05', second.value) } }),
      a.cardId,
      /authenticated amount/,
    );
    // Forged: 20 random bytes; and the real value with one bit changed.
    const forged = randomBytes(20).toString('base64');
    await refused(
      'forged',
      authorizationRequest(secretsA, { amount: 500, extra: { 22: '812', 48: field48('05', forged) } }),
      a.cardId,
      /not a value/,
    );
    const flipped = Buffer.from(second.value, 'base64');
    flipped[19] = (flipped[19] ?? 0) ^ 1;
    await refused(
      'one bit changed',
      authorizationRequest(secretsA, { amount: 500, extra: { 22: '812', 48: field48('05', flipped.toString('base64')) } }),
      a.cardId,
      /not a value/,
    );
    await refused(
      'another ECI',
      authorizationRequest(secretsA, { amount: 500, extra: { 22: '812', 48: field48('07', second.value) } }),
      a.cardId,
      /ECI/,
    );
    // None of them held anything; the value refused for its amount is still good for its own amount, once.
    assert.equal((await balances(h, a.cardId)).available, 500 - 25);
    const ok = await peer.ask(authorizationRequest(secretsA, { amount: 1000, extra: { 22: '812', 48: field48('05', second.value) } }));
    assert.equal(ok.fields.get(39), '00');
    // Every authorization that carried the value of card A's second authentication is listed with it (not card B's).
    const q = await h.call('/api/network/threeDsQuery.html', { acsTransID: second.acsTransID, randomStr: randomStr() });
    // (the smaller amount's, the other ECI's, the approval: 3; card B's and the forged ones found no authentication of card A).
    assert.equal(q.body.model.tradeIds.length, 3, JSON.stringify(q.body.model.tradeIds));
    // A value that is not 28 characters, or an ECI that is not 2 digits: field 48 unreadable, 30.
    const bad = await peer.ask(authorizationRequest(secretsA, { amount: 100, extra: { 22: '812', 48: `4327${second.value.slice(1)}` } }));
    assert.equal(bad.fields.get(39), '30');
  });

  it('a value stands in for a CVV2 left out; CARDPROGRAM_3DS_REQUIRED: 1A without one (not on file, not 0, not low-value exempt), the exemption counted with the AReqs', async (t) => {
    const { h } = await acs(t, dialect);
    const link = await linkOf(t, h);
    const peer = await Peer.open(t, link.port);
    const a = await card(h);
    const secrets = await cardSecrets(h, a.cardId);
    const noCvv = (amount: number, extra: Record<number, string> = {}) => {
      const m = authorizationRequest(secrets, { amount, extra: { 22: '812', ...extra } });
      m.fields.delete(48);
      for (const [k, v] of Object.entries(extra)) m.fields.set(Number(k), v);
      return m;
    };
    // Off (the sandbox's default): no CVV2 and no value is 05 card_verification_missing, as before.
    assert.equal((await peer.ask(noCvv(4000))).fields.get(39), '05');
    assert.equal((await declineOf(h, a.cardId)).decline_reason, 'card_verification_missing');
    const v = await authenticated(h, a.cardId, 20);
    const withValue = await peer.ask(
      noCvv(2000, {
        48: encodeField48([
          ['42', v.eci],
          ['43', v.value],
        ]),
      }),
    );
    assert.equal(withValue.fields.get(39), '00', 'the value, without a CVV2');

    h.app.svc.config.threeDs = { ...h.app.svc.config.threeDs, required: true };
    const withCvv = (amount: number, entry = '812') => authorizationRequest(secrets, { amount, extra: { 22: entry } });
    const big = await peer.ask(withCvv(4000));
    assert.equal(big.fields.get(39), '1A', 'above 30.00 EUR, a CVV2 is not enough');
    assert.equal((await declineOf(h, a.cardId)).decline_reason, 'authentication_required');
    assert.equal((await peer.ask(noCvv(4000))).fields.get(39), '1A', 'nor nothing');
    assert.equal((await peer.ask(withCvv(4000, '102'))).fields.get(39), '00', 'credential on file is exempt');
    assert.equal((await peer.ask(withCvv(4000, '051'))).fields.get(39), '00', 'chip: not e-commerce');
    const inquiry = authorizationRequest(secrets, { processing: '310000', extra: { 22: '812' } });
    inquiry.fields.delete(4);
    assert.equal((await peer.ask(inquiry)).fields.get(39), '00', 'a balance inquiry (amount 0)');
    // Low value: the AReq above used one exemption (20.00); four more of 15.00 fit (100.00 and 5 in all)… then 1A.
    for (let i = 0; i < 4; i++) assert.equal((await peer.ask(withCvv(1500))).fields.get(39), '00', `exempt ${i + 2}`);
    const state = await h.db.database.db
      .selectFrom('three_ds_card_state')
      .selectAll()
      .where('card_id', '=', a.cardId)
      .executeTakeFirstOrThrow();
    assert.deepEqual([Number(state.exempt_count), Number(state.exempt_eur)], [5, 8000]);
    assert.equal((await peer.ask(withCvv(100))).fields.get(39), '1A', 'the sixth');
    // The AReqs read the same counters: the sixth is not frictionless.
    const sixth = await h.call('/sandbox/3ds/authenticate', { cardId: a.cardId, amount: 1, randomStr: randomStr() });
    assert.notEqual(sixth.body.model.ares.transStatus, 'Y');
  });
});

eachDialect('3-D Secure: the sandbox’s authorize with eci and authenticationValue (decisions §14.5)', (dialect) => {
  it('approved once for its card and amount; reuse, another card, more than authenticated, forged: declined 2732 authentication_failed; 2733 where required', async (t) => {
    const h = await build(t, dialect);
    const a = await card(h);
    const b = await card(h);
    const v = await authenticated(h, a.cardId, 12.5);
    const authorize = (cardId: string, amount: number, extra: Record<string, unknown> = {}) =>
      h.call('/sandbox/network/authorize', { cardId, amount, channel: 'ecommerce', randomStr: randomStr(), ...extra });

    const more = await authorize(a.cardId, 12.51, { eci: v.eci, authenticationValue: v.value });
    assert.equal(more.body.code, '2732', JSON.stringify(more.body));
    assert.equal(more.body.detail.declineReason, 'authentication_failed');
    const other = await authorize(b.cardId, 5, { eci: v.eci, authenticationValue: v.value });
    assert.equal(other.body.code, '2732');
    const forged = await authorize(a.cardId, 5, { authenticationValue: randomBytes(20).toString('base64') });
    assert.equal(forged.body.code, '2732');
    const malformed = await authorize(a.cardId, 5, { eci: '5', authenticationValue: 'not base64' });
    assert.equal(malformed.body.code, '1002', 'the formats are the schema’s');

    const approved = await authorize(a.cardId, 12.5, { eci: v.eci, authenticationValue: v.value });
    assert.equal(approved.body.code, '0', JSON.stringify(approved.body));
    const detail = await tradeQuery(h, approved.body.model.tradeId);
    assert.deepEqual(detail.authentication, { acsTransID: v.acsTransID, transStatus: 'Y', eci: '05', method: 'frictionless' });
    const again = await authorize(a.cardId, 1, { eci: v.eci, authenticationValue: v.value });
    assert.equal(again.body.code, '2732');
    const declined = await tradeQuery(h, again.body.detail.tradeId);
    assert.equal(declined.authorization.decision.declineReason, 'authentication_failed');
    assert.equal(declined.authorization.decision.code, '2732');
    assert.deepEqual(declined.authentication?.acsTransID, v.acsTransID, 'a decline that carried it shows it too');
    // An authorization without one shows none.
    const plain = await authorize(a.cardId, 1);
    assert.equal((await tradeQuery(h, plain.body.model.tradeId)).authentication, null);

    h.app.svc.config.threeDs = { ...h.app.svc.config.threeDs, required: true };
    const required = await authorize(b.cardId, 45);
    assert.equal(required.body.code, '2733', JSON.stringify(required.body));
    assert.equal(required.body.detail.declineReason, 'authentication_required');
    assert.equal((await authorize(b.cardId, 45, { channel: 'pos' })).body.code, '0', 'not e-commerce');
    assert.equal((await authorize(b.cardId, 10)).body.code, '0', 'low value: exempt');
  });
});

eachDialect('3-D Secure: a peer built on the iso_8583 package sends 42/43', (dialect) => {
  it('approved with the value, refused (05) when it comes again', async (t) => {
    const h = await build(t, dialect);
    const a = await card(h);
    const secrets = await cardSecrets(h, a.cardId);
    const v = await authenticated(h, a.cardId, 20);
    const link = await linkOf(t, h);
    const socket = connect(link.port, '127.0.0.1');
    t.after(() => socket.destroy());
    await new Promise((resolve) => socket.once('connect', resolve));
    const common = {
      0: '0100',
      2: secrets.pan,
      3: '000000',
      4: '000000002000',
      7: '1125171500',
      12: '171500',
      13: '1125',
      14: secrets.expiry,
      18: '5732',
      22: '812',
      32: '987654',
      37: 'PEER3DS00001',
      41: 'PEERTERM',
      42: 'PEER ACCEPTOR  ',
      43: 'Elektro Markt            Munich       DE',
      // Written by hand, as the acquirer's spec says: tag n2, length n2, value.
      48: `4202${v.eci}4328${v.value}`,
      49: '978',
    };
    const first = await exchange(socket, { ...common, 11: '433001' });
    assert.deepEqual([first['0'], first['39'], first['11']], ['0110', '00', '433001']);
    const again = await exchange(socket, { ...common, 11: '433002', 4: '000000000100' });
    assert.deepEqual([again['0'], again['39']], ['0110', '05']);
    assert.equal((await balances(h, a.cardId)).available, 500 - 20);
  });
});
