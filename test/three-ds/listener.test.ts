// The ACS's listener (decisions §14.1): HTTPS with the DS's client certificate in production, plain
// HTTP on loopback only in the sandbox, and hardened as the card network link (connection caps, a
// handshake timeout, a body limit).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';
import { startAcs } from '../../src/three-ds/listener.js';
import { build, testConfig } from '../helpers/app.js';
import { selfSigned } from '../helpers/certs.js';
import { eachDialect } from '../helpers/dialects.js';
import { acs } from './helpers/acs.js';
import { areq, send } from './helpers/ds.js';

const PRODUCTION = {
  CARDPROGRAM_ENV: 'production',
  CARDPROGRAM_PUBLIC_URL: 'https://cards.example.org',
  CARDPROGRAM_BINS: '{"EUR":"41234567","USDT":"51234567"}',
};

/** Opens a TCP connection and tells whether the server closed it within `ms` without a byte. */
function closedAtOnce(port: number, ms = 2000): Promise<{ closed: boolean; socket: Socket }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    const timer = setTimeout(() => resolve({ closed: false, socket }), ms);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ closed: true, socket });
    });
  });
}

it('configuration: production refuses an ACS without its TLS files, listing every problem together; the sandbox refuses plain HTTP off loopback', () => {
  const key = { CARDPROGRAM_MASTER_KEY: 'aa6f1c2e9b4d7f30c8e5a1b6d2f9c4e7b3a8d5f1e6c2b9a4d7f3e8c1b5a2d6f9' };
  assert.throws(
    () => loadConfig({ ...PRODUCTION, ...key, CARDPROGRAM_3DS_PORT: '8443' }),
    (err: Error) => err instanceof ConfigError && /CARDPROGRAM_3DS_PORT: the ACS is HTTPS/.test(err.message),
  );
  assert.throws(
    () => loadConfig({ ...PRODUCTION, ...key, CARDPROGRAM_3DS_PORT: '8443', CARDPROGRAM_3DS_TLS_CA: '/nope', PORT: 'x' }),
    (err: Error) =>
      err instanceof ConfigError &&
      /configuration problems/.test(err.message) &&
      /CARDPROGRAM_3DS_TLS_CA, CARDPROGRAM_3DS_TLS_CERT and CARDPROGRAM_3DS_TLS_KEY go together/.test(err.message) &&
      /PORT must be a whole number/.test(err.message),
  );
  assert.throws(
    () => loadConfig({ CARDPROGRAM_3DS_PORT: '8443', CARDPROGRAM_3DS_HOST: '0.0.0.0' }),
    /loopback address only, not 0\.0\.0\.0/,
  );
  assert.throws(() => loadConfig({ CARDPROGRAM_3DS_PORT: '8443', CARDPROGRAM_3DS_HOST: '192.168.1.5' }), /loopback/);
  assert.throws(
    () => loadConfig({ ...PRODUCTION, ...key, CARDPROGRAM_3DS_DS_URL: 'http://ds.example.org/' }),
    /CARDPROGRAM_3DS_DS_URL must be an https/,
  );
  const sandbox = loadConfig({ CARDPROGRAM_3DS_PORT: '8443', CARDPROGRAM_3DS_HOST: '127.0.0.2', CARDPROGRAM_3DS_OPERATOR_ID: 'OP-1' });
  assert.deepEqual(
    [sandbox.threeDs.port, sandbox.threeDs.host, sandbox.threeDs.tls, sandbox.threeDs.operatorId],
    [8443, '127.0.0.2', null, 'OP-1'],
  );
  assert.equal(loadConfig({}).threeDs.port, null, 'unset: no ACS');
});

eachDialect('3-D Secure: the ACS listener', (dialect) => {
  it('a host name is resolved at start: plain HTTP on one that is not loopback is refused; localhost is accepted', async (t) => {
    const h = await build(t, dialect);
    const at = (host: string) => ({ ...h.app.svc, config: { ...h.config, threeDs: { ...testConfig('').threeDs, port: 0, host } } });
    await assert.rejects(startAcs(at('nowhere.invalid')), (err: Error) => err instanceof ConfigError && /loopback/.test(err.message));
    const local = await startAcs(at('localhost'));
    assert.ok(local);
    await local.stop();
  });

  it('production: the DS’s client certificate is required and verified against CARDPROGRAM_3DS_TLS_CA; without one, or with another, no answer', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'cp-acs-tls-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const server = selfSigned(dir, 'localhost');
    const ds = selfSigned(dir, 'ds.scheme.example');
    const intruder = selfSigned(dir, 'intruder.example');
    const tls = { ca: ds.certFile, cert: server.certFile, key: server.keyFile };
    const { url } = await acs(t, dialect, { env: 'production', threeDs: { ...testConfig('').threeDs, port: 0, tls } });
    const https = url.replace('http:', 'https:');
    const ca = readFileSync(server.certFile);
    const request = areq({ pan: '4242420000000001', expiry: '3012' });
    const ok = await send(https, request, { tls: { ca, cert: readFileSync(ds.certFile), key: readFileSync(ds.keyFile) } });
    assert.deepEqual([ok.status, ok.json?.messageType, ok.json?.transStatusReason], [200, 'ARes', '08']);
    await assert.rejects(send(https, request, { tls: { ca } }), 'no client certificate: the handshake fails');
    await assert.rejects(
      send(https, request, { tls: { ca, cert: readFileSync(intruder.certFile), key: readFileSync(intruder.keyFile) } }),
      'a certificate the CA did not issue: refused',
    );
    // Plain HTTP to the TLS port gets no ARes either.
    const plain = await send(url, request).catch(() => null);
    assert.notEqual(plain?.json?.messageType, 'ARes');
  });

  it('caps: beyond the connections per address a new one is closed at once; a handshake not begun is closed after the timeout; the rest keep working', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'cp-acs-caps-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const server = selfSigned(dir, 'localhost');
    const ds = selfSigned(dir, 'ds.scheme.example');
    const threeDs = {
      ...testConfig('').threeDs,
      port: 0,
      maxPerAddress: 3,
      handshakeMs: 1500,
      tls: { ca: ds.certFile, cert: server.certFile, key: server.keyFile },
    };
    const { h, url } = await acs(t, dialect, { threeDs });
    const port = Number(new URL(url).port);
    const held = await Promise.all([closedAtOnce(port, 150), closedAtOnce(port, 150)]);
    assert.deepEqual(
      held.map((c) => c.closed),
      [false, false],
    );
    const third = await closedAtOnce(port, 150);
    assert.equal(third.closed, false, 'the third is within the cap');
    // Within 500 ms, long before the 1.5 s handshake timeout: the cap closed it.
    const fourth = await closedAtOnce(port, 500);
    assert.equal(fourth.closed, true, 'beyond the cap: closed at once');
    // The silent ones are closed once the handshake timeout passes, freeing room.
    const late = await Promise.all(
      [...held, third].map((c) => new Promise<boolean>((r) => (c.socket.destroyed ? r(true) : c.socket.once('close', () => r(true))))),
    );
    assert.deepEqual(late, [true, true, true]);
    const ok = await send(url.replace('http:', 'https:'), areq({ pan: '4242420000000001', expiry: '3012' }), {
      tls: { ca: readFileSync(server.certFile), cert: readFileSync(ds.certFile), key: readFileSync(ds.keyFile) },
    });
    assert.equal(ok.json?.messageType, 'ARes');
    const metrics = await h.app.svc.metrics.text();
    assert.match(metrics, /cardprogram_3ds_connections_refused_total\{why="per_address"\} [1-9]/);
  });

  it('only POST /3ds/areq: another path is 404, another method 405 (neither an ARes)', async (t) => {
    const { url } = await acs(t, dialect);
    const other = await fetch(url.replace('/3ds/areq', '/3ds/other'), {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(other.status, 404);
    const get = await fetch(url);
    assert.deepEqual([get.status, get.headers.get('allow')], [405, 'POST']);
  });
});
