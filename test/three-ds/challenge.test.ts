// The challenge (decisions §14.4) through the real app, as the cardholder's browser posts its forms:
// the CReq, the code, a new code, cancel, the out-of-band wait; the CRes for the 3DS Server and the
// RReq for the DS (both checked by simulators written from EMVCo's element names), the expiry, a
// spent creq, the merchant's threeDsChallengeRespond and the sandbox's complete.
import assert from 'node:assert/strict';
import { it, type TestContext } from 'node:test';
import { openPayload } from '../../src/callbacks/outbox.js';
import { expireChallenges } from '../../src/three-ds/expire.js';
import { sendResults } from '../../src/three-ds/results.js';
import { randomStr } from '../helpers/app.js';
import type { TestDialect } from '../helpers/db.js';
import { eachDialect } from '../helpers/dialects.js';
import { acs, card, notifyTo, stored } from './helpers/acs.js';
import { creq, cresProblems, directoryServer, type Message, rreqProblems } from './helpers/challenge-sim.js';
import { areq, send } from './helpers/ds.js';

const NOTIFY = 'https://3dss.test.example/notify';

async function setup(t: TestContext, dialect: TestDialect, method: 'otp' | 'oob' = 'otp') {
  const now = { ms: Date.now() };
  const ds = await directoryServer(t);
  const { h, url } = await acs(t, dialect, { threeDs: { ds: { url: ds.url, cert: null, key: null } } as never }, { clock: () => now.ms });
  await notifyTo(t, h);
  if (method === 'oob') await h.call('/api/network/threeDsSettingsUpdate.html', { challengeMethod: 'oob', randomStr: randomStr() });
  const c = await card(h);
  const start = async (extra: Partial<Parameters<typeof areq>[0]> = {}) => {
    const request = areq({ pan: c.pan, expiry: c.expiry, amount: '12000', challengeInd: '04', notificationURL: NOTIFY, ...extra });
    const ares = (await send(url, request)).json ?? {};
    assert.equal(ares.transStatus, 'C', JSON.stringify(ares));
    return ares;
  };
  const form = (path: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
    h.app.inject({
      method: 'POST',
      url: path,
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      payload: new URLSearchParams(fields).toString(),
    });
  /** The codes sent to the merchant for an authentication, oldest first. */
  const codes = async (acsTransID: unknown) => {
    const events = await h.db.database.db
      .selectFrom('callback_events')
      .selectAll()
      .where('type', '=', 'threeDs.otp')
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return events
      .map((e) => JSON.parse(openPayload(h.app.svc.box, e)) as { acsTransID: string; code: string })
      .filter((p) => p.acsTransID === acsTransID)
      .map((p) => p.code);
  };
  return { now, ds, h, url, c, start, form, codes };
}

/** The page's hidden fields (acsTransID, token) for its next form. */
function fieldsOf(html: string): { acsTransID: string; token: string } {
  const acsTransID = /name="acsTransID" value="([^"]+)"/.exec(html)?.[1];
  const token = /name="token" value="([^"]+)"/.exec(html)?.[1];
  assert.ok(acsTransID && token, `the page has its fields: ${html.slice(0, 400)}`);
  return { acsTransID, token };
}

/** The CRes form of the last page: where it posts, the CRes decoded, the session data. */
function cresOf(html: string): { action: string; cres: Message; session: string | null } {
  const action = /<form id="cres" method="post" action="([^"]+)"/.exec(html)?.[1];
  const cres = /name="cres" value="([^"]+)"/.exec(html)?.[1];
  assert.ok(action && cres, `a CRes form: ${html.slice(0, 400)}`);
  return {
    action: action.replace(/&amp;/g, '&'),
    cres: JSON.parse(Buffer.from(cres, 'base64url').toString('utf8')) as Message,
    session: /name="threeDSSessionData" value="([^"]+)"/.exec(html)?.[1] ?? null,
  };
}

eachDialect('3-D Secure: the challenge (decisions §14.4)', (dialect) => {
  it('OTP: the CReq opens the page (French, framable, nothing from elsewhere); a wrong code counts; the right one ends it Y: CRes to the notificationURL, RReq to the DS, threeDs.result; the creq is spent', async (t) => {
    const { ds, h, start, form, codes } = await setup(t, dialect);
    const ares = await start();
    const opened = await form('/3ds/challenge', { creq: creq(ares, '02'), threeDSSessionData: 'c2Vzc2lvbi0x' });
    assert.equal(opened.statusCode, 200, opened.body);
    const csp = String(opened.headers['content-security-policy']);
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /frame-ancestors \*/);
    assert.match(csp, /script-src 'nonce-[^']+'/);
    assert.equal(opened.headers['x-frame-options'], undefined);
    assert.match(opened.body, /<html lang="fr">/);
    assert.match(opened.body, /Elektro Laden/);
    assert.match(opened.body, /120,00\s€/);
    assert.match(opened.body, /424242 •••• \d{4}/);
    assert.match(opened.body, /<label for="code">Code<\/label>/);
    assert.ok(!/(src|href)="https?:/.test(opened.body), 'nothing loaded from elsewhere');
    const row = await stored(h, String(ares.acsTransID));
    assert.deepEqual([row.challenge_state, row.challenge_window_size, row.session_data], ['open', '02', 'c2Vzc2lvbi0x']);

    const f = fieldsOf(opened.body);
    const [code] = await codes(ares.acsTransID);
    assert.match(String(code), /^\d{6}$/);
    const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, '0');
    const afterWrong = await form('/3ds/challenge/otp', { ...f, code: wrong });
    assert.equal(afterWrong.statusCode, 200);
    assert.match(afterWrong.body, /role="alert" aria-live="assertive" class="alert">Ce code n’est pas correct\. Essais restants : 2\./);
    assert.match(afterWrong.body, /aria-invalid="true"/);
    assert.equal(Number((await stored(h, String(ares.acsTransID))).otp_failures), 1);

    const done = await form('/3ds/challenge/otp', { ...f, code: String(code) });
    assert.equal(done.statusCode, 200);
    const end = cresOf(done.body);
    assert.equal(end.action, NOTIFY);
    assert.deepEqual(cresProblems(end.cres), []);
    assert.deepEqual(end.cres, {
      threeDSServerTransID: ares.threeDSServerTransID,
      acsTransID: ares.acsTransID,
      messageType: 'CRes',
      messageVersion: '2.2.0',
      transStatus: 'Y',
      challengeCompletionInd: 'Y',
    });
    assert.equal(end.session, 'c2Vzc2lvbi0x');
    assert.match(String(done.headers['content-security-policy']), /form-action 'self' https:\/\/3dss\.test\.example/);
    const final = await stored(h, String(ares.acsTransID));
    assert.deepEqual([final.trans_status, final.eci, final.challenge_state], ['Y', '05', 'done']);

    assert.equal(await sendResults(h.app.svc), 1);
    assert.equal(ds.rreqs.length, 1);
    const rreq = ds.rreqs[0] as Message;
    assert.deepEqual(rreqProblems(rreq), []);
    assert.deepEqual(
      [rreq.transStatus, rreq.eci, rreq.acsTransID, rreq.dsTransID, rreq.interactionCounter, rreq.authenticationType],
      ['Y', '05', ares.acsTransID, ares.dsTransID, '02', '02'],
    );
    assert.equal(String(rreq.authenticationValue).length, 28);
    const result = await h.db.database.db.selectFrom('three_ds_results').selectAll().executeTakeFirstOrThrow();
    assert.deepEqual([result.status, result.attempts], ['sent', 1]);
    assert.equal(JSON.parse(String(result.rres)).resultsStatus, '01');
    const events = await h.db.database.db.selectFrom('callback_events').select('type').where('type', '=', 'threeDs.result').execute();
    assert.equal(events.length, 1);

    // The creq again (a replay, a second tab): an error page, nothing changes, no second verification.
    const again = await form('/3ds/challenge', { creq: creq(ares, '02') });
    assert.equal(again.statusCode, 409);
    assert.match(again.body, /déjà été utilisée/);
    assert.ok(!again.body.includes('name="code"'));
    // The page's own forms after the end: the end again (no second verification either).
    const late = await form('/3ds/challenge/otp', { ...f, code: String(code) });
    assert.equal(cresOf(late.body).cres.transStatus, 'Y');
    assert.equal((await stored(h, String(ares.acsTransID))).trans_status, 'Y');
    assert.equal(await sendResults(h.app.svc), 0);
  });

  it('OTP: three wrong codes end it N/19; a new code on request (once), the old one then wrong; cancel ends it N with challengeCancel 01', async (t) => {
    const { now, ds, h, start, form, codes } = await setup(t, dialect);
    const a = await start();
    const pa = fieldsOf((await form('/3ds/challenge', { creq: creq(a) })).body);
    now.ms += 1000; // the codes' callbacks in order of creation
    const resent = await form('/3ds/challenge/resend', pa);
    assert.match(resent.body, /Un nouveau code est en route/);
    const [first, second] = await codes(a.acsTransID);
    assert.ok(first && second && first !== second);
    assert.ok(!resent.body.includes('/3ds/challenge/resend'), 'no second new code offered');
    const more = await form('/3ds/challenge/resend', pa);
    assert.match(more.body, /Aucun autre code/);
    assert.equal((await codes(a.acsTransID)).length, 2);
    await form('/3ds/challenge/otp', { ...pa, code: first });
    await form('/3ds/challenge/otp', { ...pa, code: 'abcdef' });
    const third = await form('/3ds/challenge/otp', { ...pa, code: '' });
    assert.equal(cresOf(third.body).cres.transStatus, 'N');
    const ra = await stored(h, String(a.acsTransID));
    assert.deepEqual([ra.trans_status, ra.trans_status_reason, Number(ra.otp_failures)], ['N', '19', 3]);

    const b = await start();
    const pb = fieldsOf((await form('/3ds/challenge', { creq: creq(b) })).body);
    const cancelled = await form('/3ds/challenge/cancel', pb);
    assert.equal(cresOf(cancelled.body).cres.transStatus, 'N');
    const rb = await stored(h, String(b.acsTransID));
    assert.deepEqual([rb.trans_status, rb.trans_status_reason, rb.challenge_cancel], ['N', '26', '01']);

    assert.equal(await sendResults(h.app.svc), 2);
    const byId = new Map(ds.rreqs.map((r) => [r.acsTransID, r]));
    assert.deepEqual(
      [byId.get(a.acsTransID)?.transStatus, byId.get(a.acsTransID)?.transStatusReason, byId.get(a.acsTransID)?.eci],
      ['N', '19', '07'],
    );
    assert.deepEqual([byId.get(b.acsTransID)?.transStatus, byId.get(b.acsTransID)?.challengeCancel], ['N', '01']);
    for (const r of ds.rreqs) assert.deepEqual(rreqProblems(r), []);
  });

  it('expiry: 5 minutes after the ARes a challenge ends N/14 (the periodic pass, or the page’s next step); a creq for it shows an error and changes nothing', async (t) => {
    const { now, ds, h, start, form } = await setup(t, dialect);
    const open = await start();
    const pa = fieldsOf((await form('/3ds/challenge', { creq: creq(open) })).body);
    const idle = await start();
    now.ms += 5 * 60_000;
    const late = await form('/3ds/challenge/otp', { ...pa, code: '000000' });
    assert.equal(cresOf(late.body).cres.transStatus, 'N');
    assert.deepEqual(
      [(await stored(h, String(open.acsTransID))).trans_status_reason, (await stored(h, String(open.acsTransID))).otp_failures],
      ['14', 0],
    );
    const opening = await form('/3ds/challenge', { creq: creq(idle) });
    assert.equal(opening.statusCode, 409);
    assert.equal((await stored(h, String(idle.acsTransID))).challenge_state, 'pending');
    assert.equal(await expireChallenges(h.app.svc), 1);
    assert.equal(await expireChallenges(h.app.svc), 0);
    const r = await stored(h, String(idle.acsTransID));
    assert.deepEqual([r.trans_status, r.trans_status_reason, r.challenge_state], ['N', '14', 'done']);
    await sendResults(h.app.svc);
    assert.deepEqual(
      ds.rreqs.map((m) => m.transStatusReason),
      ['14', '14'],
    );
  });

  it('out of band: the page waits (a meta refresh, no script) until threeDsChallengeRespond; approved is Y, declined N/01; once; cancel from the page', async (t) => {
    const { ds, h, start, form } = await setup(t, dialect, 'oob');
    const a = await start();
    const page = await form('/3ds/challenge', { creq: creq(a, '01') });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /<meta http-equiv="refresh" content="3;url=\/3ds\/challenge\/status\?acsTransID=/);
    assert.match(page.body, /application bancaire/);
    const pa = fieldsOf(page.body);
    const waiting = await h.app.inject({ method: 'GET', url: `/3ds/challenge/status?${new URLSearchParams(pa)}` });
    assert.match(waiting.body, /En attente/);
    const answered = await h.call('/api/network/threeDsChallengeRespond.html', {
      acsTransID: a.acsTransID,
      result: 'approved',
      randomStr: randomStr(),
    });
    assert.equal(answered.status, 200, JSON.stringify(answered.body));
    assert.deepEqual([answered.body.model.transStatus, answered.body.model.eci, answered.body.model.authenticationType], ['Y', '05', '03']);
    const twice = await h.call('/api/network/threeDsChallengeRespond.html', {
      acsTransID: a.acsTransID,
      result: 'declined',
      randomStr: randomStr(),
    });
    assert.deepEqual([twice.status, twice.body.code], [409, '2751']);
    const seen = await h.app.inject({ method: 'GET', url: `/3ds/challenge/status?${new URLSearchParams(pa)}` });
    assert.equal(cresOf(seen.body).cres.transStatus, 'Y');
    assert.equal((await stored(h, String(a.acsTransID))).oob_result, 'approved');

    const b = await start();
    await form('/3ds/challenge', { creq: creq(b) });
    const declined = await h.call('/api/network/threeDsChallengeRespond.html', {
      acsTransID: b.acsTransID,
      result: 'declined',
      randomStr: randomStr(),
    });
    assert.deepEqual([declined.body.model.transStatus, declined.body.model.transStatusReason], ['N', '01']);

    const c = await start();
    const pc = fieldsOf((await form('/3ds/challenge', { creq: creq(c) })).body);
    assert.equal(cresOf((await form('/3ds/challenge/cancel', pc)).body).cres.transStatus, 'N');
    const after = await h.call('/api/network/threeDsChallengeRespond.html', {
      acsTransID: c.acsTransID,
      result: 'approved',
      randomStr: randomStr(),
    });
    assert.deepEqual([after.status, after.body.code], [409, '2751']);

    // A token for another challenge does not open this one's page.
    const forged = await h.app.inject({
      method: 'GET',
      url: `/3ds/challenge/status?${new URLSearchParams({ ...pc, acsTransID: String(a.acsTransID) })}`,
    });
    assert.equal(forged.statusCode, 403);
    assert.equal(await sendResults(h.app.svc), 3);
    assert.deepEqual(
      ds.rreqs.map((m) => m.transStatus),
      ['Y', 'N', 'N'],
    );
  });

  it('the sandbox’s complete finishes a challenge without a browser: a wrong code counts, the right one is Y with the CRes; an oob result', async (t) => {
    const { h, start, codes } = await setup(t, dialect);
    const a = await start();
    const [code] = await codes(a.acsTransID);
    const wrong = await h.call('/sandbox/3ds/complete', { acsTransID: a.acsTransID, otp: '99999x', randomStr: randomStr() });
    assert.equal(wrong.status, 200, JSON.stringify(wrong.body));
    assert.deepEqual([wrong.body.model.authentication.transStatus, wrong.body.model.attemptsLeft, wrong.body.model.cres], ['C', 2, null]);
    const right = await h.call('/sandbox/3ds/complete', { acsTransID: a.acsTransID, otp: code, randomStr: randomStr() });
    assert.deepEqual([right.body.model.authentication.transStatus, right.body.model.attemptsLeft], ['Y', null]);
    assert.equal(JSON.parse(Buffer.from(right.body.model.cres, 'base64url').toString('utf8')).transStatus, 'Y');
    const neither = await h.call('/sandbox/3ds/complete', { acsTransID: a.acsTransID, randomStr: randomStr() });
    assert.deepEqual([neither.status, neither.body.code], [400, '1002']);
    const over = await h.call('/sandbox/3ds/complete', { acsTransID: a.acsTransID, otp: code, randomStr: randomStr() });
    assert.deepEqual([over.status, over.body.code], [409, '2751']);
    const oobOnOtp = await h.call('/sandbox/3ds/complete', {
      acsTransID: (await start()).acsTransID,
      result: 'approved',
      randomStr: randomStr(),
    });
    assert.deepEqual([oobOnOtp.status, oobOnOtp.body.code], [409, '2751']);
  });

  it('results: the DS away, the RReq is tried again with a growing wait until it answers', async (t) => {
    const { now, ds, h, start, form } = await setup(t, dialect);
    const a = await start();
    const pa = fieldsOf((await form('/3ds/challenge', { creq: creq(a) })).body);
    await form('/3ds/challenge/cancel', pa);
    ds.failNext(2);
    assert.equal(await sendResults(h.app.svc), 0);
    const one = await h.db.database.db.selectFrom('three_ds_results').selectAll().executeTakeFirstOrThrow();
    assert.deepEqual([one.status, one.attempts, one.last_error], ['pending', 1, 'HTTP 503']);
    assert.equal(await sendResults(h.app.svc), 0, 'not due yet');
    now.ms += 2000;
    assert.equal(await sendResults(h.app.svc), 0);
    const two = await h.db.database.db.selectFrom('three_ds_results').selectAll().executeTakeFirstOrThrow();
    assert.equal(Number(two.next_attempt_at) - now.ms, 4000);
    now.ms += 4000;
    assert.equal(await sendResults(h.app.svc), 1);
    assert.equal(ds.rreqs.length, 3);
    const sent = await h.db.database.db.selectFrom('three_ds_results').selectAll().executeTakeFirstOrThrow();
    assert.deepEqual([sent.status, sent.attempts], ['sent', 3]);
  });

  it('in flight: eight wrong codes at once count three and end it N/19 once; the right code and a cancel at once, one of them', async (t) => {
    const { h, start, form, codes } = await setup(t, dialect);
    const a = await start();
    const pa = fieldsOf((await form('/3ds/challenge', { creq: creq(a) })).body);
    const [code] = await codes(a.acsTransID);
    const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, '0');
    const answers = await Promise.all(Array.from({ length: 8 }, () => form('/3ds/challenge/otp', { ...pa, code: wrong })));
    assert.ok(answers.every((r) => r.statusCode === 200));
    const ra = await stored(h, String(a.acsTransID));
    assert.deepEqual([ra.trans_status, ra.trans_status_reason, Number(ra.otp_failures)], ['N', '19', 3]);
    const results = await h.db.database.db
      .selectFrom('three_ds_results')
      .select('acs_trans_id')
      .where('acs_trans_id', '=', String(a.acsTransID))
      .execute();
    assert.equal(results.length, 1);

    const b = await start();
    const pb = fieldsOf((await form('/3ds/challenge', { creq: creq(b) })).body);
    const [codeB] = await codes(b.acsTransID);
    await Promise.all([form('/3ds/challenge/otp', { ...pb, code: String(codeB) }), form('/3ds/challenge/cancel', pb)]);
    const rb = await stored(h, String(b.acsTransID));
    assert.ok(rb.trans_status === 'Y' || (rb.trans_status === 'N' && rb.challenge_cancel === '01'), JSON.stringify(rb.trans_status));
    const events = await h.db.database.db.selectFrom('callback_events').selectAll().where('type', '=', 'threeDs.result').execute();
    assert.equal(events.length, 2, 'one threeDs.result per challenge');
  });

  it('the forms never answer 500: random, broken and hostile bodies on every challenge route', async (t) => {
    const { h, start, form } = await setup(t, dialect);
    const a = await start();
    const good = creq(a);
    const pieces = [
      '',
      'x',
      good,
      `${good}==`,
      good.slice(0, 10),
      Buffer.from('{"acsTransID":1}').toString('base64url'),
      Buffer.from('[]').toString('base64url'),
      Buffer.from('null').toString('base64url'),
      Buffer.from('{"__proto__":{"x":1}}').toString('base64url'),
      Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(good, 'base64url').toString()), challengeWindowSize: '06' })).toString(
        'base64url',
      ),
      Buffer.from(
        JSON.stringify({ ...JSON.parse(Buffer.from(good, 'base64url').toString()), acsTransID: '00000000-0000-0000-0000-000000000000' }),
      ).toString('base64url'),
      'A'.repeat(5000),
      '\u0000',
      '%00',
      '<script>',
      '1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
      '999999.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    ];
    const names = ['creq', 'threeDSSessionData', 'acsTransID', 'token', 'code'];
    const paths = ['/3ds/challenge', '/3ds/challenge/otp', '/3ds/challenge/resend', '/3ds/challenge/cancel', '/3ds/challenge/status'];
    let seed = 7;
    const pick = <T>(xs: readonly T[]): T => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return xs[seed % xs.length] as T;
    };
    for (let i = 0; i < 150; i++) {
      const fields: Record<string, string> = {};
      for (const n of names) if (pick([true, false])) fields[n] = pick(pieces);
      if (pick([true, false, false])) fields.acsTransID = String(a.acsTransID);
      const res = await form(pick(paths), fields);
      assert.ok(res.statusCode < 500, `${res.statusCode} for ${JSON.stringify(fields).slice(0, 200)}`);
    }
    for (const [type, payload] of [
      ['application/json', '{"creq":1}'],
      ['text/plain', 'creq=x'],
      ['application/x-www-form-urlencoded', 'creq=%E0%A4%A'],
      ['application/x-www-form-urlencoded', 'a'.repeat(9000)],
      ['multipart/form-data; boundary=x', '--x--'],
    ] as const) {
      const res = await h.app.inject({ method: 'POST', url: '/3ds/challenge', headers: { 'content-type': type }, payload });
      assert.ok(res.statusCode < 500, `${res.statusCode} for ${type}`);
    }
    const get = await h.app.inject({ method: 'GET', url: '/3ds/challenge/status?acsTransID[]=1&token=%00' });
    assert.ok(get.statusCode < 500);
    // Nothing of this opened or ended the challenge.
    assert.equal((await stored(h, String(a.acsTransID))).trans_status, 'C');
  });
});
