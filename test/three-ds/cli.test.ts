import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { testConfig } from '../helpers/app.js';
import { selfSigned } from '../helpers/certs.js';
import { childDatabaseUrl, runCli } from '../helpers/cli.js';
import { eachDialect } from '../helpers/dialects.js';
import { acs, card } from './helpers/acs.js';

eachDialect('3-D Secure: cardprogram threeds areq (the DS simulator)', (dialect) => {
  it('sends an AReq for a card (its number from the vault) and prints the ARes, the number masked; exit 1 on a refusal', async (t) => {
    const { h, url } = await acs(t, dialect);
    const c = await card(h);
    const env = {
      DATABASE_URL: childDatabaseUrl(h.db),
      CARDPROGRAM_DATA_DIR: h.db.dataDir,
      CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex'),
    };
    const y = await runCli(['threeds', 'areq', '--card', c.cardId, '--amount', '12.50', '--url', url, '--json'], env);
    assert.equal(y.code, 0, y.stderr);
    const out = JSON.parse(y.stdout);
    assert.equal(out.areq.acctNumber, `${c.pan.slice(0, 6)}******${c.pan.slice(-4)}`);
    assert.deepEqual([out.areq.purchaseAmount, out.areq.purchaseCurrency, out.areq.cardExpiryDate], ['1250', '978', c.expiry]);
    assert.deepEqual([out.answer.messageType, out.answer.transStatus, out.answer.eci], ['ARes', 'Y', '05']);
    assert.ok(!y.stdout.includes(c.pan) && !y.stderr.includes(c.pan), 'the number is never printed');

    const text = await runCli(['threeds', 'areq', '--pan', c.pan, '--expiry', '0101', '--amount', '5', '--url', url], {});
    assert.equal(text.code, 1, 'N is exit 1');
    assert.match(text.stdout, /transStatus: N\n {2}transStatusReason: 01/);
    assert.ok(!text.stdout.includes(c.pan));
    const bad = await runCli(['threeds', 'areq', '--card', c.cardId, '--pan', c.pan, '--amount', '5', '--url', url], env);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /give --card CARD_ID or --pan PAN/);
  });

  it('over TLS with the DS’s client certificate (--cert, --key, --ca)', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'cp-acs-cli-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const server = selfSigned(dir, 'localhost');
    const ds = selfSigned(dir, 'ds.scheme.example');
    const threeDs = { ...testConfig('').threeDs, port: 0, tls: { ca: ds.certFile, cert: server.certFile, key: server.keyFile } };
    const { url } = await acs(t, dialect, { threeDs });
    const https = url.replace('http:', 'https:').replace('127.0.0.1', 'localhost');
    const tls = ['--cert', ds.certFile, '--key', ds.keyFile, '--ca', server.certFile];
    const res = await runCli(['threeds', 'areq', '--pan', '4242420000000002', '--amount', '1', '--url', https, ...tls, '--json'], {});
    assert.equal(res.code, 1, res.stderr);
    assert.deepEqual([JSON.parse(res.stdout).answer.transStatus, JSON.parse(res.stdout).answer.transStatusReason], ['N', '08']);
    const noCert = await runCli(
      ['threeds', 'areq', '--pan', '4242420000000002', '--amount', '1', '--url', https, '--ca', server.certFile],
      {},
    );
    assert.equal(noCert.code, 1);
    assert.match(noCert.stderr, /--cert, --key and --ca go together/);
  });
});
