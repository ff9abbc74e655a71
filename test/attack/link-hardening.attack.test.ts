import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { type Socket, connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import { clearingFile, importClearing } from '../../src/card-network/clearing-file.js';
import { startLink } from '../../src/card-network/link/listener.js';
import type { Actor } from '../../src/context.js';
import { DomainError } from '../../src/errors.js';
import { decode, encode, message } from '../../src/iso8583/codec.js';
import { FrameReader, frame } from '../../src/iso8583/frame.js';
import { checkLedger } from '../../src/ledger/check.js';
import { postException, returnException } from '../../src/ledger/exceptions.js';
import { type ExceptionRecord, listExceptions } from '../../src/ledger/exceptions-query.js';
import { runVerb } from '../../src/runner.js';
import { build, type Harness } from '../helpers/app.js';
import { balances, fundedCard, todaysTrades } from '../helpers/cards.js';
import { certificateAuthority, selfSigned } from '../helpers/certs.js';
import { amount12, naming } from '../helpers/clearing.js';
import { eachDialect } from '../helpers/dialects.js';
import { authorizationRequest, cardSecrets, linkOf, Peer, trace } from '../helpers/link.js';
import { eventually } from '../helpers/receiver.js';

/**
 * Issue 39, the attack pass after it was built (an outsider against the link, the port and the
 * reports): each finding reproduced through the real service (the link over TCP, or TLS where the
 * port is the subject), on SQLite and PostgreSQL, and failing before its fix.
 */

async function clean(h: Harness): Promise<void> {
  assert.deepEqual((await checkLedger(h.db.database)).problems, []);
}

async function linked(
  t: Parameters<typeof build>[0],
  dialect: Parameters<typeof build>[1],
  topUp = 100,
  overrides: Parameters<typeof build>[2] = {},
) {
  const h = await build(t, dialect, overrides);
  const { cardId } = await fundedCard(h, { topUp });
  const card = await cardSecrets(h, cardId);
  const link = await linkOf(t, h);
  const peer = await Peer.open(t, link.port);
  return { h, cardId, card, peer, port: link.port };
}

const ALICE: Actor = { kind: 'operator', via: 'cli', who: 'alice', origin: 'test' };

/** An operator's decision on an exception, as the CLI runs it. */
const decide = (h: Harness, verb: typeof postException | typeof returnException, exceptionId: string): Promise<ExceptionRecord> =>
  runVerb(h.app.svc, verb, {
    input: { exceptionId },
    actor: ALICE,
    audit: { action: verb === postException ? 'exception.post' : 'exception.return', target: exceptionId },
  });

/** Forced posts above 50.00 EUR are held (the default ceilings are 5 000.00 and 10 000.00). */
const LOW_CEILING = {
  forcedPosts: { postMax: { EUR: 5_000, USDT: 5_000 }, debtMax: { EUR: 1_000_000, USDT: 1_000_000 } },
};

/** The card's available balance and what it holds, minor units. */
async function money(h: Harness, cardId: string) {
  const c = await h.db.database.db
    .selectFrom('cards')
    .select(['available_balance', 'ledger_balance', 'debt'])
    .where('id', '=', cardId)
    .executeTakeFirstOrThrow();
  // The column ledger_balance is available + held (cardQuery's ledgerBalance also takes the debt off).
  return { available: Number(c.available_balance), held: Number(c.ledger_balance) - Number(c.available_balance), debt: Number(c.debt) };
}

/** The link's CA, the service's certificate and the listed peer's. */
function pki() {
  const dir = mkdtempSync(join(tmpdir(), 'cp-attack-'));
  const ca = certificateAuthority(dir, 'link-ca');
  return { ca, server: selfSigned(dir, 'localhost'), peer: ca.issue('acquirer one') };
}

/** A raw TCP connection from `from` that never starts its handshake; resolves once connected (or closed). */
function idle(port: number, from: string): Promise<{ socket: Socket; closed: () => boolean }> {
  return new Promise((resolve) => {
    let closed = false;
    const socket = tcpConnect({ port, host: '127.0.0.1', localAddress: from });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      closed = true;
    });
    const done = () => resolve({ socket, closed: () => closed });
    socket.once('connect', done);
    socket.once('close', done);
  });
}

/** The certified peer's echo (0800, 301) over TLS, on `raw` when given (a TCP connection made earlier): field 39, or 'closed'. */
function peerEcho(port: number, p: ReturnType<typeof pki>, raw?: Socket): Promise<string> {
  return new Promise((resolve) => {
    const tls = {
      servername: 'localhost',
      ca: readFileSync(p.server.certFile),
      cert: readFileSync(p.peer.certFile),
      key: readFileSync(p.peer.keyFile),
    };
    const socket = raw ? tlsConnect({ ...tls, socket: raw }) : tlsConnect({ ...tls, port, host: '127.0.0.1' });
    const reader = new FrameReader();
    socket.on('secureConnect', () => socket.write(frame(encode(message('0800', { ...trace(), 70: '301' })))));
    socket.on('data', (d) => {
      const [f] = reader.push(d);
      if (f) {
        resolve(decode(f).fields.get(39) ?? '');
        socket.destroy();
      }
    });
    socket.on('error', () => resolve('closed'));
    socket.on('close', () => resolve('closed'));
  });
}

eachDialect('attack on the hardened link (issue 39)', (dialect) => {
  it('F1: connections that never handshake cannot starve the certified peer: a full cap evicts the oldest unfinished handshake; the peer’s addresses are remembered across a restart', async (t) => {
    const h = await build(t, dialect);
    const p = pki();
    h.app.svc.config.network = {
      ...h.app.svc.config.network,
      tls: { ca: p.ca.certFile, cert: p.server.certFile, key: p.server.keyFile },
      maxConnections: 4,
      peers: ['acquirer one'],
    };
    const link = await linkOf(t, h);
    const flood: Array<{ socket: Socket; closed: () => boolean }> = [];
    t.after(() => {
      for (const c of flood) c.socket.destroy();
    });
    const strangers = async (port: number, n: number, first: number) => {
      for (let i = 0; i < n; i++) flood.push(await idle(port, `127.0.0.${first + (i % 50)}`));
    };
    // A fresh service: nobody is known yet. The total (4) is full of connections that never handshake.
    await strangers(link.port, 4, 2);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(flood.filter((c) => !c.closed()).length, 4);
    // The certified peer's first connection is served at once (the oldest idle one made room), not after 10 s.
    assert.equal(await peerEcho(link.port, p), '00', 'the peer served while the cap is full');
    await eventually(
      async () => (await h.db.database.db.selectFrom('network_peer_addresses').select('address').execute()).length === 1,
      5000,
      'the peer’s address remembered',
    );

    // A restart of the link: its memory is gone, the database remembers the peer's address.
    await link.stop();
    for (const c of flood) c.socket.destroy();
    const again = await startLink(h.app.svc);
    assert.ok(again);
    t.after(() => again.stop());
    flood.length = 0;
    await strangers(again.port, 4, 10);
    // The peer's connection begins (its handshake not started yet) while 1 000 strangers keep coming:
    // each new one evicts the oldest unfinished handshake of an address not known, never the peer's.
    const raw = await idle(again.port, '127.0.0.1');
    assert.equal(raw.closed(), false, 'admitted beyond the total (a known address)');
    await strangers(again.port, 1000, 100);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(raw.closed(), false, 'not evicted by strangers');
    assert.ok(flood.filter((c) => !c.closed()).length <= 4, 'the strangers hold at most the total');
    assert.equal(await peerEcho(again.port, p, raw.socket), '00', 'the peer served');
    assert.equal((await h.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200, 'the HTTP API answers');
  });

  it('F2: an 0100/0200 without field 22, or with a POS entry mode not listed, is 30: the card checks cannot be skipped, nothing booked or approved', async (t) => {
    const { h, cardId, card, peer } = await linked(t, dialect);
    // A wrong CVV2 and a wrong expiry: with field 22 left out (or not one of the listed modes) the
    // card-not-present checks were skipped and the purchase approved.
    const wrong = { ...card, cvv: card.cvv === '999' ? '998' : '999', expiry: card.expiry === '3012' ? '3011' : '3012' };
    const before = await todaysTrades(h, cardId);
    const modes: Array<string | undefined> = [undefined, '000', '020', '990', '800', '950'];
    for (const mti of ['0100', '0200']) {
      for (const mode of modes) {
        const msg = authorizationRequest(wrong, { amount: 100, mti });
        if (mode === undefined) msg.fields.delete(22);
        else msg.fields.set(22, mode);
        // Without field 14 and 48 too: nothing to compare at all.
        const bare = authorizationRequest(card, { amount: 100, mti });
        bare.fields.delete(14);
        bare.fields.delete(48);
        if (mode === undefined) bare.fields.delete(22);
        else bare.fields.set(22, mode);
        for (const m of [bare, msg]) {
          const a = await peer.ask(m);
          assert.equal(a.fields.get(39), '30', `${mti} field 22 ${mode ?? 'absent'}: ${a.fields.get(39)}`);
          assert.equal(a.fields.get(38), undefined, 'no authorization code');
        }
      }
    }
    assert.deepEqual(await todaysTrades(h, cardId), before, 'nothing booked');
    const b = await balances(h, cardId);
    assert.equal(b.available, 100, 'the card untouched');
    // Not counted as mismatches either: the card stays active.
    assert.equal(b.status, 'active');
    // A listed mode still decides as before.
    const good = await peer.ask(authorizationRequest(card, { amount: 100 }));
    assert.equal(good.fields.get(39), '00');
    const cash = authorizationRequest(card, { amount: 100, processing: '010000', extra: { 22: '051' } });
    assert.notEqual((await peer.ask(cash)).fields.get(39), '30');
    await clean(h);
  });

  it('F4: a conversion beyond the largest amount (10^12 minor units) is 13, nothing booked: an 0100, an 0200, an 0220 with and without an original', async (t) => {
    const { h, cardId, card, peer } = await linked(t, dialect, 1000);
    // 9 999 999 999.99 GBP is 11 764 705 882.34 EUR at the program's rates: beyond MAX_MINOR in EUR.
    const huge = 999_999_999_999;
    const gbp = { currency: '826', amount: huge };
    const before = await todaysTrades(h, cardId);
    for (const mti of ['0100', '0200']) {
      const a = await peer.ask(authorizationRequest(card, { ...gbp, mti }));
      assert.equal(a.fields.get(39), '13', `${mti}: ${a.fields.get(39)}`);
    }
    // A clearing without an original (a forced post on the card of field 2).
    const forced = message('0220', {
      2: card.pan,
      3: '000000',
      4: String(huge).padStart(12, '0'),
      ...trace(),
      32: '12345678',
      49: '826',
    });
    assert.equal((await peer.ask(forced)).fields.get(39), '13', 'a forced clearing');
    // A clearing of a 1.00 GBP authorization, for 9 999 999 999.99 GBP: at the authorization's ratio, beyond the largest amount.
    const auth = authorizationRequest(card, { currency: '826', amount: 100 });
    assert.equal((await peer.ask(auth)).fields.get(39), '00');
    const o = auth.fields;
    const clearingOf = message('0220', {
      3: '000000',
      4: String(huge).padStart(12, '0'),
      ...trace(),
      32: '12345678',
      49: '826',
      90: `0100${o.get(11)}${o.get(7)}${(o.get(32) as string).padStart(11, '0')}${'0'.repeat(11)}`,
    });
    assert.equal((await peer.ask(clearingOf)).fields.get(39), '13', 'a clearing above its hold');
    // The connection is still up, and nothing but the 1.00 GBP hold was booked.
    assert.equal((await peer.ask(message('0800', { ...trace(), 70: '301' }))).fields.get(39), '00');
    const after = await todaysTrades(h, cardId);
    assert.equal(after.length, before.length + 1, JSON.stringify(after));
    const open = await h.db.database.db.selectFrom('network_exceptions').select('id').execute();
    assert.deepEqual(open, [], 'nothing held in suspense either');
    await clean(h);
  });

  it('F3/F7: the import reports each line by the answer its verb gave: a clearing held in suspense is `held`, not posted; the totals count the outcomes', async (t) => {
    const { h, cardId, card, peer } = await linked(t, dialect, 1000);
    const auth = authorizationRequest(card, { amount: 2000 });
    assert.equal((await peer.ask(auth)).fields.get(39), '00');
    const noOriginal = (minor: number) =>
      message('0220', { 2: card.pan, 3: '000000', 4: amount12(minor), ...trace(), 32: '12345678', 49: '978' });
    // Above CARDPROGRAM_FORCED_POST_MAX (5 000.00): acknowledged and held in suspense, not on the card.
    const held = noOriginal(600_000);
    const forced = noOriginal(1_000);
    const matched = naming(auth, '0220', 2000);
    const report = await importClearing(h.app.svc, clearingFile([held, forced, matched]));
    const [l1, l2, l3] = report.lines;
    const [exception] = await listExceptions(h.db.database.db);
    assert.ok(exception, 'one exception');
    assert.equal(l1?.outcome, 'held', JSON.stringify(l1));
    assert.equal(l1?.posted, undefined, 'nothing posted');
    assert.match(l1?.reason ?? '', new RegExp(exception.exceptionId));
    assert.equal(l2?.outcome, 'forced', JSON.stringify(l2));
    assert.deepEqual(l2?.posted, { movement: 'cleared', currency: 'EUR', amount: 10 });
    assert.equal(l3?.outcome, 'matched', JSON.stringify(l3));
    assert.deepEqual(l3?.posted, { movement: 'cleared', currency: 'EUR', amount: 20 });
    const [eur] = report.totals;
    assert.deepEqual(
      eur && [eur.messages, eur.matched, eur.forced, eur.held, eur.refused, eur.duplicate, eur.cleared],
      [3, 1, 1, 1, 0, 0, 30],
      JSON.stringify(report.totals),
    );
    // The card was charged what the report says it posted, no more.
    assert.equal((await balances(h, cardId)).available, 1000 - 30);
    await clean(h);
  });

  it('F5: a held 0120 whose clearing was posted without it cannot be posted too (charged twice): refused, the exception marked and explained', async (t) => {
    const { h, cardId, card, peer } = await linked(t, dialect, 100, LOW_CEILING);
    // An 0120 of 60.00, above the 50.00 ceiling: held. Its clearing of 40.00 names it: a forced post on the card.
    const advice = authorizationRequest(card, { amount: 6000, mti: '0120' });
    assert.equal((await peer.ask(advice)).fields.get(39), '00');
    const [held] = await listExceptions(h.db.database.db);
    assert.equal(held?.kind, 'authorization');
    assert.equal((await peer.ask(naming(advice, '0220', 4000))).fields.get(39), '00');
    assert.deepEqual(await money(h, cardId), { available: 6000, held: 0, debt: 0 }, 'charged 40.00 once');
    const [marked] = await listExceptions(h.db.database.db);
    assert.ok(marked?.consumedBy, JSON.stringify(marked));
    assert.match(marked?.reason ?? '', /charge the card twice/);
    await assert.rejects(decide(h, postException, held?.exceptionId as string), (err: unknown) => {
      assert.ok(err instanceof DomainError && err.kind === 'tradeState', String(err));
      assert.match(err.message, /charge the card twice/);
      return true;
    });
    assert.deepEqual(await money(h, cardId), { available: 6000, held: 0, debt: 0 }, 'still charged once');
    assert.equal((await listExceptions(h.db.database.db))[0]?.status, 'open', 'nothing decided');
    // Returning it is the way out: nothing moves.
    assert.equal((await decide(h, returnException, held?.exceptionId as string)).status, 'returned');
    assert.deepEqual(await money(h, cardId), { available: 6000, held: 0, debt: 0 });
    await clean(h);
  });

  it('F5: the operator’s post of a held 0120 and its clearing at the same moment: the card is charged once, whichever wins', async (t) => {
    const { h, cardId, card, peer } = await linked(t, dialect, 1000, LOW_CEILING);
    for (let round = 0; round < 6; round++) {
      const before = await money(h, cardId);
      const advice = authorizationRequest(card, { amount: 6000, mti: '0120' });
      assert.equal((await peer.ask(advice)).fields.get(39), '00');
      const open = (await listExceptions(h.db.database.db)).find((e) => e.kind === 'authorization');
      assert.ok(open);
      const [posted, cleared] = await Promise.allSettled([
        decide(h, postException, open.exceptionId),
        peer.ask(naming(advice, '0220', 4000)),
      ]);
      assert.equal(cleared.status === 'fulfilled' && cleared.value.fields.get(39), '00');
      const after = await money(h, cardId);
      // Either way 40.00 was paid and nothing more is held: the hold, if posted first, was cleared by it (the rest released).
      assert.deepEqual(
        [before.available - after.available, after.held - before.held],
        [4000, 0],
        `round ${round}: operator ${posted.status}; ${JSON.stringify({ before, after })}`,
      );
      if (posted.status === 'rejected') await decide(h, returnException, open.exceptionId);
      assert.deepEqual(await listExceptions(h.db.database.db), [], 'nothing left open');
    }
    await clean(h);
  });

  it('F6: a refund of a clearing held in suspense is held with it: no credit for a charge never made; posted with the clearing, returned with it', async (t) => {
    const { h, cardId, card, peer } = await linked(t, dialect, 100, LOW_CEILING);
    const db = h.db.database.db;
    const noOriginal = () => message('0220', { 2: card.pan, 3: '000000', 4: amount12(6000), ...trace(), 32: '12345678', 49: '978' });
    // A clearing of 60.00 above the 50.00 ceiling: held. A refund of 20.00 of it arrives before anyone decides.
    const clearing = noOriginal();
    assert.equal((await peer.ask(clearing)).fields.get(39), '00');
    const refund = naming(clearing, '0220', 2000, { processing: '200000' });
    assert.equal((await peer.ask(refund)).fields.get(39), '00', 'acknowledged');
    assert.deepEqual(await money(h, cardId), { available: 10000, held: 0, debt: 0 }, 'no credit for a charge never made');
    const open = await listExceptions(db);
    const c = open.find((e) => e.kind === 'clearing');
    const r = open.find((e) => e.kind === 'refund');
    assert.ok(c && r, JSON.stringify(open));
    assert.equal(r.heldWith, c.exceptionId);
    assert.match(r.reason, /waits with it/);
    // The refund cannot be posted alone.
    await assert.rejects(decide(h, postException, r.exceptionId), /waits with the clearing/);
    // Posted with its clearing: charged 60.00, refunded 20.00.
    assert.equal((await decide(h, postException, c.exceptionId)).status, 'posted');
    assert.deepEqual(await money(h, cardId), { available: 10000 - 4000, held: 0, debt: 0 });
    assert.equal((await listExceptions(db, { status: 'posted' })).length, 2, 'the refund posted with it');
    // A later refund of the posted clearing refunds its payment at once.
    assert.equal((await peer.ask(naming(clearing, '0220', 1000, { processing: '200000' }))).fields.get(39), '00');
    assert.deepEqual(await money(h, cardId), { available: 10000 - 3000, held: 0, debt: 0 });
    await clean(h);

    // Another held clearing and its refund, returned: nothing reaches the card; a refund after the return is held, for returning.
    const second = noOriginal();
    assert.equal((await peer.ask(second)).fields.get(39), '00');
    assert.equal((await peer.ask(naming(second, '0220', 2500, { processing: '200000' }))).fields.get(39), '00');
    const c2 = (await listExceptions(db)).find((e) => e.kind === 'clearing');
    assert.ok(c2);
    await decide(h, returnException, c2.exceptionId);
    assert.deepEqual(await listExceptions(db), [], 'its refund returned with it');
    assert.equal((await peer.ask(naming(second, '0220', 500, { processing: '200000' }))).fields.get(39), '00');
    const late = await listExceptions(db);
    assert.equal(late.length, 1);
    await assert.rejects(decide(h, postException, late[0]?.exceptionId as string), /never charged/);
    await decide(h, returnException, late[0]?.exceptionId as string);
    assert.deepEqual(await money(h, cardId), { available: 10000 - 3000, held: 0, debt: 0 }, 'the card untouched by the second');
    await clean(h);
  });
});
