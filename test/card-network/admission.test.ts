import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it, type TestContext } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import { capKey, certificateNames, peerListed } from '../../src/card-network/link/admission.js';
import type { NetworkConfig } from '../../src/config.js';
import { decode, encode, message } from '../../src/iso8583/codec.js';
import { FrameReader, frame } from '../../src/iso8583/frame.js';
import { build, type Harness } from '../helpers/app.js';
import { certificateAuthority, selfSigned, type TestCert } from '../helpers/certs.js';
import { eachDialect } from '../helpers/dialects.js';
import { linkOf } from '../helpers/link.js';
import { eventually } from '../helpers/receiver.js';

/**
 * Who may hold a connection to the link (decisions §12.13, issue 39 points 5 and 2, issue 43 point
 * 8): CARDPROGRAM_NETWORK_PEERS, the TLS handshake's time, failed handshakes logged.
 */

/** The link's CA with three client certificates, the service's own certificate, and another CA's client certificate. */
function pki() {
  const dir = mkdtempSync(join(tmpdir(), 'cp-net-peers-'));
  const ca = certificateAuthority(dir, 'link-ca');
  return {
    ca,
    server: selfSigned(dir, 'localhost'),
    listed: ca.issue('acquirer one'),
    unlisted: ca.issue('acquirer two'),
    gateway: ca.issue('gateway', { dns: ['gw.processor.example'] }),
    stranger: certificateAuthority(dir, 'other-ca').issue('acquirer one'),
  };
}

type Pki = ReturnType<typeof pki>;

async function tlsLink(t: TestContext, h: Harness, p: Pki, extra: Partial<NetworkConfig> = {}) {
  h.app.svc.config.network = {
    ...h.app.svc.config.network,
    tls: { ca: p.ca.certFile, cert: p.server.certFile, key: p.server.keyFile },
    ...extra,
  };
  return linkOf(t, h);
}

/** An echo (0800, 301) over TLS with `client`'s certificate (none: null): its field 39, or 'closed'. */
function echo(port: number, p: Pki, client: TestCert | null): Promise<string> {
  return new Promise((resolve) => {
    const socket = tlsConnect({
      port,
      host: '127.0.0.1',
      servername: 'localhost',
      ca: readFileSync(p.server.certFile),
      ...(client ? { cert: readFileSync(client.certFile), key: readFileSync(client.keyFile) } : {}),
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
    socket.on('error', () => resolve('closed'));
    socket.on('close', () => resolve('closed'));
  });
}

async function metric(h: Harness, name: string, reason: string): Promise<number> {
  const text = await h.app.svc.metrics.text();
  const m = new RegExp(`^${name}\\{reason="${reason}"\\} (\\d+)`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

const logged = (lines: string[], msg: string) => lines.map((l) => JSON.parse(l) as Record<string, any>).filter((l) => l.msg === msg);

it('a cap counts an IPv4 address (IPv4-mapped too) as itself, an IPv6 address by its /64', () => {
  assert.equal(capKey('203.0.113.7'), '203.0.113.7');
  assert.equal(capKey('::ffff:203.0.113.7'), '203.0.113.7');
  assert.equal(capKey('2001:db8:1:2::1'), '2001:db8:1:2::/64');
  assert.equal(capKey('2001:db8:1:2:ffff:ffff:ffff:ffff'), '2001:db8:1:2::/64', 'one host, one /64: not 2^64 addresses');
  assert.notEqual(capKey('2001:db8:1:3::1'), capKey('2001:db8:1:2::1'));
});

it('a certificate’s names: its CN(s) and DNS names, as Node writes them (quoted when they hold a comma); other kinds ignored', () => {
  const names = certificateNames({
    subject: { CN: 'acquirer 12345678' },
    subjectaltname: 'DNS:gw.processor.example, IP Address:10.0.0.1, DNS:"odd, name.example", URI:https://x.example',
  } as never);
  assert.deepEqual(names, { cn: ['acquirer 12345678'], dns: ['gw.processor.example', 'odd, name.example'] });
  assert.equal(peerListed(['GW.PROCESSOR.EXAMPLE'], names), true);
  assert.equal(peerListed(['Acquirer 12345678'], names), false, 'a CN is compared exactly');
  assert.equal(peerListed(['10.0.0.1', 'https://x.example', 'name.example'], names), false);
  assert.deepEqual(certificateNames(null), { cn: [], dns: [] });
});

eachDialect('network link: CARDPROGRAM_NETWORK_PEERS', (dialect) => {
  it('serves a listed certificate (by CN, by DNS name in any case); one the same CA signed but not listed is closed after the handshake and logged', async (t) => {
    const p = pki();
    const lines: string[] = [];
    const h = await build(t, dialect, {}, { logLines: lines });
    const link = await tlsLink(t, h, p, { peers: ['acquirer one', 'GW.Processor.example'] });

    assert.equal(await echo(link.port, p, p.listed), '00');
    assert.equal(await echo(link.port, p, p.gateway), '00', 'its DNS name is listed');
    assert.equal(await echo(link.port, p, p.unlisted), 'closed', 'the CA signed it, but it is not a peer');
    // The CN of another CA's certificate is no way in: it fails verification before the list.
    assert.equal(await echo(link.port, p, p.stranger), 'closed');

    await eventually(async () => (await metric(h, 'cardprogram_network_connections_refused_total', 'peer_not_allowed')) === 1);
    const refused = logged(lines, 'network link: certificate refused');
    assert.equal(refused.length, 1);
    assert.equal(refused[0]?.peer, '127.0.0.1');
    assert.deepEqual(refused[0]?.subject, { cn: ['acquirer two'], dns: [] });
    assert.match(refused[0]?.reason, /not in CARDPROGRAM_NETWORK_PEERS/);
  });

  it('without the list, every certificate the CA signed is a peer (as before)', async (t) => {
    const p = pki();
    const h = await build(t, dialect);
    const link = await tlsLink(t, h, p);
    assert.equal(await echo(link.port, p, p.listed), '00');
    assert.equal(await echo(link.port, p, p.unlisted), '00');
  });
});

eachDialect('network link: failed TLS handshakes', (dialect) => {
  it('are closed and logged with the remote address and the reason (no certificate, another CA, plain TCP), at most 20 lines a minute', async (t) => {
    const p = pki();
    const lines: string[] = [];
    const h = await build(t, dialect, {}, { logLines: lines });
    const link = await tlsLink(t, h, p);

    assert.equal(await echo(link.port, p, null), 'closed');
    assert.equal(await echo(link.port, p, p.stranger), 'closed');
    // An acquirer that forgot TLS: an ISO 8583 frame in clear.
    const plain = () =>
      new Promise<void>((resolve) => {
        const s = tcpConnect(link.port, '127.0.0.1', () =>
          s.write(frame(encode(message('0800', { 7: '1125171500', 11: '000001', 70: '001' })))),
        );
        s.on('error', () => undefined);
        s.on('close', () => resolve());
      });
    await plain();
    await eventually(() => logged(lines, 'network link: TLS handshake failed').length === 3, 5000, 'three lines');
    const [none, other, clear] = logged(lines, 'network link: TLS handshake failed');
    assert.equal(none?.peer, '127.0.0.1');
    assert.equal(none?.reason, 'no client certificate');
    assert.equal(other?.peer, '127.0.0.1');
    assert.match(other?.reason, /client certificate not accepted \((UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)\)/);
    assert.equal(clear?.peer, '127.0.0.1');
    assert.match(clear?.reason, /wrong version number|packet length too long|http request|unknown protocol/);

    // A flood of them is counted whole, and told in at most 20 lines a minute.
    await Promise.all(Array.from({ length: 25 }, plain));
    await eventually(async () => (await metric(h, 'cardprogram_network_handshake_failures_total', 'protocol')) === 26, 5000, 'all counted');
    assert.equal(await metric(h, 'cardprogram_network_handshake_failures_total', 'certificate'), 2);
    assert.equal(logged(lines, 'network link: TLS handshake failed').length, 20);
  });
});

eachDialect('network link: the TLS handshake’s time', (dialect) => {
  it('closes a connection whose handshake has not finished in time, silent or trickling a byte at a time; a peer connecting meanwhile is served', async (t) => {
    const p = pki();
    const lines: string[] = [];
    const h = await build(t, dialect, {}, { logLines: lines });
    const link = await tlsLink(t, h, p, { handshakeMs: 500 });

    const open = () => {
      const socket = tcpConnect(link.port, '127.0.0.1');
      socket.on('error', () => undefined);
      const started = performance.now();
      const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(performance.now() - started)));
      return { socket, closed };
    };
    const silent = open();
    // A ClientHello's first bytes, one every 100 ms: activity that an idle timer would count, not this one.
    const trickle = open();
    const hello = Buffer.from('16030100c8010000c40303', 'hex');
    let i = 0;
    const drip = setInterval(() => {
      if (i < hello.length && !trickle.socket.destroyed) trickle.socket.write(hello.subarray(i, ++i));
    }, 100);
    t.after(() => clearInterval(drip));
    assert.equal(await echo(link.port, p, p.listed), '00');

    const [silentMs, trickleMs] = await Promise.all([silent.closed, trickle.closed]);
    clearInterval(drip);
    assert.ok(silentMs >= 450 && silentMs < 3000, `the silent connection closed after ${silentMs} ms`);
    assert.ok(trickleMs >= 450 && trickleMs < 3000, `the trickling connection closed after ${trickleMs} ms`);
    assert.equal(await metric(h, 'cardprogram_network_connections_refused_total', 'handshake_timeout'), 2);
    const refused = logged(lines, 'network link: connection refused');
    assert.deepEqual(
      refused.map((l) => [l.peer, l.reason]),
      [
        ['127.0.0.1', 'handshake_timeout'],
        ['127.0.0.1', 'handshake_timeout'],
      ],
    );
    // Closed here, not failed: no second line for either.
    assert.equal(logged(lines, 'network link: TLS handshake failed').length, 0);
  });

  it('a stop closes the connections still in their handshake at once (it does not wait for their 10 s)', async (t) => {
    const p = pki();
    const h = await build(t, dialect);
    const link = await tlsLink(t, h, p);
    const socket = tcpConnect(link.port, '127.0.0.1');
    socket.on('error', () => undefined);
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    await new Promise((resolve) => socket.once('connect', resolve));
    await new Promise((r) => setTimeout(r, 100));
    const started = performance.now();
    await link.stop();
    await closed;
    assert.ok(performance.now() - started < 2000, `stopped after ${performance.now() - started} ms`);
  });
});
