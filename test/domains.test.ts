import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import type { TLSSocket } from 'node:tls';
import { createMerchant } from '../src/merchants/create.js';
import { runVerb } from '../src/runner.js';
import { serve } from '../src/server.js';
import { holderBody, sign, type TestMerchant, testConfig } from './helpers/app.js';
import { selfSigned } from './helpers/certs.js';
import { childDatabaseUrl, runCli } from './helpers/cli.js';
import { isolatedDatabase } from './helpers/db.js';
import { eachDialect } from './helpers/dialects.js';

interface HttpsReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  peer: string;
}

/** A request over TLS to 127.0.0.1 that names `host` (SNI and Host header) and trusts only `ca`. */
function tls(
  port: number,
  host: string,
  ca: string,
  path: string,
  opts: { cookie?: string; json?: Record<string, unknown> } = {},
): Promise<HttpsReply> {
  return new Promise((resolve, reject) => {
    const body = opts.json ? JSON.stringify(opts.json) : undefined;
    const req = request(
      {
        host: '127.0.0.1',
        port,
        servername: host,
        path,
        method: body ? 'POST' : 'GET',
        ca,
        agent: false,
        headers: {
          host: `${host}:${port}`,
          ...(opts.cookie ? { cookie: opts.cookie } : {}),
          ...(body ? { 'content-type': 'application/json' } : {}),
        },
      },
      (res) => {
        const peer = (res.socket as TLSSocket).getPeerCertificate().subject?.CN ?? '';
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => {
          text += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text, peer: String(peer) }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

eachDialect('merchant domains: HTTPS by SNI, page links on mapped hosts', (dialect) => {
  it('two merchants, two self-signed certificates: each host gets its own certificate, links, sessions and API', async (t) => {
    const db = await isolatedDatabase(dialect);
    const dir = mkdtempSync(join(tmpdir(), 'cardprogram-domains-'));
    const masterKey = randomBytes(32);
    const config = testConfig(dir, {
      databaseUrl: childDatabaseUrl(db),
      masterKey,
      httpsPort: 0,
      publicUrl: 'http://127.0.0.1:0',
    });
    const running = await serve(config, { handleSignals: false });
    t.after(async () => {
      await running.stop();
      await db.cleanup();
      rmSync(dir, { recursive: true, force: true });
    });
    const port = running.httpsPort ?? 0;
    assert.ok(port > 0, 'the HTTPS listener is up');
    const svc = running.app.svc;
    const merchant = async (name: string): Promise<TestMerchant> => {
      const m = await runVerb(svc, createMerchant, { input: { name, signType: 'HMAC-SHA256', loginFree: true }, actor: 'test' });
      return { appId: m.appId, secret: m.secret ?? '', webhookSecret: m.webhookSecret };
    };
    const alpha = await merchant('Alpha Wallet');
    const beta = await merchant('Beta Pay');
    const alphaCert = selfSigned(dir, 'cards.alpha.test');
    const betaCert = selfSigned(dir, 'pay.beta.test');
    const cli = (...args: string[]) =>
      runCli(args, { DATABASE_URL: childDatabaseUrl(db), CARDPROGRAM_DATA_DIR: dir, CARDPROGRAM_MASTER_KEY: masterKey.toString('hex') });

    // The operator maps each host with its certificate, from another process.
    const added = await cli(
      'domain',
      'add',
      '--merchant',
      alpha.appId,
      '--host',
      'Cards.Alpha.Test',
      '--cert',
      alphaCert.certFile,
      '--key',
      alphaCert.keyFile,
      '--json',
    );
    assert.equal(added.code, 0, added.stderr);
    const summary = JSON.parse(added.stdout);
    assert.deepEqual([summary.host, summary.appId, summary.tls], ['cards.alpha.test', alpha.appId, true]);
    assert.ok(Date.parse(summary.certExpiresAt) > Date.now());
    const addedBeta = await cli(
      'domain',
      'add',
      '--merchant',
      beta.appId,
      '--host',
      'pay.beta.test',
      '--cert',
      betaCert.certFile,
      '--key',
      betaCert.keyFile,
    );
    assert.equal(addedBeta.code, 0, addedBeta.stderr);
    assert.match(addedBeta.stdout, /^pay\.beta\.test → mch_\w+, certificate valid until /);

    // Bad mappings are refused with one line each, and change nothing.
    const refusals: Array<[string[], RegExp]> = [
      [['--merchant', beta.appId, '--host', 'cards.alpha.test'], /cards\.alpha\.test is already mapped to merchant/],
      [
        ['--merchant', alpha.appId, '--host', 'www.alpha.test', '--cert', alphaCert.certFile, '--key', alphaCert.keyFile],
        /cert: does not name www\.alpha\.test/,
      ],
      [
        ['--merchant', alpha.appId, '--host', 'cards.alpha.test', '--cert', alphaCert.certFile, '--key', betaCert.keyFile],
        /key: does not belong to the certificate/,
      ],
      [['--merchant', alpha.appId, '--host', 'cards.alpha.test', '--cert', alphaCert.certFile], /cert: and key go together/],
      [['--merchant', alpha.appId, '--host', 'https://cards.alpha.test/'], /host: "https:\/\/cards\.alpha\.test\/" is not a host name/],
      [['--merchant', alpha.appId, '--host', '10.0.0.1'], /is not a host name/],
      [['--merchant', 'mch_nobody', '--host', 'x.alpha.test'], /merchant: no merchant mch_nobody/],
      [
        ['--merchant', alpha.appId, '--host', 'cards.alpha.test', '--cert', alphaCert.keyFile, '--key', alphaCert.keyFile],
        /cert: is not a PEM certificate/,
      ],
    ];
    for (const [args, message] of refusals) {
      const r = await cli('domain', 'add', ...args);
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.stdout}`);
      assert.match(r.stderr, message);
      assert.equal(r.stderr.trim().split('\n').length, 1);
    }
    const listed = await cli('domain', 'list', '--json');
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(
      JSON.parse(listed.stdout)
        .map((d: { host: string; appId: string }) => `${d.host} ${d.appId}`)
        .sort(),
      [`cards.alpha.test ${alpha.appId}`, `pay.beta.test ${beta.appId}`].sort(),
    );
    assert.doesNotMatch(listed.stdout, /PRIVATE KEY|BEGIN/);
    const stored = await db.database.db.selectFrom('merchant_domains').selectAll().execute();
    assert.ok(
      stored.every((r) => r.key_enc && !r.key_enc.includes('PRIVATE KEY')),
      'keys are sealed at rest',
    );

    // SNI: each host name gets its own certificate; a name without one gets no handshake.
    const a = await tls(port, 'cards.alpha.test', alphaCert.cert, '/healthz');
    assert.equal(a.status, 200);
    assert.equal(a.peer, 'cards.alpha.test');
    const b = await tls(port, 'pay.beta.test', betaCert.cert, '/healthz');
    assert.equal(b.peer, 'pay.beta.test');
    await assert.rejects(tls(port, 'unknown.example.test', alphaCert.cert, '/healthz'));

    // The API answers on a mapped host too.
    const created = await tls(port, 'cards.alpha.test', alphaCert.cert, '/api/network/holderCreate.html', {
      json: sign(holderBody({ email: 'alice@example.com' }), alpha),
    });
    assert.equal(created.status, 200, created.body);
    assert.match(JSON.parse(created.body).holderId, /^hld_/);

    // Links name the merchant's host and the HTTPS port.
    const link = async (m: TestMerchant, email: string) => {
      const res = await fetch(`${running.url}/open/merchant/api/v2`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(sign({ email }, m)),
      });
      const body = (await res.json()) as { model: { webUrl: string } };
      return new URL(body.model.webUrl);
    };
    const alphaUrl = await link(alpha, 'alice@example.com');
    assert.equal(alphaUrl.origin, `https://cards.alpha.test:${port}`);
    const betaUrl = await link(beta, 'alice@example.com');
    assert.equal(betaUrl.origin, `https://pay.beta.test:${port}`);

    // Beta's link on Alpha's host is refused and stays unspent.
    const crossed = await tls(port, 'cards.alpha.test', alphaCert.cert, `${betaUrl.pathname}${betaUrl.search}`);
    assert.equal(crossed.status, 403);
    assert.match(crossed.body, /belongs to another site/);
    const betaOpen = await tls(port, 'pay.beta.test', betaCert.cert, `${betaUrl.pathname}${betaUrl.search}`);
    assert.equal(betaOpen.status, 303);

    // Alpha's link on Alpha's host: a Secure, host-only session cookie.
    const opened = await tls(port, 'cards.alpha.test', alphaCert.cert, `${alphaUrl.pathname}${alphaUrl.search}`);
    assert.equal(opened.status, 303);
    const setCookie = String(opened.headers['set-cookie']);
    assert.match(setCookie, /^__Host-cp_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=900; Secure$/);
    const cookie = setCookie.split(';')[0] ?? '';
    const page = await tls(port, 'cards.alpha.test', alphaCert.cert, '/page', { cookie });
    assert.equal(page.status, 200);
    assert.match(page.body, /Alice Schmidt/);
    assert.match(page.body, /Alpha Wallet/);
    // The same session presented on Beta's host shows nothing.
    const elsewhere = await tls(port, 'pay.beta.test', betaCert.cert, '/page', { cookie });
    assert.equal(elsewhere.status, 403);
    assert.doesNotMatch(elsewhere.body, /Alice|Schmidt/);

    // Unmapped again, Alpha's links fall back to the public address.
    const removed = await cli('domain', 'remove', '--host', 'cards.alpha.test');
    assert.equal(removed.code, 0, removed.stderr);
    assert.equal((await link(alpha, 'alice@example.com')).origin, running.url);
    await assert.rejects(tls(port, 'cards.alpha.test', alphaCert.cert, '/healthz'), 'no certificate once removed');
    const again = await cli('domain', 'remove', '--host', 'cards.alpha.test');
    assert.equal(again.code, 1);
    assert.match(again.stderr, /cards\.alpha\.test is not mapped/);
  });

  it('merchant create --domain maps a host without a certificate: links use https://HOST (TLS ended in front)', async (t) => {
    const db = await isolatedDatabase(dialect);
    const dir = mkdtempSync(join(tmpdir(), 'cardprogram-domains-'));
    t.after(async () => {
      await db.cleanup();
      rmSync(dir, { recursive: true, force: true });
    });
    const env = { DATABASE_URL: childDatabaseUrl(db), CARDPROGRAM_DATA_DIR: dir };
    const made = await runCli(['merchant', 'create', '--name', 'Gamma', '--login-free', '--domain', 'card.gamma.test', '--json'], env);
    assert.equal(made.code, 0, made.stderr);
    const { appId } = JSON.parse(made.stdout);
    const listed = await runCli(['domain', 'list', '--merchant', appId], env);
    assert.match(listed.stdout, /^card\.gamma\.test {2}mch_\w+ {2}no certificate$/m);
    const bad = await runCli(['merchant', 'create', '--name', 'Delta', '--domain', 'not a host'], env);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /host: "not a host" is not a host name/);
    const merchants = await runCli(['merchant', 'list', '--json'], env);
    assert.equal(JSON.parse(merchants.stdout).length, 1, 'a bad --domain creates no merchant');
  });
});
