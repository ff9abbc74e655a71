import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import { buildApp } from '../../src/app.js';
import { startLink } from '../../src/card-network/link/listener.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { withTrades } from '../../src/db/trades-table.js';
import { decode, encode, message } from '../../src/iso8583/codec.js';
import { FrameReader, frame } from '../../src/iso8583/frame.js';
import { serve } from '../../src/server.js';
import { build, type Harness, randomStr, testConfig } from '../helpers/app.js';
import { balances, fundedCard, ok, todaysTrades } from '../helpers/cards.js';
import { selfSigned } from '../helpers/certs.js';
import { childDatabaseUrl } from '../helpers/cli.js';
import { isolatedDatabase } from '../helpers/db.js';
import { eachDialect } from '../helpers/dialects.js';
import { authorizationRequest, cardSecrets, linkOf, Peer } from '../helpers/link.js';
import { testLogging } from '../helpers/log-audit.js';
import { receiver } from '../helpers/receiver.js';

const hexOf = (b: Uint8Array) => Buffer.from(b).toString('hex').toUpperCase();
const fields = (m: { fields: Map<number, string> }) => Object.fromEntries(m.fields);

async function count(h: Harness, table: 'network_messages' | 'trades' | 'authorizations'): Promise<number> {
  const row = await withTrades(h.db.database.db)
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

async function setup(t: Parameters<typeof build>[0], dialect: Parameters<typeof build>[1], topUp = 100) {
  const h = await build(t, dialect);
  const { cardId } = await fundedCard(h, { topUp });
  const card = await cardSecrets(h, cardId);
  const link = await linkOf(t, h);
  const peer = await Peer.open(t, link.port);
  return { h, cardId, card, link, peer };
}

eachDialect('network link: 0800 and 0100 over loopback TCP (decisions §12)', (dialect) => {
  it('answers an echo, a sign-on and a sign-off (golden frames)', async (t) => {
    const { h, peer } = await setup(t, dialect);
    // 0800 echo: length 0x37, MTI, primary bitmap (1, 7, 11), secondary (70), fields 7, 11, 70 — as hex on the wire.
    const echo = '0037' + '30383030383232303030303030303030303030303034303030303030303030303030303031313235313731353030303030303031333031';
    assert.equal(
      hexOf(frame(encode(message('0800', { 7: '1125171500', 11: '000001', 70: '301' })))),
      echo,
      'the codec writes the golden frame',
    );
    peer.writeRaw(Buffer.from(echo, 'hex'));
    const answer = await peer.next();
    // 0810: bitmap 1, 7, 11, 39; secondary 70; field 39 = 00 between 11 and 70.
    assert.equal(
      hexOf(answer),
      '303831303832323030303030303230303030303030343030303030303030303030303030313132353137313530303030303030313030333031',
      'the 0810: fields 7, 11 and 70 echoed, 39 = 00',
    );
    for (const code of ['001', '002', '301']) {
      const a = await peer.ask(message('0800', { 7: '1125171500', 11: '000002', 70: code }));
      assert.deepEqual([a.mti, fields(a)], ['0810', { 7: '1125171500', 11: '000002', 39: '00', 70: code }]);
    }
    const unknown = await peer.ask(message('0800', { 7: '1125171500', 11: '000003', 70: '999' }));
    assert.equal(unknown.fields.get(39), '12');
    await peer.ask(message('0800', { 7: '1125171500', 11: '000004', 70: '001' }));
    const metrics = await h.app.svc.metrics.text();
    assert.match(metrics, /^cardprogram_network_connections 1$/m);
    assert.match(metrics, /^cardprogram_network_signed_on_peers 1$/m);
    assert.match(metrics, /^cardprogram_network_messages_total\{mti="0810",code="00"\} 5$/m);
  });

  it('approves a purchase: the answer field by field, the hold, the 4.1 record, tradeQuery, the stored copy without PAN or CVV2', async (t) => {
    const { h, cardId, card, peer } = await setup(t, dialect);
    const req = authorizationRequest(card, { amount: 1234 });
    const a = await peer.ask(req);
    assert.equal(a.mti, '0110');
    const f = fields(a);
    assert.equal(f[39], '00', JSON.stringify(f));
    for (const n of [3, 4, 7, 11, 12, 13, 32, 37, 41, 42, 49]) assert.equal(f[n], req.fields.get(n), `field ${n} echoed`);
    for (const n of [2, 14, 48]) assert.equal(f[n], undefined, `field ${n} not echoed`);
    assert.match(f[38] as string, /^[A-Za-z0-9 ]{6}$/);
    assert.deepEqual(
      Object.keys(f)
        .map(Number)
        .sort((x, y) => x - y),
      [3, 4, 7, 11, 12, 13, 32, 37, 38, 39, 41, 42, 49],
    );

    assert.deepEqual(await balances(h, cardId), { available: 100 - 12.34, ledger: 100, status: 'active' });
    const stored = await h.db.database.db.selectFrom('network_messages').selectAll().executeTakeFirstOrThrow();
    const q = await ok(h, '/api/network/tradeQuery.html', { tradeId: stored.trade_id });
    assert.equal(q.trade.authCode, f[38], 'field 38 is the trade’s authCode');
    assert.deepEqual(q.authorization.merchant, { mcc: '5411', name: 'Corner Grocery', city: 'Berlin', country: 'DE' });
    assert.equal(q.authorization.channel, 'ecommerce');
    assert.equal(q.trade.amount, 12.34);
    assert.ok(
      (await todaysTrades(h, cardId)).some((r) => r.tradeId === stored.trade_id),
      'in the 4.1 list',
    );

    assert.equal(stored.response_code, '00');
    const copy = JSON.parse(stored.request) as Record<string, string>;
    assert.equal(copy[2], `${card.pan.slice(0, 6)}${'*'.repeat(card.pan.length - 10)}${card.pan.slice(-4)}`);
    assert.equal(copy[48], undefined, 'field 48 without its CVV2 (nothing else in it)');
    const raw = JSON.stringify(stored);
    assert.ok(!raw.includes(card.pan) && !raw.includes(`92${'03'}${card.cvv}`), 'no PAN, no CVV2 stored');
  });

  it('exactly once: a retransmission and a repeat MTI get the first answer and act once; other content under the same identity is 94', async (t) => {
    const { h, cardId, card, peer } = await setup(t, dialect);
    const req = authorizationRequest(card, { amount: 500 });
    const first = await peer.ask(req);
    assert.equal(first.fields.get(39), '00');
    const again = await peer.ask(req);
    assert.deepEqual(fields(again), fields(first));
    const repeat = await peer.ask({ mti: '0101', fields: req.fields });
    assert.deepEqual([repeat.mti, fields(repeat)], ['0110', fields(first)]);
    // Concurrently too, on another connection.
    const other = await Peer.open(t, (await linkOf(t, h)).port);
    const both = await Promise.all([peer.ask(req), other.ask(req)]);
    for (const b of both) assert.deepEqual(fields(b), fields(first));
    assert.equal((await balances(h, cardId)).available, 95, 'held once');
    const changed = new Map(req.fields).set(4, '000000000600');
    const dup = await peer.ask({ mti: '0100', fields: changed });
    assert.equal(dup.fields.get(39), '94');
    assert.equal(await count(h, 'network_messages'), 1);
    assert.equal((await balances(h, cardId)).available, 95);
  });

  it('declines with the codes of §12.5, and answers a balance inquiry in field 54', async (t) => {
    const { h, cardId, card, peer } = await setup(t, dialect);
    const code = async (msg: ReturnType<typeof authorizationRequest>) => (await peer.ask(msg)).fields.get(39);
    assert.equal(await code(authorizationRequest({ ...card, cvv: card.cvv === '000' ? '001' : '000' })), '82');
    assert.equal(await code(authorizationRequest({ ...card, expiry: '0101' })), '54');
    const otherPan = `${card.pan.slice(0, -1)}${(Number(card.pan.at(-1)) + 1) % 10}`;
    assert.equal(await code(authorizationRequest({ ...card, pan: otherPan })), '14');
    assert.equal(await code(authorizationRequest(card, { amount: 100_000 })), '51');
    assert.equal(await code(authorizationRequest(card, { processing: '200000' })), '12');
    assert.equal(await code(authorizationRequest(card, { amount: 0 })), '13');
    assert.equal(await code(authorizationRequest(card, { currency: '999' })), '12');
    const balance = await peer.ask(authorizationRequest(card, { processing: '310000' }));
    assert.equal(balance.fields.get(39), '00');
    assert.equal(balance.fields.get(54), '0002978C000000010000', 'available 100.00 EUR');
    await ok(h, '/api/network/cardFreeze.html', { cardId });
    assert.equal(await code(authorizationRequest(card)), '62');
    await ok(h, '/api/network/cardClose.html', { cardId });
    assert.equal(await code(authorizationRequest(card)), '78');
    // The declines the sandbox records are recorded (tradeQuery reads them); since issue 39 (decisions
    // §12.13) the card data mismatches too, each counted against the card.
    assert.equal(await count(h, 'authorizations'), 5, 'CVV2, expiry, insufficient funds, frozen, closed');
    const reasons = await h.db.database.db.selectFrom('authorizations').select('decline_reason').orderBy('created_at').execute();
    assert.deepEqual(reasons.map((r) => r.decline_reason).sort(), [
      'card_inactive',
      'card_inactive',
      'cvv2_mismatch',
      'expiry_mismatch',
      'insufficient_funds',
    ]);
  });

  it('answers 91 and writes nothing when the decision cannot be made within the deadline', async (t) => {
    const { h, card, peer } = await setup(t, dialect);
    h.app.svc.config.network = { ...h.app.svc.config.network, deadlineMs: 1 };
    const a = await peer.ask(authorizationRequest(card));
    assert.equal(a.fields.get(39), '91');
    h.app.svc.config.network = { ...h.app.svc.config.network, deadlineMs: 1500 };
    assert.equal(await count(h, 'network_messages'), 0);
    assert.equal(await count(h, 'authorizations'), 0);
  });

  it('carries many messages in flight on one connection, answered by STAN', async (t) => {
    const { h, cardId, card, peer } = await setup(t, dialect);
    // Not this test's subject: a loaded machine must not turn answers into 91.
    h.app.svc.config.network = { ...h.app.svc.config.network, deadlineMs: 20_000 };
    const reqs = Array.from({ length: 40 }, () => authorizationRequest(card, { amount: 100 }));
    for (const r of reqs) peer.send(r);
    const answers = await Promise.all(reqs.map(() => peer.next().then(decode)));
    assert.deepEqual(answers.map((a) => a.fields.get(11)).sort(), reqs.map((r) => r.fields.get(11)).sort());
    assert.ok(answers.every((a) => a.fields.get(39) === '00'));
    assert.equal((await balances(h, cardId)).available, 60);
  });
});

const KEY = 'a3f1c29e5b7d4086e1f2a9c3b5d7e9f10c2e4a6b8d0f1e3c5a7b9d1f3e5c7a92';
const base = { CARDPROGRAM_DATA_DIR: mkdtempSync(join(tmpdir(), 'cp-net-')), CARDPROGRAM_MASTER_KEY: KEY };
const production = {
  ...base,
  CARDPROGRAM_ENV: 'production',
  CARDPROGRAM_PUBLIC_URL: 'https://cards.example.com',
  CARDPROGRAM_BINS: '{"EUR":"411111","USDT":"511111"}',
};

it('configuration: off unless CARDPROGRAM_NETWORK_PORT is set; production refuses plain TCP in one line; plain TCP on loopback only', () => {
  assert.equal(loadConfig(base).network.port, null);
  const on = loadConfig({ ...base, CARDPROGRAM_NETWORK_PORT: '8583' }).network;
  assert.deepEqual(
    { ...on, currencies: { ...on.currencies } },
    {
      port: 8583,
      host: '127.0.0.1',
      maxFrame: 4096,
      idleMs: 120_000,
      deadlineMs: 1500,
      tls: null,
      currencies: { EUR: '978', USDT: '840' },
      maxConnections: 64,
      maxPerAddress: 8,
      handshakeMs: 10_000,
      peers: null,
    },
  );
  const refuse = (env: Record<string, string>, pattern: RegExp) =>
    assert.throws(
      () => loadConfig(env),
      (e: unknown) => e instanceof ConfigError && pattern.test(e.message) && !e.message.includes('\n'),
    );
  refuse({ ...production, CARDPROGRAM_NETWORK_PORT: '8583' }, /TLS with client certificates in production.*plain TCP is refused/);
  refuse({ ...base, CARDPROGRAM_NETWORK_PORT: '8583', CARDPROGRAM_NETWORK_HOST: '0.0.0.0' }, /loopback address only/);
  refuse({ ...base, CARDPROGRAM_NETWORK_TLS_CA: '/etc/hostname' }, /go together/);
  // Every missing file named at once, one line each (issue 30.7).
  assert.throws(
    () =>
      loadConfig({
        ...base,
        CARDPROGRAM_NETWORK_TLS_CA: '/nope',
        CARDPROGRAM_NETWORK_TLS_CERT: '/nope',
        CARDPROGRAM_NETWORK_TLS_KEY: '/nope',
      }),
    (e: unknown) =>
      e instanceof ConfigError &&
      e.message ===
        [
          '3 configuration problems:',
          '- CARDPROGRAM_NETWORK_TLS_CA: no file /nope',
          '- CARDPROGRAM_NETWORK_TLS_CERT: no file /nope',
          '- CARDPROGRAM_NETWORK_TLS_KEY: no file /nope',
        ].join('\n'),
  );
  refuse({ ...base, CARDPROGRAM_NETWORK_MAX_FRAME: '10' }, /CARDPROGRAM_NETWORK_MAX_FRAME must be between/);
  refuse({ ...base, CARDPROGRAM_NETWORK_DEADLINE_MS: 'soon' }, /CARDPROGRAM_NETWORK_DEADLINE_MS must be a whole number/);
  refuse({ ...base, CARDPROGRAM_NETWORK_CURRENCIES: '{"USDT":"USD"}' }, /3 digits/);
  const dir = mkdtempSync(join(tmpdir(), 'cp-net-tls-'));
  const server = selfSigned(dir, 'localhost');
  const tls = loadConfig({
    ...production,
    CARDPROGRAM_NETWORK_PORT: '8583',
    CARDPROGRAM_NETWORK_HOST: '0.0.0.0',
    CARDPROGRAM_NETWORK_TLS_CA: server.certFile,
    CARDPROGRAM_NETWORK_TLS_CERT: server.certFile,
    CARDPROGRAM_NETWORK_TLS_KEY: server.keyFile,
  }).network;
  assert.deepEqual(tls.tls, { ca: server.certFile, cert: server.certFile, key: server.keyFile });
});

eachDialect('network link: started and stopped with the service', (dialect) => {
  it('serve() opens the link beside HTTP, and stop() closes it', async (t) => {
    const db = await isolatedDatabase(dialect);
    const config = testConfig(db.dataDir, { databaseUrl: childDatabaseUrl(db), logLevel: 'silent' });
    const running = await serve({ ...config, network: { ...config.network, port: 0 } }, { handleSignals: false });
    let stopped = false;
    t.after(async () => {
      if (!stopped) await running.stop();
      await db.cleanup();
    });
    assert.ok(running.networkPort);
    const peer = await Peer.open(t, running.networkPort);
    const a = await peer.ask(message('0800', { 7: '1125171500', 11: '000001', 70: '001' }));
    assert.equal(a.fields.get(39), '00');
    await running.stop();
    stopped = true;
    await peer.closed;
  });

  it('TLS: a peer with a certificate the CA signed is served; one without a certificate is refused', async (t) => {
    const db = await isolatedDatabase(dialect);
    const dir = mkdtempSync(join(tmpdir(), 'cp-net-tls-'));
    const server = selfSigned(dir, 'localhost');
    const client = selfSigned(dir, 'acquirer');
    const config = testConfig(db.dataDir, { databaseUrl: childDatabaseUrl(db), logLevel: 'silent' });
    const running = await serve(
      { ...config, network: { ...config.network, port: 0, tls: { ca: client.certFile, cert: server.certFile, key: server.keyFile } } },
      { handleSignals: false },
    );
    t.after(async () => {
      await running.stop();
      await db.cleanup();
    });
    const port = running.networkPort as number;
    const ask = (withCert: boolean) =>
      new Promise<string>((resolve, reject) => {
        const socket = tlsConnect({
          port,
          host: '127.0.0.1',
          servername: 'localhost',
          ca: readFileSync(server.certFile),
          ...(withCert ? { cert: readFileSync(client.certFile), key: readFileSync(client.keyFile) } : {}),
        });
        const reader = new FrameReader();
        socket.on('secureConnect', () => socket.write(frame(encode(message('0800', { 7: '1125171500', 11: '000009', 70: '301' })))));
        socket.on('data', (d) => {
          const [f] = reader.push(d);
          if (f) {
            resolve(decode(f).fields.get(39) ?? '');
            socket.destroy();
          }
        });
        socket.on('error', reject);
        socket.on('close', () => reject(new Error('closed')));
      });
    assert.equal(await ask(true), '00');
    await assert.rejects(ask(false));
  });
});

eachDialect('network link: the merchant’s endpoint and callbacks, as for the sandbox’s authorize', (dialect) => {
  it('asks the merchant’s real-time endpoint with what is left of the deadline (05 on its decline, and on its default when it stalls) and emits the same trade callback', async (t) => {
    const { h, cardId, card, peer } = await setup(t, dialect);
    await h.db.database.db.updateTable('merchants').set({ notify_url: 'http://127.0.0.1:9/hooks' }).execute();
    const r = await receiver(t, h.merchant.webhookSecret);
    const set = await h.call('/api/network/authorizationEndpointUpdate.html', {
      authorizationUrl: r.url,
      timeoutMs: 2000,
      randomStr: randomStr(),
    });
    assert.equal(set.status, 200, JSON.stringify(set.body));

    const reply = (approved: boolean, delayMs: number) => (res: import('node:http').ServerResponse) =>
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ approved })), delayMs);
    r.respond(reply(false, 0), reply(true, 0), reply(true, 3000));
    const declined = await peer.ask(authorizationRequest(card, { amount: 700 }));
    assert.equal(declined.fields.get(39), '05');
    assert.equal(r.received.length, 1);
    assert.equal(r.received[0]?.body.type, 'authorization.request');
    assert.equal(r.received[0]?.body.authorization.amount, 7);

    const approved = await peer.ask(authorizationRequest(card, { amount: 700 }));
    assert.equal(approved.fields.get(39), '00');
    assert.equal((await balances(h, cardId)).available, 93);

    // The endpoint's deadline is what is left of the link's (1.5 s), not its own 2 s, and it answers
    // only after 3 s: the merchant's default (decline) applies and is what was decided and recorded.
    // Were the endpoint waited for its own 2 s, the link's deadline would come first: 91, nothing recorded.
    const late = await peer.ask(authorizationRequest(card, { amount: 700 }));
    assert.equal(late.fields.get(39), '05');
    const lateRecord = await h.db.database.db
      .selectFrom('network_messages')
      .innerJoin('authorizations', 'authorizations.id', 'network_messages.trade_id')
      .select(['network_messages.response_code', 'authorizations.decline_reason', 'authorizations.endpoint_outcome'])
      .where('network_messages.stan', '=', late.fields.get(11) as string)
      .executeTakeFirstOrThrow();
    assert.deepEqual(lateRecord, { response_code: '05', decline_reason: 'merchant_timeout', endpoint_outcome: 'timeout' });

    const events = await h.db.database.db.selectFrom('callback_events').select(['type', 'payload']).orderBy('created_at').execute();
    assert.deepEqual(
      events.map((e) => e.type),
      ['authorization.declined', 'trade', 'authorization.declined'],
    );
    const trade = JSON.parse(events[1]?.payload ?? '{}');
    assert.equal(trade.authorization.amount, 7, 'the trade callback carries the authorization, as the sandbox’s does');
    assert.equal(trade.authorization.channel, 'ecommerce');

    // The link's asks are counted as the sandbox's are (docs/operations.md, "Metrics"): 3 asked, 2 answered, 1 timed out waiting.
    const text = await h.app.svc.metrics.text();
    const sample = (name: string) =>
      Number(
        text
          .split('\n')
          .find((l) => l.startsWith(`${name} `))
          ?.split(' ')[1],
      );
    assert.equal(sample('cardprogram_authorization_endpoint_asked_total'), 3, text);
    assert.equal(sample('cardprogram_authorization_endpoint_results_total{result="answered"}'), 2);
    assert.equal(sample('cardprogram_authorization_endpoint_results_total{result="timeout_waiting"}'), 1);
  });
});

/** An 0400 reversing `original` (an 0100 as sent): field 90 names it, field 95 the actual amount when partial. */
function reversalOf(original: ReturnType<typeof authorizationRequest>, opts: { actual?: number; mti?: string; stan?: string } = {}) {
  const f = original.fields;
  const acquirer = (f.get(32) as string).padStart(11, '0');
  return message(opts.mti ?? '0400', {
    2: f.get(2) as string,
    3: f.get(3) as string,
    4: f.get(4) as string,
    7: f.get(7) as string,
    11: opts.stan ?? '900001',
    32: f.get(32) as string,
    49: f.get(49) as string,
    90: `0100${f.get(11)}${f.get(7)}${acquirer}${'0'.repeat(11)}`,
    ...(opts.actual === undefined ? {} : { 95: `${String(opts.actual).padStart(12, '0')}${'0'.repeat(30)}` }),
  });
}

eachDialect('network link: reversals (0400/0420)', (dialect) => {
  it('reverses part (field 95) then the rest of an approved 0100, once each; 25 without an original; 12 when nothing is held', async (t) => {
    const { h, cardId, card, peer } = await setup(t, dialect);
    const auth = authorizationRequest(card, { amount: 3000 });
    assert.equal((await peer.ask(auth)).fields.get(39), '00');
    assert.equal((await balances(h, cardId)).available, 70);

    const partial = reversalOf(auth, { actual: 1000, stan: '900001' });
    const a = await peer.ask(partial);
    assert.equal(a.mti, '0410');
    assert.deepEqual(
      Object.keys(fields(a))
        .map(Number)
        .sort((x, y) => x - y),
      [3, 4, 7, 11, 32, 38, 39, 49, 90, 95],
    );
    assert.equal(a.fields.get(39), '00');
    assert.equal(a.fields.get(90), partial.fields.get(90));
    assert.equal((await balances(h, cardId)).available, 90, '20.00 of 30.00 released: 10.00 still held');
    // Its retransmission and repeat MTI act no more.
    assert.deepEqual(fields(await peer.ask(partial)), fields(a));
    assert.deepEqual(fields(await peer.ask({ mti: '0401', fields: partial.fields })), fields(a));
    assert.equal((await balances(h, cardId)).available, 90);

    const rest = reversalOf(auth, { mti: '0420', stan: '900002' });
    const b = await peer.ask(rest);
    assert.deepEqual([b.mti, b.fields.get(39)], ['0430', '00']);
    assert.deepEqual(await balances(h, cardId), { available: 100, ledger: 100, status: 'active' });
    assert.equal((await peer.ask(reversalOf(auth, { stan: '900003' }))).fields.get(39), '12', 'nothing held any more');

    const stranger = authorizationRequest(card);
    assert.equal((await peer.ask(reversalOf(stranger, { stan: '900004' }))).fields.get(39), '25', 'no such original');
    const tq = await ok(h, '/api/network/tradeQuery.html', {
      tradeId: (
        await h.db.database.db
          .selectFrom('network_messages')
          .select('trade_id')
          .where('msg_class', '=', 'authorization')
          .executeTakeFirstOrThrow()
      ).trade_id,
    });
    assert.equal(tq.trade.tradeStatus, 3, 'the authorization is Reversed');
  });
});

/** An 0220 naming `original` (an 0100, 0200 or 0220 as sent) in field 90. */
function adviceOf(original: { mti: string; fields: Map<number, string> }, amount: number, opts: { processing?: string; stan: string }) {
  const f = original.fields;
  return message('0220', {
    3: opts.processing ?? '000000',
    4: String(amount).padStart(12, '0'),
    7: f.get(7) as string,
    11: opts.stan,
    32: f.get(32) as string,
    49: f.get(49) as string,
    90: `${original.mti}${f.get(11)}${f.get(7)}${(f.get(32) as string).padStart(11, '0')}${'0'.repeat(11)}`,
  });
}

eachDialect('network link: clearing, refund and single message (0220, 0200)', (dialect) => {
  it('clears an 0100 for less than its hold, refunds part of the payment, and posts an 0200 at once; each once', async (t) => {
    const { h, cardId, card, peer } = await setup(t, dialect);
    const auth = authorizationRequest(card, { amount: 3000 });
    assert.equal((await peer.ask(auth)).fields.get(39), '00');

    const clearing = adviceOf(auth, 2500, { stan: '800001' });
    const c = await peer.ask(clearing);
    assert.deepEqual([c.mti, c.fields.get(39), c.fields.get(4), c.fields.get(90)], ['0230', '00', '000000002500', clearing.fields.get(90)]);
    assert.deepEqual(fields(await peer.ask({ mti: '0221', fields: clearing.fields })), fields(c), 'a repeat acts no more');
    assert.deepEqual(await balances(h, cardId), { available: 75, ledger: 75, status: 'active' });

    const refund = adviceOf(clearing, 500, { processing: '200000', stan: '800002' });
    assert.equal((await peer.ask(refund)).fields.get(39), '00');
    assert.deepEqual(await balances(h, cardId), { available: 80, ledger: 80, status: 'active' });

    const single = authorizationRequest(card, { amount: 1000, mti: '0200' });
    const s = await peer.ask(single);
    assert.deepEqual([s.mti, s.fields.get(39)], ['0210', '00']);
    assert.match(s.fields.get(38) ?? '', /^\w{6}$/);
    assert.deepEqual(await balances(h, cardId), { available: 70, ledger: 70, status: 'active' });

    const day = new Date().toISOString().slice(0, 10);
    const list = await h.call('/api/network/networkAuthTradeList.html', {
      cardId,
      beginDate: day,
      endDate: day,
      start: 0,
      tradeStatusList: [1, 2, 3, 10],
      randomStr: randomStr(),
    });
    const kinds = (list.body.tradeList as Array<{ tradeType: number; tradeStatus: number; amount: number }>)
      .map((r) => `${r.tradeType}/${r.tradeStatus}/${r.amount}`)
      .sort();
    assert.deepEqual(kinds, ['100/1/100', '150/1/10', '150/1/30', '151/1/10', '151/1/25', '151/10/5'].sort());

    // Forced posts (§12.7, test/card-network/forced.test.ts): a clearing above the hold, an 0120.
    const more = authorizationRequest(card, { amount: 1000 });
    assert.equal((await peer.ask(more)).fields.get(39), '00');
    const above = await peer.ask(adviceOf(more, 1500, { stan: '800003' }));
    assert.equal(above.fields.get(39), '00', 'the hold (10.00) and 5.00 more');
    // Without field 2 and with no original there is no card to post to.
    assert.equal((await peer.ask(adviceOf(authorizationRequest(card), 100, { stan: '800004' }))).fields.get(39), '12');
    const advice = await peer.ask({ mti: '0120', fields: authorizationRequest(card).fields });
    assert.deepEqual([advice.mti, advice.fields.get(39)], ['0130', '00']);
    assert.deepEqual(await balances(h, cardId), { available: 45, ledger: 55, status: 'active' });
    const stored = await h.db.database.db
      .selectFrom('network_messages')
      .select('response_code')
      .where('msg_class', '=', 'financial')
      .execute();
    assert.deepEqual(
      stored.map((r) => r.response_code),
      ['00', '00', '00', '00'],
      'what has no card to post to is not stored',
    );
  });
});

eachDialect('network link: exactly once across restarts and instances', (dialect) => {
  it('a second service on the same database (a restart, another instance) answers a retransmission with the first answer, and two copies at once act once', async (t) => {
    const { h, cardId, card, peer } = await setup(t, dialect);
    const req = authorizationRequest(card, { amount: 1500 });
    const first = await peer.ask(req);
    assert.equal(first.fields.get(39), '00');

    // Another service: its own process state (caches, link), the same database.
    const other = await buildApp({ ...h.config, network: { ...h.config.network, port: 0 } }, { database: h.db.database, ...testLogging() });
    const otherLink = await startLink(other.svc);
    assert.ok(otherLink);
    t.after(async () => {
      await otherLink.stop();
      await other.close();
    });
    const there = await Peer.open(t, otherLink.port);
    assert.deepEqual(fields(await there.ask({ mti: '0101', fields: req.fields })), fields(first));
    assert.equal((await balances(h, cardId)).available, 85);

    const next = authorizationRequest(card, { amount: 500 });
    const [a, b] = await Promise.all([peer.ask(next), there.ask(next)]);
    assert.equal(a.fields.get(39), '00');
    assert.deepEqual(fields(a), fields(b));
    assert.equal((await balances(h, cardId)).available, 80, 'held once');
    assert.equal(await count(h, 'network_messages'), 2);
  });
});
