// An AReq's expiry other than the card's counts toward the card's verification failures (decisions
// §12.13, §14.3.1), with the link's and the sandbox's: 5 within 24 hours freeze the card (source
// `security`), each refused authentication listed by threeDsList.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { type Harness, randomStr } from '../helpers/app.js';
import { eachDialect } from '../helpers/dialects.js';
import { cardSecrets } from '../helpers/link.js';
import { acs, card, notifyTo } from './helpers/acs.js';
import { areq, send } from './helpers/ds.js';

/** An expiry (YYMM) that is not the card's, the nth of several. */
const wrongExpiry = (expiry: string, n: number) => `${Number(expiry.slice(0, 2)) + 1 + n}${expiry.slice(2)}`;

const cardRow = (h: Harness, cardId: string) =>
  h.db.database.db.selectFrom('cards').selectAll().where('id', '=', cardId).executeTakeFirstOrThrow();

/** The card.status callbacks written for the card: [status, source]. */
async function statusEvents(h: Harness, cardId: string) {
  const rows = await h.db.database.db.selectFrom('callback_events').selectAll().where('type', '=', 'card.status').execute();
  return rows
    .map((r) => JSON.parse(r.payload) as { cardId: string; status: string; source: string })
    .filter((e) => e.cardId === cardId)
    .map((e) => [e.status, e.source]);
}

eachDialect('3-D Secure: an expiry mismatch is a card verification failure (decisions §12.13)', (dialect) => {
  it('5 AReqs with a wrong cardExpiryDate, in flight at once: each N/01 and listed; the card frozen for security once; the 6th, with the right expiry, N/12', async (t) => {
    const { h, url } = await acs(t, dialect);
    await notifyTo(t, h);
    const c = await card(h);
    const answers = await Promise.all(
      Array.from({ length: 5 }, (_, i) => send(url, areq({ pan: c.pan, expiry: wrongExpiry(c.expiry, i), amount: '1000' }))),
    );
    assert.deepEqual(
      answers.map((a) => [a.status, a.json?.transStatus, a.json?.transStatusReason]),
      Array.from({ length: 5 }, () => [200, 'N', '01']),
    );
    const row = await cardRow(h, c.cardId);
    assert.deepEqual([row.status, row.status_source], ['frozen', 'security']);
    assert.match(row.status_reason ?? '', /5 card verification failures/);
    assert.equal((JSON.parse(row.verification_failures ?? '[]') as number[]).length, 5);
    assert.deepEqual(await statusEvents(h, c.cardId), [['frozen', 'security']], 'one freeze, one callback');
    const audit = await h.db.database.db.selectFrom('audit_events').selectAll().where('target', '=', c.cardId).execute();
    assert.deepEqual(
      audit.map((a) => [a.action, a.source]),
      [['card.freeze', 'network']],
      'frozen by what the DS presented',
    );
    const metrics = await h.app.svc.metrics.text();
    assert.match(metrics, /^cardprogram_verification_failures_total\{kind="expiry",via="3ds"\} 5$/m);
    assert.match(metrics, /^cardprogram_cards_frozen_security_total\{via="3ds"\} 1$/m);

    // Each refusal is a refused authentication the merchant lists.
    const list = await h.call('/api/network/threeDsList.html', { cardId: c.cardId, start: 0, randomStr: randomStr() });
    assert.equal(list.status, 200, JSON.stringify(list.body));
    const listed = list.body.model.authentications as Array<{ acsTransID: string; transStatus: string; transStatusReason: string }>;
    assert.deepEqual(
      listed.map((a) => [a.transStatus, a.transStatusReason]).sort(),
      Array.from({ length: 5 }, () => ['N', '01']),
    );
    assert.deepEqual(listed.map((a) => a.acsTransID).sort(), answers.map((a) => String(a.json?.acsTransID)).sort());

    // The right expiry now: the card is frozen.
    const sixth = (await send(url, areq({ pan: c.pan, expiry: c.expiry, amount: '1000' }))).json ?? {};
    assert.deepEqual([sixth.transStatus, sixth.transStatusReason], ['N', '12']);
    // Unfrozen by the merchant: the count starts again, and the right expiry authenticates.
    assert.equal((await h.call('/api/network/cardUnfreeze.html', { cardId: c.cardId, randomStr: randomStr() })).status, 200);
    assert.equal((await cardRow(h, c.cardId)).verification_failures, null);
    const after = (await send(url, areq({ pan: c.pan, expiry: c.expiry, amount: '1000' }))).json ?? {};
    assert.equal(after.transStatus, 'Y');
  });

  it('counted with the sandbox’s mismatches, in flight together (the AReq locks its 3-D Secure row, then the card; an authorization the card): exactly one freeze, no Erro', async (t) => {
    const { h, url } = await acs(t, dialect);
    await notifyTo(t, h);
    const c = await card(h);
    const { cvv } = await cardSecrets(h, c.cardId);
    const badCvv = String((Number(cvv) + 1) % 1000).padStart(3, '0');
    const areqs = Array.from({ length: 4 }, (_, i) => send(url, areq({ pan: c.pan, expiry: wrongExpiry(c.expiry, i), amount: '1000' })));
    const sandbox = Array.from({ length: 4 }, () =>
      h.call('/sandbox/network/authorize', { cardId: c.cardId, amount: 1, cvv2: badCvv, randomStr: randomStr() }),
    );
    const [answers, declines] = await Promise.all([Promise.all(areqs), Promise.all(sandbox)]);
    // Every AReq decided (an expiry mismatch is N/01 whatever the card's status), none an Erro (a deadlock retried out would be 404).
    assert.deepEqual(
      answers.map((a) => [a.json?.messageType, a.json?.transStatus, a.json?.transStatusReason]),
      Array.from({ length: 4 }, () => ['ARes', 'N', '01']),
    );
    // Each sandbox authorization declined: counted (2731) before the freeze, by the card's status (2724) after.
    for (const d of declines) assert.ok(['2731', '2724'].includes(String(d.body.code)), JSON.stringify(d.body));
    const row = await cardRow(h, c.cardId);
    assert.deepEqual([row.status, row.status_source], ['frozen', 'security']);
    assert.deepEqual(await statusEvents(h, c.cardId), [['frozen', 'security']], 'exactly one freeze');
    const counted = declines.filter((d) => d.body.code === '2731').length;
    assert.ok(counted + answers.length >= 5, `${counted} sandbox mismatches counted with the 4 AReqs`);
  });
});
