// The ACS's results (RReq) to the directory server over HTTPS, as in production (decisions §14.1): a
// DS simulator on node:https with a server certificate from the scheme's own CA (not one the system
// trusts), requiring a client certificate from the issuer's CA; the ACS configured from the
// variables (CARDPROGRAM_3DS_DS_URL, CARDPROGRAM_3DS_DS_CA, CARDPROGRAM_3DS_DS_CERT/_KEY) as loadConfig
// reads them in production. A DS whose certificate is not under CARDPROGRAM_3DS_DS_CA is sent nothing;
// the result waits for a retry.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { it, type TestContext } from 'node:test';
import { threeDsConfig } from '../../src/config-three-ds.js';
import { sendResults } from '../../src/three-ds/results.js';
import { type Harness, randomStr } from '../helpers/app.js';
import { outboundPki, type TestCert } from '../helpers/certs.js';
import type { TestDialect } from '../helpers/db.js';
import { eachDialect } from '../helpers/dialects.js';
import { acs, card, challengeEnded, notifyTo } from './helpers/acs.js';
import { directoryServer } from './helpers/challenge-sim.js';

const CLIENT_CN = 'cardprogram-acs-0001';
/**
 * The scheme's private CA, which signs the DS's server certificate (CARDPROGRAM_3DS_DS_CA); the CA
 * that signs the ACS's client certificate, the one the DS trusts for its callers; another CA.
 */
const { scheme, callers: acsCa, rogue, client, server: dsServer } = outboundPki('ds', CLIENT_CN, 'ds.scheme.test');

async function setUp(t: TestContext, dialect: TestDialect, server: TestCert = dsServer) {
  const ds = await directoryServer(t, { tls: { cert: server.cert, key: server.key, ca: readFileSync(acsCa.certFile, 'utf8') } });
  // As loadConfig reads the variables in production (their files checked as at start).
  const config = threeDsConfig(
    {
      CARDPROGRAM_3DS_DS_URL: ds.url,
      CARDPROGRAM_3DS_DS_CA: scheme.certFile,
      CARDPROGRAM_3DS_DS_CERT: client.certFile,
      CARDPROGRAM_3DS_DS_KEY: client.keyFile,
    },
    'production',
    '127.0.0.1',
  );
  assert.deepEqual(config.ds, { url: ds.url, cert: client.certFile, key: client.keyFile, ca: scheme.certFile });
  const { h } = await acs(t, dialect, { threeDs: { ds: config.ds } as never });
  await notifyTo(t, h);
  await h.call('/api/network/threeDsSettingsUpdate.html', { challengeMethod: 'oob', randomStr: randomStr() });
  const c = await card(h);
  return { h, ds, challengeEnded: () => challengeEnded(h, c.cardId) };
}

const result = (h: Harness, acsTransId: string) =>
  h.db.database.db
    .selectFrom('three_ds_results')
    .select(['status', 'attempts', 'last_error'])
    .where('acs_trans_id', '=', acsTransId)
    .executeTakeFirstOrThrow();

eachDialect('3-D Secure: results to the DS over HTTPS', (dialect) => {
  it('the RReq reaches the DS over HTTPS, verified against CARDPROGRAM_3DS_DS_CA, with the ACS’s client certificate; sent', async (t) => {
    const { h, ds, challengeEnded } = await setUp(t, dialect);
    const acsTransId = await challengeEnded();
    assert.equal(await sendResults(h.app.svc), 1);
    assert.deepEqual(
      ds.rreqs.map((m) => [m.messageType, m.acsTransID, m.transStatus]),
      [['RReq', acsTransId, 'Y']],
    );
    assert.deepEqual(ds.clientCertificates, [CLIENT_CN]);
    assert.deepEqual(await result(h, acsTransId), { status: 'sent', attempts: 1, last_error: null });
  });

  it('a DS whose certificate is not under CARDPROGRAM_3DS_DS_CA is sent nothing: a TLS failure recorded, the result pending', async (t) => {
    const { h, ds, challengeEnded } = await setUp(t, dialect, rogue.issue('ds.scheme.test', { ip: ['127.0.0.1'], usage: 'server' }));
    const acsTransId = await challengeEnded();
    assert.equal(await sendResults(h.app.svc), 0);
    assert.equal(ds.rreqs.length, 0, 'nothing delivered');
    const row = await result(h, acsTransId);
    assert.deepEqual([row.status, Number(row.attempts)], ['pending', 1]);
    assert.match(row.last_error ?? '', /^TLS UNABLE_TO_VERIFY_LEAF_SIGNATURE: /);
  });
});
