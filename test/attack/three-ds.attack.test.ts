// The 3-D Secure ACS attacked as an outsider would (issue 41): each test here is a finding that
// held before its fix, through the real app (the DS's AReqs over HTTP to the ACS's listener, the
// cardholder's browser posting the challenge page's forms), on SQLite and PostgreSQL.
import assert from 'node:assert/strict';
import { it, type TestContext } from 'node:test';
import { openPayload } from '../../src/callbacks/outbox.js';
import type { TestDialect } from '../helpers/db.js';
import { eachDialect } from '../helpers/dialects.js';
import { acs, card, notifyTo, stored } from '../three-ds/helpers/acs.js';
import { creq } from '../three-ds/helpers/challenge-sim.js';
import { areq, send } from '../three-ds/helpers/ds.js';

const NOTIFY = 'https://3dss.test.example/notify';

async function setup(t: TestContext, dialect: TestDialect) {
  const now = { ms: Date.now() };
  const { h, url } = await acs(t, dialect, {}, { clock: () => now.ms });
  await notifyTo(t, h);
  const c = await card(h);
  /** An AReq for the card as the DS sends it (a challenge mandated by default); its ARes or Erro. */
  const start = async (extra: Partial<Parameters<typeof areq>[0]> = {}) =>
    (await send(url, areq({ pan: c.pan, expiry: c.expiry, amount: '12000', challengeInd: '04', notificationURL: NOTIFY, ...extra })))
      .json ?? {};
  const form = (path: string, fields: Record<string, string>) =>
    h.app.inject({
      method: 'POST',
      url: path,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams(fields).toString(),
    });
  /** The page of a challenge opened by its creq: its hidden fields for the next form. */
  const open = async (ares: Record<string, unknown>) => {
    const page = await form('/3ds/challenge', { creq: creq(ares) });
    assert.equal(page.statusCode, 200, page.body);
    const acsTransID = /name="acsTransID" value="([^"]+)"/.exec(page.body)?.[1];
    const token = /name="token" value="([^"]+)"/.exec(page.body)?.[1];
    assert.ok(acsTransID && token);
    return { acsTransID, token };
  };
  /** The last code sent to the merchant for an authentication. */
  const code = async (acsTransID: unknown) => {
    const events = await h.db.database.db.selectFrom('callback_events').selectAll().where('type', '=', 'threeDs.otp').execute();
    const codes = events
      .map((e) => JSON.parse(openPayload(h.app.svc.box, e)) as { acsTransID: string; code: string })
      .filter((p) => p.acsTransID === acsTransID);
    return String(codes.at(-1)?.code);
  };
  const wrong = (right: string, k = 1) => String((Number(right) + k) % 1_000_000).padStart(6, '0');
  return { now, h, url, c, start, form, open, code, wrong };
}

eachDialect('3-D Secure attacked: one-time code guessing', (dialect) => {
  // Finding 1 (high): each challenge allowed 3 wrong codes and nothing counted them across the
  // card's challenges: 30 AReqs an hour gave a guesser 90 codes an hour, 2,160 a day, on one card.
  it('the wrong codes of all a card’s challenges count together: 9 in 24 hours, then no code is compared and no challenge by code is offered', async (t) => {
    const { now, h, start, form, open, code, wrong } = await setup(t, dialect);
    // Four challenges opened at once (the guesser's parallel windows), then three wrong codes in each of three.
    const aress = [];
    for (let i = 0; i < 5; i++) {
      const ares = await start();
      assert.equal(ares.transStatus, 'C');
      aress.push({ ares, page: await open(ares) });
    }
    for (const { ares, page } of aress.slice(0, 3)) {
      const right = await code(ares.acsTransID);
      for (let k = 1; k <= 3; k++) await form('/3ds/challenge/otp', { ...page, code: wrong(right, k) });
      assert.deepEqual(
        [(await stored(h, String(ares.acsTransID))).trans_status_reason, (await stored(h, String(ares.acsTransID))).otp_failures],
        ['19', 3],
      );
    }
    // The fourth window: even its right code is not compared any more (a guess would be the 10th).
    const last = aress[3] as (typeof aress)[number];
    const ended = await form('/3ds/challenge/otp', { ...last.page, code: await code(last.ares.acsTransID) });
    assert.equal(ended.statusCode, 200);
    assert.match(ended.body, /<form id="cres"/);
    const row = await stored(h, String(last.ares.acsTransID));
    assert.deepEqual([row.trans_status, row.trans_status_reason, Number(row.otp_failures)], ['N', '19', 0]);
    // The fifth window: no new code is sent for it either; it ends N/19.
    const fifth = aress[4] as (typeof aress)[number];
    const codesBefore = await h.db.database.db.selectFrom('callback_events').select('id').where('type', '=', 'threeDs.otp').execute();
    const resent = await form('/3ds/challenge/resend', fifth.page);
    assert.match(resent.body, /<form id="cres"/);
    assert.deepEqual(
      [(await stored(h, String(fifth.ares.acsTransID))).trans_status, (await stored(h, String(fifth.ares.acsTransID))).trans_status_reason],
      ['N', '19'],
    );
    const codesAfter = await h.db.database.db.selectFrom('callback_events').select('id').where('type', '=', 'threeDs.otp').execute();
    assert.equal(codesAfter.length, codesBefore.length);
    // A new AReq gets no challenge by code (N/19, EMVCo's "exceeds ACS maximum challenges"), and no code is sent.
    const sentBefore = await h.db.database.db.selectFrom('callback_events').select('id').where('type', '=', 'threeDs.otp').execute();
    const refused = await start();
    assert.deepEqual([refused.transStatus, refused.transStatusReason], ['N', '19']);
    const sentAfter = await h.db.database.db.selectFrom('callback_events').select('id').where('type', '=', 'threeDs.otp').execute();
    assert.equal(sentAfter.length, sentBefore.length);
    // Frictionless under the low-value exemption is not a challenge: still answered.
    const small = await start({ amount: '500', challengeInd: '01' });
    assert.equal(small.transStatus, 'Y');
    // 24 hours after the wrong codes, the card may be challenged again.
    now.ms += 24 * 3_600_000 + 1000;
    const later = await start();
    assert.equal(later.transStatus, 'C');
    const page = await open(later);
    const done = await form('/3ds/challenge/otp', { ...page, code: await code(later.acsTransID) });
    assert.match(done.body, /<form id="cres"/);
    assert.equal((await stored(h, String(later.acsTransID))).trans_status, 'Y');
  });

  it('guesses at once in four windows of one card count nine in all, on every database', async (t) => {
    const { h, c, start, form, open, code, wrong } = await setup(t, dialect);
    const windows = [];
    for (let i = 0; i < 4; i++) {
      const ares = await start();
      windows.push({ ares, page: await open(ares), right: await code(ares.acsTransID) });
    }
    const answers = await Promise.all(
      windows.flatMap((w) => [1, 2, 3].map((k) => form('/3ds/challenge/otp', { ...w.page, code: wrong(w.right, k) }))),
    );
    assert.ok(answers.every((r) => r.statusCode === 200 || r.statusCode === 409));
    const rows = await h.db.database.db.selectFrom('three_ds_authentications').selectAll().where('card_id', '=', c.cardId).execute();
    assert.equal(
      rows.reduce((n, r) => n + Number(r.otp_failures), 0),
      9,
    );
    assert.ok(rows.every((r) => r.trans_status === 'N' && r.trans_status_reason === '19'));
  });
});

eachDialect('3-D Secure attacked: where the CRes goes', (dialect) => {
  // Finding 2 (low): a notificationURL without "//" after its scheme (`https:evil.example/x`) passed
  // the AReq's check (the URL parser reads it as https://evil.example/x, and the page's CSP named that
  // origin) while the cardholder's browser, on the ACS's https page, reads it as a path of the ACS's
  // own origin: the CRes went back to the ACS, never to the 3DS Server. Now an Erro 203.
  it('a notificationURL that is not an absolute http(s) URL with its "//" is Erro 203', async (t) => {
    const { start } = await setup(t, dialect);
    for (const notificationURL of ['https:evil.example/x', 'https:/evil.example/x', 'http:evil.example/x', 'https:\\\\evil.example/x']) {
      const erro = await start({ notificationURL });
      assert.deepEqual([erro.messageType, erro.errorCode, erro.errorDetail], ['Erro', '203', 'notificationURL'], notificationURL);
    }
    const ok = await start({ notificationURL: 'HTTPS://Shop.Example/notify?x=1' });
    assert.equal(ok.transStatus, 'C');
  });
});

eachDialect('3-D Secure attacked: creqs not the ACS’s', (dialect) => {
  // Finding 3 (informational): the page compared the error's wire code ('2750') with its kind's
  // name, so an unknown creq (or one whose identifiers are not its AReq's) showed "already used"
  // with 409 instead of "unknown" with 404 (docs/3ds.md); nothing changed either way.
  it('a creq for no authentication, or with another AReq’s threeDSServerTransID, is 404 and changes nothing', async (t) => {
    const { h, start, form } = await setup(t, dialect);
    const ares = await start();
    const unknown = await form('/3ds/challenge', { creq: creq({ ...ares, acsTransID: '6f1c4a52-93d1-4b7e-8a0e-2f4f1b9f0c11' }) });
    assert.equal(unknown.statusCode, 404);
    const crossed = await form('/3ds/challenge', {
      creq: creq({ ...ares, threeDSServerTransID: '0b7a9c2e-5d4f-4e61-9a8b-3c2d1e0f9a8b' }),
    });
    assert.equal(crossed.statusCode, 404);
    assert.equal((await stored(h, String(ares.acsTransID))).challenge_state, 'pending');
  });
});
