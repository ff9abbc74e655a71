import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { TestContext } from 'node:test';
import { it } from 'node:test';
import { tspClientConfig } from '../../src/config-tsp.js';
import { tspBackoffMs } from '../../src/tokens/tsp-calls.js';
import { build, type Harness } from '../helpers/app.js';
import { fundedCard, ok } from '../helpers/cards.js';
import { outboundPki, type TestCert } from '../helpers/certs.js';
import type { TestDialect } from '../helpers/db.js';
import { eachDialect } from '../helpers/dialects.js';
import { seedToken } from '../helpers/tokens.js';
import { attemptsOf, callsOf, flushTsp, tspSimulator } from '../helpers/tsp.js';

/*
 * The service's calls to the TSP over HTTPS, as in production (decisions §15.1, §15.4): a TSP
 * simulator on node:https with a server certificate from the scheme's own CA (not one the system
 * trusts), requiring a client certificate from the issuer's CA; the service configured from the
 * variables (CARDPROGRAM_TSP_URL, CARDPROGRAM_TSP_CA, CARDPROGRAM_TSP_CLIENT_CERT/_KEY) as loadConfig
 * reads them in production. A TSP whose certificate is not under CARDPROGRAM_TSP_CA, or does not
 * name the TSP's address, is told nothing; the call waits for a retry.
 */

const CLIENT_CN = 'cardprogram-issuer-40010030273';
/**
 * The scheme's private CA, which signs the TSP's server certificate (CARDPROGRAM_TSP_CA); the CA that
 * signs the issuer's client certificate, the one the TSP trusts for its callers; another CA.
 */
const { scheme, callers: issuers, rogue, client, server: tspServer } = outboundPki('tsp', CLIENT_CN, 'tsp.scheme.test');

async function setUp(t: TestContext, dialect: TestDialect, opts: { server?: TestCert; ca?: boolean } = {}) {
  const server = opts.server ?? tspServer;
  const tsp = await tspSimulator(t, { tls: { cert: server.cert, key: server.key, ca: readFileSync(issuers.certFile, 'utf8') } });
  // As loadConfig reads the variables in production (their files checked as at start).
  const tspClient = tspClientConfig(
    {
      CARDPROGRAM_TSP_URL: tsp.url,
      ...(opts.ca === false ? {} : { CARDPROGRAM_TSP_CA: scheme.certFile }),
      CARDPROGRAM_TSP_CLIENT_CERT: client.certFile,
      CARDPROGRAM_TSP_CLIENT_KEY: client.keyFile,
    },
    'production',
  );
  assert.ok(tspClient);
  assert.match(tspClient.url, /^https:\/\/127\.0\.0\.1:\d+$/);
  const clock = { now: Date.now() };
  const h = await build(t, dialect, { tspClient }, { clock: () => clock.now });
  const { cardId } = await fundedCard(h);
  return { h, tsp, clock, cardId };
}

eachDialect('calls to the TSP over HTTPS', (dialect) => {
  it('a merchant’s suspend and a card freeze reach the TSP over HTTPS: verified against CARDPROGRAM_TSP_CA, with the client certificate; the calls done', async (t) => {
    const { h, tsp, cardId } = await setUp(t, dialect);
    const mine = await seedToken(h.app.svc, { cardId });
    const other = await seedToken(h.app.svc, { cardId });
    await ok(h, '/api/network/tokenSuspend.html', { tokenId: mine.tokenId, reason: 'phone lost' });
    await flushTsp(h.app.svc);
    await ok(h, '/api/network/cardFreeze.html', { cardId, reason: 'cardholder asked' });
    await flushTsp(h.app.svc);

    const [suspend] = await callsOf(h, mine.tokenId);
    const [frozen] = await callsOf(h, other.tokenId);
    assert.ok(suspend && frozen);
    assert.deepEqual(
      tsp.calls.map((c) => [c.tokenReferenceId, c.action, c.body, c.idempotencyKey, c.clientCertificate, c.answered]),
      [
        [mine.tokenReferenceId, 'suspend', { reason: 'phone lost' }, suspend.id, CLIENT_CN, 200],
        [other.tokenReferenceId, 'suspend', { reason: 'card_frozen' }, frozen.id, CLIENT_CN, 200],
      ],
    );
    assert.deepEqual(tsp.tlsErrors, []);
    for (const call of [suspend, frozen]) {
      assert.deepEqual([call.status, call.attempts, call.last_error], ['done', 1, null]);
      assert.deepEqual(
        (await attemptsOf(h, call.id)).map((a) => [a.attempt, a.http_status, a.error, a.outcome]),
        [[1, 200, null, 'done']],
      );
    }
  });

  it('a TSP whose certificate is not under CARDPROGRAM_TSP_CA is told nothing: the attempt recorded as a TLS failure, the call pending; sent once the TSP presents the scheme’s', async (t) => {
    const { h, tsp, clock, cardId } = await setUp(t, dialect, {
      server: rogue.issue('tsp.scheme.test', { ip: ['127.0.0.1'], usage: 'server' }),
    });
    const tok = await seedToken(h.app.svc, { cardId });
    await ok(h, '/api/network/tokenSuspend.html', { tokenId: tok.tokenId, reason: 'phone lost' });
    await flushTsp(h.app.svc);
    assert.equal(tsp.calls.length, 0, 'nothing delivered');
    let [call] = await callsOf(h, tok.tokenId);
    assert.ok(call);
    assert.equal(call.status, 'pending');
    assert.equal(call.attempts, 1);
    assert.match(call.last_error ?? '', /^TLS UNABLE_TO_VERIFY_LEAF_SIGNATURE: /);
    assert.equal(Number(call.next_at), clock.now + tspBackoffMs(1));
    const [first] = await attemptsOf(h, call.id);
    assert.deepEqual([first?.attempt, first?.http_status, first?.error, first?.outcome], [1, null, call.last_error, 'retry']);

    // The TSP now presents the scheme's certificate: the retry goes, with the same key.
    tsp.present({ cert: tspServer.cert, key: tspServer.key });
    clock.now += tspBackoffMs(1);
    await flushTsp(h.app.svc);
    [call] = await callsOf(h, tok.tokenId);
    assert.deepEqual([call?.status, call?.attempts], ['done', 2]);
    assert.deepEqual(
      tsp.calls.map((c) => [c.tokenReferenceId, c.action, c.idempotencyKey, c.clientCertificate]),
      [[tok.tokenReferenceId, 'suspend', call?.id, CLIENT_CN]],
    );
  });

  it('the TSP’s name is checked: a certificate from the scheme’s CA for another name is refused (ERR_TLS_CERT_ALTNAME_INVALID), nothing delivered', async (t) => {
    const { h, tsp, cardId } = await setUp(t, dialect, {
      server: scheme.issue('tsp.other.test', { dns: ['tsp.other.test'], usage: 'server' }),
    });
    const tok = await seedToken(h.app.svc, { cardId });
    await ok(h, '/api/network/tokenDelete.html', { tokenId: tok.tokenId });
    await flushTsp(h.app.svc);
    assert.equal(tsp.calls.length, 0, 'nothing delivered');
    const [call] = await callsOf(h, tok.tokenId);
    assert.deepEqual([call?.status, call?.attempts], ['pending', 1]);
    assert.match(call?.last_error ?? '', /^TLS ERR_TLS_CERT_ALTNAME_INVALID: .*127\.0\.0\.1/);
  });

  it('without CARDPROGRAM_TSP_CA the system’s trust store decides: the scheme’s private CA is not in it, nothing delivered', async (t) => {
    const { h, tsp, cardId } = await setUp(t, dialect, { ca: false });
    const tok = await seedToken(h.app.svc, { cardId });
    await ok(h, '/api/network/tokenSuspend.html', { tokenId: tok.tokenId });
    await flushTsp(h.app.svc);
    assert.equal(tsp.calls.length, 0, 'nothing delivered');
    const [call] = await callsOf(h, tok.tokenId);
    assert.deepEqual([call?.status, call?.attempts], ['pending', 1]);
    assert.match(call?.last_error ?? '', /^TLS UNABLE_TO_VERIFY_LEAF_SIGNATURE: /);
  });
});
