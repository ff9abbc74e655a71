import assert from 'node:assert/strict';
import { it } from 'node:test';
import { decode, type IsoMessage } from '../src/iso8583/codec.js';
import { build, type Harness, randomStr } from './helpers/app.js';
import { balances, fundedCard, ok, todaysTrades } from './helpers/cards.js';
import { eachDialect } from './helpers/dialects.js';
import { authorizationRequest, cardSecrets, linkOf, Peer } from './helpers/link.js';

/**
 * Card verification failures are counted (decisions §12.13, issue 39.1): a CVV2 or expiry mismatch
 * on the link or in the sandbox counts against the card, 5 within 24 hours freeze it (source
 * `security`), and leaving the fields out is no way around it.
 */

type Card = Awaited<ReturnType<typeof cardSecrets>>;

async function setup(t: Parameters<typeof build>[0], dialect: Parameters<typeof build>[1]) {
  const h = await build(t, dialect);
  // Callbacks are written (their delivery is not the point): the card.status event is checked in the outbox.
  await h.db.database.db.updateTable('merchants').set({ notify_url: 'http://127.0.0.1:9/hooks' }).execute();
  const { cardId } = await fundedCard(h, { topUp: 100 });
  const card = await cardSecrets(h, cardId);
  const link = await linkOf(t, h);
  // 25 decisions wait for one card's lock one after the other: the deadline is not what is tested here.
  h.app.svc.config.network = { ...h.app.svc.config.network, deadlineMs: 30_000 };
  const peers = await Promise.all(Array.from({ length: 5 }, () => Peer.open(t, link.port)));
  return { h, cardId, card, link, peers, peer: peers[0] as Peer };
}

/** CVV2s that are not the card's. */
const wrongCvvs = (card: Card, n: number) =>
  Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'))
    .filter((c) => c !== card.cvv)
    .slice(0, n);

/** Expiries (YYMM) that are not the card's, none of them past. */
const wrongExpiries = (card: Card, n: number) => {
  const out: string[] = [];
  for (let y = 40; out.length < n; y++) for (let m = 1; m <= 12 && out.length < n; m++) out.push(`${y}${String(m).padStart(2, '0')}`);
  return out.filter((e) => e !== card.expiry);
};

/** Sends every message at once, spread over the connections; the answers' field 39 in the order sent. */
async function inFlight(peers: Peer[], msgs: IsoMessage[]): Promise<string[]> {
  const answers = msgs.map((m, i) => {
    const peer = peers[i % peers.length] as Peer;
    peer.send(m);
    return peer.next();
  });
  const byStan = new Map((await Promise.all(answers)).map((b) => decode(b)).map((a) => [a.fields.get(11), a.fields.get(39) as string]));
  return msgs.map((m) => byStan.get(m.fields.get(11)) as string);
}

const tally = (codes: string[]) => Object.fromEntries([...new Set(codes)].sort().map((c) => [c, codes.filter((x) => x === c).length]));

async function cardRow(h: Harness, cardId: string) {
  return h.db.database.db
    .selectFrom('cards')
    .select(['status', 'status_source', 'status_reason', 'verification_failures'])
    .where('id', '=', cardId)
    .executeTakeFirstOrThrow();
}

async function declines(h: Harness, cardId: string) {
  const rows = await h.db.database.db
    .selectFrom('authorizations')
    .select(['id', 'decline_reason', 'amount'])
    .where('card_id', '=', cardId)
    .where('approved', '=', 0)
    .orderBy('created_at')
    .execute();
  return rows;
}

async function statusEvents(h: Harness, cardId: string) {
  const rows = await h.db.database.db.selectFrom('callback_events').select('payload').where('type', '=', 'card.status').execute();
  return rows.map((r) => JSON.parse(r.payload) as Record<string, unknown>).filter((b) => b.cardId === cardId);
}

const count = (rows: Array<{ decline_reason: string | null }>, reason: string) => rows.filter((r) => r.decline_reason === reason).length;

/** Field 22 and whether fields 14 and 48 go: a purchase as the acceptor presents it. */
const presented = (card: Card, entry: string, opts: { expiry?: boolean; cvv2?: boolean } = {}) => {
  const msg = authorizationRequest(card, { amount: 100, extra: { 22: entry } });
  if (opts.expiry === false) msg.fields.delete(14);
  if (opts.cvv2 === false) msg.fields.delete(48);
  return msg;
};

eachDialect('card verification: failures counted, the card frozen for security (decisions §12.13)', (dialect) => {
  it('a CVV2 brute force over the link, 25 in flight: exactly 5 counted (82), then frozen (62), and the right CVV2 is declined 62', async (t) => {
    const { h, cardId, card, peers, peer } = await setup(t, dialect);
    const codes = await inFlight(
      peers,
      wrongCvvs(card, 25).map((cvv) => authorizationRequest({ ...card, cvv }, { amount: 1 })),
    );
    assert.deepEqual(tally(codes), { 62: 20, 82: 5 }, 'exactly the 5th counted failure froze the card');
    const row = await cardRow(h, cardId);
    assert.deepEqual([row.status, row.status_source], ['frozen', 'security']);
    assert.match(row.status_reason ?? '', /5 card verification failures/);
    assert.equal((JSON.parse(row.verification_failures ?? '[]') as number[]).length, 5, '5 counted');
    const rows = await declines(h, cardId);
    assert.deepEqual([rows.length, count(rows, 'cvv2_mismatch'), count(rows, 'card_inactive')], [25, 5, 20]);

    // The right CVV2, after the freeze: declined, nothing held.
    assert.equal((await peer.ask(authorizationRequest(card, { amount: 1 }))).fields.get(39), '62');
    assert.deepEqual(await balances(h, cardId), { available: 100, ledger: 100, status: 'frozen' });

    // Each mismatch is a declined authorization: tradeQuery reads it, the 4.1 list does not list it.
    const mismatch = rows.find((r) => r.decline_reason === 'cvv2_mismatch');
    const q = await ok(h, '/api/network/tradeQuery.html', { tradeId: mismatch?.id });
    assert.deepEqual(
      [q.authorization.decision.approved, q.authorization.decision.declineReason, q.authorization.decision.code],
      [false, 'cvv2_mismatch', '2731'],
    );
    const listed = (await todaysTrades(h, cardId, { tradeStatusList: [1, 2, 3, 6, 7, 10] })).map((r) => r.tradeId);
    assert.equal(listed.length, 1, 'only the top-up is listed');
    assert.ok(!rows.some((r) => listed.includes(r.id)));

    // The freeze: one card.status callback, one audit record naming the network, the metrics.
    const events = await statusEvents(h, cardId);
    assert.deepEqual(
      events.map((e) => [e.status, e.source, e.actor]),
      [['frozen', 'security', 'security']],
    );
    const audit = await h.db.database.db.selectFrom('audit_events').selectAll().where('target', '=', cardId).execute();
    assert.deepEqual(
      audit.map((a) => [a.action, a.source, a.actor]),
      [['card.freeze', 'network', '12345678']],
    );
    const metrics = await h.app.svc.metrics.text();
    assert.match(metrics, /^cardprogram_cards_frozen_security_total\{via="link"\} 1$/m);
    assert.match(metrics, /^cardprogram_verification_failures_total\{kind="cvv2",via="link"\} 5$/m);
  });

  it('an expiry brute force the same: 5 counted (54), then 62; the right expiry is declined 62', async (t) => {
    const { h, cardId, card, peers, peer } = await setup(t, dialect);
    const codes = await inFlight(
      peers,
      wrongExpiries(card, 25).map((expiry) => authorizationRequest({ ...card, expiry }, { amount: 1 })),
    );
    assert.deepEqual(tally(codes), { 54: 5, 62: 20 });
    const row = await cardRow(h, cardId);
    assert.deepEqual([row.status, row.status_source], ['frozen', 'security']);
    const rows = await declines(h, cardId);
    assert.deepEqual([count(rows, 'expiry_mismatch'), count(rows, 'card_inactive')], [5, 20]);
    assert.equal((await peer.ask(authorizationRequest(card, { amount: 1 }))).fields.get(39), '62');
    assert.match(await h.app.svc.metrics.text(), /^cardprogram_verification_failures_total\{kind="expiry",via="link"\} 5$/m);
  });

  it('the sandbox checks cvv2 and expiry as the link does, and counts with it: the 5th, in the sandbox, freezes', async (t) => {
    const { h, cardId, card, peer } = await setup(t, dialect);
    const [bad1, bad2, bad3] = wrongCvvs(card, 3) as [string, string, string];
    assert.equal((await peer.ask(authorizationRequest({ ...card, cvv: bad1 }))).fields.get(39), '82');
    assert.equal((await peer.ask(authorizationRequest({ ...card, expiry: '4001' }))).fields.get(39), '54');
    const sandbox = (body: Record<string, unknown>) =>
      h.call('/sandbox/network/authorize', { cardId, amount: 1, randomStr: randomStr(), ...body });
    for (const [body, reason] of [
      [{ cvv2: bad2 }, 'cvv2_mismatch'],
      [{ cvv2: bad3, expiry: card.expiry }, 'cvv2_mismatch'],
    ] as const) {
      const r = await sandbox(body);
      assert.deepEqual([r.status, r.body.code, r.body.detail?.declineReason], [409, '2731', reason]);
      const q = await ok(h, '/api/network/tradeQuery.html', { tradeId: r.body.detail.tradeId });
      assert.equal(q.authorization.decision.declineReason, reason);
    }
    assert.equal((await cardRow(h, cardId)).status, 'active', '4 counted');
    // Right data in the sandbox with only one of the two does not reset the count.
    assert.equal((await sandbox({ cvv2: card.cvv })).status, 200);
    const fifth = await sandbox({ expiry: '4002' });
    assert.deepEqual([fifth.status, fifth.body.code, fifth.body.detail?.declineReason], [409, '2731', 'expiry_mismatch']);
    const row = await cardRow(h, cardId);
    assert.deepEqual([row.status, row.status_source], ['frozen', 'security']);
    const audit = await h.db.database.db.selectFrom('audit_events').selectAll().where('target', '=', cardId).execute();
    assert.deepEqual(
      audit.map((a) => [a.action, a.source, a.actor]),
      [['card.freeze', 'merchant', h.merchant.appId]],
    );
    assert.match(await h.app.svc.metrics.text(), /^cardprogram_cards_frozen_security_total\{via="sandbox"\} 1$/m);
    // Frozen: the right data is declined by the status.
    const right = await sandbox({ cvv2: card.cvv, expiry: card.expiry });
    assert.deepEqual([right.status, right.body.code, right.body.detail?.declineReason], [409, '2724', 'card_inactive']);
    // Bad input is 1002, not a mismatch: nothing written.
    const before = (await declines(h, cardId)).length;
    for (const body of [{ cvv2: '12' }, { cvv2: '12a' }, { expiry: '2613x' }, { expiry: 2612 }]) {
      assert.deepEqual([(await sandbox(body)).body.code], ['1002'], JSON.stringify(body));
    }
    assert.equal((await declines(h, cardId)).length, before);
  });

  it('missing fields: key-entered or e-commerce without field 14 is 30; without a CVV2 05 (recorded, not counted); on file, card present, or CARDPROGRAM_REQUIRE_CVV2 off pass', async (t) => {
    const { h, cardId, card, peer } = await setup(t, dialect);
    const code = async (msg: IsoMessage) => (await peer.ask(msg)).fields.get(39);
    assert.equal(await code(presented(card, '810', { expiry: false })), '30');
    assert.equal(await code(presented(card, '012', { expiry: false })), '30');
    assert.equal(await code(presented(card, '810', { expiry: false, cvv2: false })), '30');
    assert.equal((await declines(h, cardId)).length, 0, 'a format error writes nothing');
    for (let i = 0; i < 6; i++) assert.equal(await code(presented(card, i % 2 ? '010' : '812', { cvv2: false })), '05');
    const rows = await declines(h, cardId);
    assert.deepEqual([rows.length, count(rows, 'card_verification_missing')], [6, 6]);
    const q = await ok(h, '/api/network/tradeQuery.html', { tradeId: rows[0]?.id });
    assert.equal(q.authorization.decision.declineReason, 'card_verification_missing');
    const row = await cardRow(h, cardId);
    assert.deepEqual([row.status, row.verification_failures], ['active', null], 'a missing value is not a mismatch');
    // Credential on file (10x) needs no CVV2; nor a card present (chip).
    assert.equal(await code(presented(card, '102', { cvv2: false })), '00');
    assert.equal(await code(presented(card, '051', { cvv2: false, expiry: false })), '00');
    // CARDPROGRAM_REQUIRE_CVV2=off: e-commerce without a CVV2 passes; field 14 is still required.
    h.app.svc.config.program = { ...h.app.svc.config.program, requireCvv2: false };
    assert.equal(await code(presented(card, '810', { cvv2: false })), '00');
    assert.equal(await code(presented(card, '810', { expiry: false })), '30');
    assert.equal((await balances(h, cardId)).available, 97);
  });

  it('a balance inquiry with a wrong CVV2 is declined 82, recorded (amount 0) and counted', async (t) => {
    const { h, cardId, card, peer } = await setup(t, dialect);
    const wrong = wrongCvvs(card, 5);
    for (const cvv of wrong) {
      assert.equal((await peer.ask(authorizationRequest({ ...card, cvv }, { processing: '310000' }))).fields.get(39), '82');
    }
    const rows = await declines(h, cardId);
    assert.deepEqual(
      rows.map((r) => [r.decline_reason, Number(r.amount)]),
      wrong.map(() => ['cvv2_mismatch', 0]),
    );
    assert.equal((await cardRow(h, cardId)).status_source, 'security');
    assert.equal((await peer.ask(authorizationRequest(card, { processing: '310000' }))).fields.get(39), '62');
  });

  it('the count resets on an approval that carried both (not one with the CVV2 only), and on an unfreeze', async (t) => {
    const { h, cardId, card, peer } = await setup(t, dialect);
    const wrong = wrongCvvs(card, 20);
    const miss = async () =>
      assert.equal((await peer.ask(authorizationRequest({ ...card, cvv: wrong.pop() as string }))).fields.get(39), '82');
    for (let i = 0; i < 4; i++) await miss();
    assert.equal((await peer.ask(authorizationRequest(card, { amount: 100 }))).fields.get(39), '00', 'both, right: resets');
    assert.equal((await cardRow(h, cardId)).verification_failures, null);
    for (let i = 0; i < 4; i++) await miss();
    assert.equal((await cardRow(h, cardId)).status, 'active', '4 since the reset');
    // Card present with the CVV2 but no expiry: approved, but it did not carry both.
    assert.equal((await peer.ask(presented(card, '051', { expiry: false }))).fields.get(39), '00');
    await miss();
    assert.equal((await cardRow(h, cardId)).status_source, 'security', 'the 5th since the reset');

    // The merchant lifts it: the count starts again.
    const unfrozen = await ok(h, '/api/network/cardUnfreeze.html', { cardId });
    assert.deepEqual([unfrozen.status, unfrozen.statusSource], ['active', null]);
    assert.equal((await cardRow(h, cardId)).verification_failures, null);
    for (let i = 0; i < 4; i++) await miss();
    assert.equal((await cardRow(h, cardId)).status, 'active');
    await miss();
    assert.equal((await cardRow(h, cardId)).status_source, 'security');
  });
});
