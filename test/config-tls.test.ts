import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';
import { TLS_LISTENERS, tlsFileProblems, tlsFilesVar } from '../src/config-tls.js';
import { serve } from '../src/server.js';
import { testConfig } from './helpers/app.js';
import { selfSigned } from './helpers/certs.js';
import { runCli } from './helpers/cli.js';

/**
 * Issue 43.5 and 43.6: the link's TLS files are read and checked at start, and a wrong one is named
 * with its variable and its file, listed with any other configuration problem, before anything
 * listens (it was OpenSSL's `DECODER routines::unsupported` or `key values mismatch`, after a
 * "Server listening" line).
 */
describe('TLS files at start: each named with its variable, before anything listens (issue 43.5, 43.6)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-tls-files-'));
  const a = selfSigned(dir, 'link.example');
  const b = selfSigned(dir, 'other.example');
  after(() => rmSync(dir, { recursive: true, force: true }));
  const base = { CARDPROGRAM_DATA_DIR: dir, CARDPROGRAM_NETWORK_PORT: '8583' };
  const tls = (ca: string, cert: string, key: string) => ({
    ...base,
    CARDPROGRAM_NETWORK_TLS_CA: ca,
    CARDPROGRAM_NETWORK_TLS_CERT: cert,
    CARDPROGRAM_NETWORK_TLS_KEY: key,
  });
  const refused = (env: Record<string, string>): string => {
    try {
      loadConfig(env);
    } catch (err) {
      assert.ok(err instanceof ConfigError, String(err));
      return err.message;
    }
    assert.fail('the configuration was accepted');
  };

  it('the right three files are accepted', () => {
    assert.deepEqual(loadConfig(tls(a.certFile, a.certFile, a.keyFile)).network.tls, { ca: a.certFile, cert: a.certFile, key: a.keyFile });
  });

  it('a certificate given as the key: the variable, the file and what it holds', () => {
    assert.equal(
      refused(tls(a.certFile, a.certFile, a.certFile)),
      `CARDPROGRAM_NETWORK_TLS_KEY: ${a.certFile} is not a PEM private key (it holds a certificate)`,
    );
  });

  it('a key that is not the certificate’s: both named', () => {
    assert.equal(
      refused(tls(a.certFile, a.certFile, b.keyFile)),
      `CARDPROGRAM_NETWORK_TLS_KEY: ${b.keyFile} is not the key of the certificate in ${a.certFile} (CARDPROGRAM_NETWORK_TLS_CERT): their public keys differ`,
    );
  });

  it('a key given as the certificate and as the CA, a CA that is not PEM, a directory, an encrypted key: all listed at once with the other problems', () => {
    const der = join(dir, 'ca.der');
    writeFileSync(der, Buffer.from([0x30, 0x82, 0x01, 0x0a, 0x02]));
    const encrypted = join(dir, 'encrypted.key');
    execFileSync('openssl', ['pkey', '-in', a.keyFile, '-aes256', '-passout', 'pass:secret', '-out', encrypted], { stdio: 'ignore' });
    assert.deepEqual(refused({ ...tls(a.keyFile, a.keyFile, a.keyFile), PORT: 'eighty' }).split('\n'), [
      '3 configuration problems:',
      '- PORT must be a whole number, got "eighty"',
      `- CARDPROGRAM_NETWORK_TLS_CA: ${a.keyFile} is not a PEM certificate (it holds a private key)`,
      `- CARDPROGRAM_NETWORK_TLS_CERT: ${a.keyFile} is not a PEM certificate (it holds a private key)`,
    ]);
    assert.deepEqual(refused(tls(der, dir, encrypted)).split('\n'), [
      '3 configuration problems:',
      `- CARDPROGRAM_NETWORK_TLS_CERT: ${dir} is a directory, not a file`,
      `- CARDPROGRAM_NETWORK_TLS_CA: ${der} is not a PEM certificate (it has no -----BEGIN line; a DER file converts with openssl x509 -inform DER, a DER key with openssl pkey -inform DER)`,
      `- CARDPROGRAM_NETWORK_TLS_KEY: ${encrypted} is encrypted (a passphrase-protected key): the service cannot ask for a passphrase; decrypt it (openssl pkey -in ${encrypted} -out ${encrypted}.plain, readable by the service only) and name that file`,
    ]);
  });

  it('one or two of the three: says which are set and which are missing', () => {
    assert.equal(
      refused({ ...base, CARDPROGRAM_NETWORK_TLS_CA: a.certFile }),
      'CARDPROGRAM_NETWORK_TLS_CA, CARDPROGRAM_NETWORK_TLS_CERT and CARDPROGRAM_NETWORK_TLS_KEY go together: CARDPROGRAM_NETWORK_TLS_CA is set, CARDPROGRAM_NETWORK_TLS_CERT and CARDPROGRAM_NETWORK_TLS_KEY are not (set all three, or none)',
    );
    assert.equal(
      refused({ ...base, CARDPROGRAM_NETWORK_TLS_CERT: a.certFile, CARDPROGRAM_NETWORK_TLS_KEY: a.keyFile }),
      'CARDPROGRAM_NETWORK_TLS_CA, CARDPROGRAM_NETWORK_TLS_CERT and CARDPROGRAM_NETWORK_TLS_KEY go together: CARDPROGRAM_NETWORK_TLS_CERT and CARDPROGRAM_NETWORK_TLS_KEY are set, CARDPROGRAM_NETWORK_TLS_CA is not (set all three, or none)',
    );
  });

  it('an expired certificate is refused with its date', () => {
    // A certificate valid for two days, judged a week later.
    const files = tlsFilesVar(tls(a.certFile, a.certFile, a.keyFile), TLS_LISTENERS.network);
    assert.ok(files);
    const later = Date.now() + 7 * 86_400_000;
    assert.match(
      tlsFileProblems(TLS_LISTENERS.network, files, later).join('\n'),
      /^CARDPROGRAM_NETWORK_TLS_CERT: the certificate in \S+ expired on /,
    );
  });

  it('`cardprogram serve` with a certificate as the key exits 1 naming the variable and the file, and listens on nothing', async () => {
    const res = await runCli(['serve'], { ...tls(a.certFile, a.certFile, a.certFile), PORT: '0', CARDPROGRAM_NETWORK_PORT: '0' });
    assert.equal(res.code, 1, res.stderr);
    assert.equal(
      res.stderr.trim(),
      `cardprogram: CARDPROGRAM_NETWORK_TLS_KEY: ${a.certFile} is not a PEM private key (it holds a certificate)`,
    );
    assert.doesNotMatch(res.stdout + res.stderr, /listening|DECODER/i);
  });

  it('serve() given a configuration with a mismatched key (not read from the environment) refuses before listening', async () => {
    const config = testConfig(dir, { logLevel: 'silent' });
    await assert.rejects(
      serve(
        { ...config, network: { ...config.network, port: 0, tls: { ca: a.certFile, cert: a.certFile, key: b.keyFile } } },
        { handleSignals: false },
      ),
      (err: Error) => err instanceof ConfigError && err.message.startsWith(`CARDPROGRAM_NETWORK_TLS_KEY: ${b.keyFile} is not the key of`),
    );
  });
});

/** The problems a configuration is refused for, one a line (it must be refused). */
function refusedFor(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.message.split('\n');
  }
  assert.fail('the configuration was accepted');
}

/** A production configuration's required variables, its data in `dir` (the optional parts each describe adds). */
const productionEnv = (dir: string) => ({
  CARDPROGRAM_DATA_DIR: dir,
  CARDPROGRAM_ENV: 'production',
  CARDPROGRAM_PUBLIC_URL: 'https://cards.example.org',
  CARDPROGRAM_BINS: '{"EUR":"41234567","USDT":"51234567"}',
  CARDPROGRAM_MASTER_KEY: 'aa6f1c2e9b4d7f30c8e5a1b6d2f9c4e7b3a8d5f1e6c2b9a4d7f3e8c1b5a2d6f9',
});

/**
 * The 3-D Secure ACS's files go through the same checker (a `threeDs` row in TLS_LISTENERS), and so
 * does the client certificate it presents to its directory server (TLS_CLIENTS.threeDsDirectory).
 */
describe('TLS files at start: the 3-D Secure ACS and its directory server’s client certificate, by the same checker', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-tls-3ds-'));
  const a = selfSigned(dir, 'acs.example');
  const b = selfSigned(dir, 'ds-client.example');
  after(() => rmSync(dir, { recursive: true, force: true }));
  const production = { ...productionEnv(dir), CARDPROGRAM_3DS_PORT: '8443' };
  const acsTls = (ca: string, cert: string, key: string) => ({
    CARDPROGRAM_3DS_TLS_CA: ca,
    CARDPROGRAM_3DS_TLS_CERT: cert,
    CARDPROGRAM_3DS_TLS_KEY: key,
  });

  it('the right files are accepted: the ACS’s three, the DS client’s two', () => {
    const config = loadConfig({
      ...production,
      ...acsTls(b.certFile, a.certFile, a.keyFile),
      CARDPROGRAM_3DS_DS_URL: 'https://ds.example.org/rreq',
      CARDPROGRAM_3DS_DS_CERT: b.certFile,
      CARDPROGRAM_3DS_DS_KEY: b.keyFile,
    });
    assert.deepEqual(config.threeDs.tls, { ca: b.certFile, cert: a.certFile, key: a.keyFile });
    assert.deepEqual(config.threeDs.ds, { url: 'https://ds.example.org/rreq', cert: b.certFile, key: b.keyFile, ca: null });
  });

  it('a wrong ACS file, or a DS client key that is not its certificate’s: each named with its variable and file, listed with the other problems', () => {
    assert.deepEqual(refusedFor({ ...production, ...acsTls(b.certFile, a.certFile, a.certFile), PORT: 'x' }), [
      '2 configuration problems:',
      '- PORT must be a whole number, got "x"',
      `- CARDPROGRAM_3DS_TLS_KEY: ${a.certFile} is not a PEM private key (it holds a certificate)`,
    ]);
    assert.deepEqual(
      refusedFor({
        ...production,
        ...acsTls(b.certFile, a.certFile, a.keyFile),
        CARDPROGRAM_3DS_DS_URL: 'https://ds.example.org/rreq',
        CARDPROGRAM_3DS_DS_CERT: b.certFile,
        CARDPROGRAM_3DS_DS_KEY: a.keyFile,
      }),
      [
        `CARDPROGRAM_3DS_DS_KEY: ${a.keyFile} is not the key of the certificate in ${b.certFile} (CARDPROGRAM_3DS_DS_CERT): their public keys differ`,
      ],
    );
    assert.deepEqual(refusedFor({ ...production, ...acsTls(b.certFile, join(dir, 'none.pem'), a.keyFile) }), [
      `CARDPROGRAM_3DS_TLS_CERT: no file ${join(dir, 'none.pem')}`,
    ]);
  });

  it('one or two of the files: says which are set and which are missing', () => {
    assert.deepEqual(refusedFor({ ...production, CARDPROGRAM_3DS_TLS_CA: b.certFile }), [
      'CARDPROGRAM_3DS_TLS_CA, CARDPROGRAM_3DS_TLS_CERT and CARDPROGRAM_3DS_TLS_KEY go together: CARDPROGRAM_3DS_TLS_CA is set, CARDPROGRAM_3DS_TLS_CERT and CARDPROGRAM_3DS_TLS_KEY are not (set all three, or none)',
    ]);
    assert.deepEqual(
      refusedFor({
        ...production,
        ...acsTls(b.certFile, a.certFile, a.keyFile),
        CARDPROGRAM_3DS_DS_URL: 'https://ds.example.org/rreq',
        CARDPROGRAM_3DS_DS_CERT: b.certFile,
      }),
      [
        'CARDPROGRAM_3DS_DS_CERT and CARDPROGRAM_3DS_DS_KEY go together: CARDPROGRAM_3DS_DS_CERT is set, CARDPROGRAM_3DS_DS_KEY is not (set both, or none)',
      ],
    );
  });

  it('CARDPROGRAM_3DS_DS_CA, the CA of the DS’s server certificate: accepted; a missing file, a key, without the DS URL, with a plain http:// one: refused, named', () => {
    const ds = {
      CARDPROGRAM_3DS_DS_URL: 'https://ds.example.org/rreq',
      CARDPROGRAM_3DS_DS_CERT: b.certFile,
      CARDPROGRAM_3DS_DS_KEY: b.keyFile,
    };
    assert.deepEqual(
      loadConfig({ ...production, ...acsTls(b.certFile, a.certFile, a.keyFile), ...ds, CARDPROGRAM_3DS_DS_CA: a.certFile }).threeDs.ds,
      {
        ...{ url: 'https://ds.example.org/rreq', cert: b.certFile, key: b.keyFile },
        ca: a.certFile,
      },
    );
    const missing = join(dir, 'no-ca.pem');
    assert.deepEqual(refusedFor({ ...production, ...acsTls(b.certFile, a.certFile, a.keyFile), ...ds, CARDPROGRAM_3DS_DS_CA: missing }), [
      `CARDPROGRAM_3DS_DS_CA: no file ${missing}`,
    ]);
    assert.deepEqual(refusedFor({ ...production, ...acsTls(b.certFile, a.certFile, a.keyFile), ...ds, CARDPROGRAM_3DS_DS_CA: a.keyFile }), [
      `CARDPROGRAM_3DS_DS_CA: ${a.keyFile} is not a PEM certificate (it holds a private key)`,
    ]);
    assert.deepEqual(refusedFor({ ...production, ...acsTls(b.certFile, a.certFile, a.keyFile), CARDPROGRAM_3DS_DS_CA: a.certFile }), [
      'CARDPROGRAM_3DS_DS_CA needs CARDPROGRAM_3DS_DS_URL (the CA of the directory server the ACS calls)',
    ]);
    assert.deepEqual(
      refusedFor({ CARDPROGRAM_DATA_DIR: dir, CARDPROGRAM_3DS_DS_URL: 'http://127.0.0.1:9/rreq', CARDPROGRAM_3DS_DS_CA: a.certFile }),
      ['CARDPROGRAM_3DS_DS_CA is for an https:// directory server; CARDPROGRAM_3DS_DS_URL is plain http: "http://127.0.0.1:9/rreq"'],
    );
  });

  it('serve() given an ACS configuration with a mismatched key (not read from the environment) refuses before listening', async () => {
    const config = testConfig(dir, { logLevel: 'silent' });
    await assert.rejects(
      serve(
        { ...config, threeDs: { ...config.threeDs, port: 0, tls: { ca: b.certFile, cert: a.certFile, key: b.keyFile } } },
        { handleSignals: false },
      ),
      (err: Error) => err instanceof ConfigError && err.message.startsWith(`CARDPROGRAM_3DS_TLS_KEY: ${b.keyFile} is not the key of`),
    );
  });
});

/**
 * The wallet tokens' TSP the service calls (decisions §15.1): its client certificate
 * (TLS_CLIENTS.tsp) and the CA the TSP's server certificate must chain to, CARDPROGRAM_TSP_CA (a
 * scheme's private CA), each file checked at start and named with its variable. The calls
 * themselves over HTTPS: test/tokens/tsp-https.test.ts.
 */
describe('TLS files at start: the TSP the service calls, its client certificate and CARDPROGRAM_TSP_CA', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-tls-tsp-'));
  const scheme = selfSigned(dir, 'tsp-scheme-ca.example');
  const issuer = selfSigned(dir, 'issuer-client.example');
  after(() => rmSync(dir, { recursive: true, force: true }));
  const production = productionEnv(dir);
  const tsp = (ca?: string) => ({
    CARDPROGRAM_TSP_URL: 'https://tsp.scheme.example/issuers/40010030273/',
    CARDPROGRAM_TSP_CLIENT_CERT: issuer.certFile,
    CARDPROGRAM_TSP_CLIENT_KEY: issuer.keyFile,
    ...(ca === undefined ? {} : { CARDPROGRAM_TSP_CA: ca }),
  });

  it('the URL, the client certificate and the CA are accepted; without the CA, the system’s trust store (ca null)', () => {
    assert.deepEqual(loadConfig({ ...production, ...tsp(scheme.certFile) }).tspClient, {
      url: 'https://tsp.scheme.example/issuers/40010030273',
      cert: issuer.certFile,
      key: issuer.keyFile,
      ca: scheme.certFile,
    });
    assert.equal(loadConfig({ ...production, ...tsp() }).tspClient?.ca, null);
    assert.equal(loadConfig({ ...production, ...tsp('  ') }).tspClient?.ca, null, 'empty: unset');
  });

  it('CARDPROGRAM_TSP_CA: a missing file, a key, a certificate that does not parse, a directory: each named with the variable and the file, listed with the other problems', () => {
    const missing = join(dir, 'none.pem');
    assert.deepEqual(refusedFor({ ...production, ...tsp(missing) }), [`CARDPROGRAM_TSP_CA: no file ${missing}`]);
    assert.deepEqual(refusedFor({ ...production, ...tsp(issuer.keyFile) }), [
      `CARDPROGRAM_TSP_CA: ${issuer.keyFile} is not a PEM certificate (it holds a private key)`,
    ]);
    const broken = join(dir, 'broken.pem');
    writeFileSync(broken, '-----BEGIN CERTIFICATE-----\nMIIBnotacertificate\n-----END CERTIFICATE-----\n');
    assert.deepEqual(refusedFor({ ...production, ...tsp(broken) }), [`CARDPROGRAM_TSP_CA: ${broken}: the certificate does not parse`]);
    assert.deepEqual(refusedFor({ ...production, ...tsp(dir), PORT: 'x' }), [
      '2 configuration problems:',
      '- PORT must be a whole number, got "x"',
      `- CARDPROGRAM_TSP_CA: ${dir} is a directory, not a file`,
    ]);
  });

  it('CARDPROGRAM_TSP_CA without CARDPROGRAM_TSP_URL, or with a plain http:// one (the sandbox’s loopback TSP): refused', () => {
    assert.deepEqual(refusedFor({ ...production, CARDPROGRAM_TSP_CA: scheme.certFile }), [
      'CARDPROGRAM_TSP_CA needs CARDPROGRAM_TSP_URL (the CA of the TSP the service calls)',
    ]);
    assert.deepEqual(
      refusedFor({ CARDPROGRAM_DATA_DIR: dir, CARDPROGRAM_TSP_URL: 'http://127.0.0.1:9443', CARDPROGRAM_TSP_CA: scheme.certFile }),
      ['CARDPROGRAM_TSP_CA is for an https:// TSP; CARDPROGRAM_TSP_URL is plain http: "http://127.0.0.1:9443"'],
    );
    // The same sandbox TSP without the CA is accepted (plain http to loopback).
    assert.deepEqual(loadConfig({ CARDPROGRAM_DATA_DIR: dir, CARDPROGRAM_TSP_URL: 'http://127.0.0.1:9443' }).tspClient, {
      url: 'http://127.0.0.1:9443',
      cert: null,
      key: null,
      ca: null,
    });
  });

  it('the client certificate: its key must be its own, the two go together, and they need CARDPROGRAM_TSP_URL', () => {
    assert.deepEqual(refusedFor({ ...production, ...tsp(scheme.certFile), CARDPROGRAM_TSP_CLIENT_KEY: scheme.keyFile }), [
      `CARDPROGRAM_TSP_CLIENT_KEY: ${scheme.keyFile} is not the key of the certificate in ${issuer.certFile} (CARDPROGRAM_TSP_CLIENT_CERT): their public keys differ`,
    ]);
    assert.deepEqual(
      refusedFor({ ...production, CARDPROGRAM_TSP_URL: 'https://tsp.scheme.example', CARDPROGRAM_TSP_CLIENT_CERT: issuer.certFile }),
      [
        'CARDPROGRAM_TSP_CLIENT_CERT and CARDPROGRAM_TSP_CLIENT_KEY go together: CARDPROGRAM_TSP_CLIENT_CERT is set, CARDPROGRAM_TSP_CLIENT_KEY is not (set both, or none)',
      ],
    );
    assert.deepEqual(refusedFor({ ...production, CARDPROGRAM_TSP_URL: 'https://tsp.scheme.example' }), [
      'CARDPROGRAM_TSP_URL: set CARDPROGRAM_TSP_CLIENT_CERT and CARDPROGRAM_TSP_CLIENT_KEY, the client certificate the TSP expects',
    ]);
    assert.deepEqual(
      refusedFor({ ...production, CARDPROGRAM_TSP_CLIENT_CERT: issuer.certFile, CARDPROGRAM_TSP_CLIENT_KEY: issuer.keyFile }),
      ['CARDPROGRAM_TSP_CLIENT_CERT and CARDPROGRAM_TSP_CLIENT_KEY need CARDPROGRAM_TSP_URL'],
    );
  });
});
