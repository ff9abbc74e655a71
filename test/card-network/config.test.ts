import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { startLink } from '../../src/card-network/link/listener.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { isLoopbackIp, linkAddress } from '../../src/config-network.js';
import { message } from '../../src/iso8583/codec.js';
import { build } from '../helpers/app.js';
import { selfSigned } from '../helpers/certs.js';
import { eachDialect } from '../helpers/dialects.js';
import { Peer } from '../helpers/link.js';

/** The link's settings of issue 39 (decisions §12.13, §12.1): the caps, the peers' list, the sandbox's loopback judged by address. */

const dataDir = mkdtempSync(join(tmpdir(), 'cp-net-config-'));
const base = { CARDPROGRAM_DATA_DIR: dataDir };

const problems = (env: Record<string, string>): string[] => {
  try {
    loadConfig(env);
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.message.split('\n').filter((l) => !/configuration problems:$/.test(l));
  }
  return [];
};

it('CARDPROGRAM_NETWORK_MAX_CONNECTIONS, …_MAX_PER_ADDRESS and …_PEERS: defaults, values, and every bad one listed at once', () => {
  const defaults = loadConfig(base).network;
  assert.deepEqual(
    {
      maxConnections: defaults.maxConnections,
      maxPerAddress: defaults.maxPerAddress,
      handshakeMs: defaults.handshakeMs,
      peers: defaults.peers,
    },
    { maxConnections: 64, maxPerAddress: 8, handshakeMs: 10_000, peers: null },
  );
  const dir = mkdtempSync(join(tmpdir(), 'cp-net-config-tls-'));
  const server = selfSigned(dir, 'localhost');
  const tls = {
    CARDPROGRAM_NETWORK_PORT: '8583',
    CARDPROGRAM_NETWORK_TLS_CA: server.certFile,
    CARDPROGRAM_NETWORK_TLS_CERT: server.certFile,
    CARDPROGRAM_NETWORK_TLS_KEY: server.keyFile,
  };
  const set = loadConfig({
    ...base,
    ...tls,
    CARDPROGRAM_NETWORK_MAX_CONNECTIONS: '200',
    CARDPROGRAM_NETWORK_MAX_PER_ADDRESS: '20',
    CARDPROGRAM_NETWORK_PEERS: ' acquirer 12345678 , gw.processor.example,acquirer 12345678',
  }).network;
  assert.deepEqual([set.maxConnections, set.maxPerAddress, set.peers], [200, 20, ['acquirer 12345678', 'gw.processor.example']]);
  // Empty is unset (any certificate of the CA).
  assert.equal(loadConfig({ ...base, ...tls, CARDPROGRAM_NETWORK_PEERS: ' ' }).network.peers, null);

  assert.deepEqual(
    problems({
      ...base,
      ...tls,
      CARDPROGRAM_NETWORK_MAX_CONNECTIONS: '0',
      CARDPROGRAM_NETWORK_MAX_PER_ADDRESS: 'eight',
      CARDPROGRAM_NETWORK_PEERS: 'acquirer one,,acquirer two',
    }),
    [
      '- CARDPROGRAM_NETWORK_PEERS must be certificate subjects (CN or DNS name) separated by commas, with no empty entry',
      '- CARDPROGRAM_NETWORK_MAX_CONNECTIONS must be between 1 and 100000, got 0',
      '- CARDPROGRAM_NETWORK_MAX_PER_ADDRESS must be a whole number, got "eight"',
    ],
  );
  assert.deepEqual(problems({ ...base, ...tls, CARDPROGRAM_NETWORK_PEERS: 'acquirer one,' }), [
    'CARDPROGRAM_NETWORK_PEERS must be certificate subjects (CN or DNS name) separated by commas, with no empty entry',
  ]);
  assert.deepEqual(problems({ ...base, CARDPROGRAM_NETWORK_MAX_CONNECTIONS: '4', CARDPROGRAM_NETWORK_MAX_PER_ADDRESS: '5' }), [
    'CARDPROGRAM_NETWORK_MAX_PER_ADDRESS (5) must not exceed CARDPROGRAM_NETWORK_MAX_CONNECTIONS (4)',
  ]);
  assert.deepEqual(problems({ ...base, CARDPROGRAM_NETWORK_MAX_CONNECTIONS: '-1' }), [
    'CARDPROGRAM_NETWORK_MAX_CONNECTIONS must be a whole number, got "-1"',
  ]);
  // A list that looks like a restriction where there are no certificates is refused, not ignored.
  assert.deepEqual(problems({ ...base, CARDPROGRAM_NETWORK_PORT: '8583', CARDPROGRAM_NETWORK_PEERS: 'acquirer one' }), [
    'CARDPROGRAM_NETWORK_PEERS names client certificates: it needs CARDPROGRAM_NETWORK_TLS_CA/_CERT/_KEY (plain TCP has no certificate to check)',
  ]);
});

it('loopback is judged by address: 127.0.0.0/8, ::1 and IPv4-mapped 127.x, in any spelling; nothing else', () => {
  for (const ip of ['127.0.0.1', '127.255.3.4', '::1', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1', '::ffff:7f00:1', '0::ffff:127.1.2.3']) {
    assert.equal(isLoopbackIp(ip), true, ip);
  }
  for (const ip of [
    '128.0.0.1',
    '10.0.0.1',
    '0.0.0.0',
    '::',
    '::2',
    '1::1',
    '::ffff:10.0.0.1',
    '::ffff:a00:1',
    'fe80::1',
    '::127.0.0.1',
    'localhost',
    '127.0.0.1.nip.io',
    '127.1',
  ]) {
    assert.equal(isLoopbackIp(ip), false, ip);
  }
  // An address that is not loopback is refused with the other settings; a name waits for the start.
  assert.deepEqual(problems({ ...base, CARDPROGRAM_NETWORK_PORT: '8583', CARDPROGRAM_NETWORK_HOST: '::ffff:10.0.0.1' }), [
    'CARDPROGRAM_NETWORK_PORT: plain TCP is allowed on a loopback address only, not ::ffff:10.0.0.1; set CARDPROGRAM_NETWORK_TLS_CA/_CERT/_KEY or CARDPROGRAM_NETWORK_HOST=127.0.0.1',
  ]);
  assert.equal(
    loadConfig({ ...base, CARDPROGRAM_NETWORK_PORT: '8583', CARDPROGRAM_NETWORK_HOST: '127.0.0.1.invalid' }).network.host,
    '127.0.0.1.invalid',
  );
});

it('a name is judged by every address it resolves to, and the link listens on the address judged', async () => {
  const plain = (host: string) => ({ host, tls: null });
  const resolving =
    (...addresses: string[]) =>
    async () =>
      addresses.map((address) => ({ address }));
  assert.equal(await linkAddress(plain('link.test'), resolving('127.0.0.2', '::1')), '127.0.0.2');
  await assert.rejects(
    linkAddress(plain('localhost.attacker.example'), resolving('127.0.0.1', '203.0.113.7')),
    (e: unknown) =>
      e instanceof ConfigError &&
      e.message ===
        'CARDPROGRAM_NETWORK_HOST: plain TCP is allowed on a loopback address only, and localhost.attacker.example resolves to 203.0.113.7, not loopback; set CARDPROGRAM_NETWORK_TLS_CA/_CERT/_KEY or CARDPROGRAM_NETWORK_HOST=127.0.0.1',
  );
  await assert.rejects(linkAddress(plain('empty.test'), resolving()), /empty\.test resolves to no address/);
  // With TLS any address is allowed, and not resolved here.
  assert.equal(await linkAddress({ host: '0.0.0.0', tls: { ca: 'a', cert: 'b', key: 'c' } }), '0.0.0.0');
});

eachDialect('network link: the sandbox’s plain TCP on loopback', (dialect) => {
  it('a name spelt like loopback that does not resolve to it is refused at start with a configuration error; localhost, 127.0.0.1 and ::1 are served', async (t) => {
    const h = await build(t, dialect);
    const start = (host: string) => {
      h.app.svc.config.network = { ...h.app.svc.config.network, port: 0, host };
      return startLink(h.app.svc);
    };
    // Reserved names that never resolve (RFC 6761 .invalid): once taken for loopback by their prefix.
    for (const host of ['127.0.0.1.invalid', 'localhost.invalid']) {
      await assert.rejects(
        start(host),
        (e: unknown) =>
          e instanceof ConfigError &&
          e.message.startsWith(`CARDPROGRAM_NETWORK_HOST: plain TCP is allowed on a loopback address only, and ${host} does not resolve (`),
        host,
      );
    }
    for (const host of ['localhost', '127.0.0.1', '::1']) {
      const link = await start(host);
      assert.ok(link, host);
      t.after(() => link.stop());
      const peer = await Peer.open(t, link.port, host);
      assert.equal((await peer.ask(message('0800', { 7: '1125171500', 11: '000001', 70: '301' }))).fields.get(39), '00', host);
    }
  });
});
