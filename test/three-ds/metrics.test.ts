// The ACS's metrics read from GET /metrics (docs/3ds.md "Watching it", docs/operations.md "The 3-D
// Secure ACS"): the results waiting for the DS (how many, the oldest's age, those given up), the
// RReq tries by outcome, and the authorizations declined for 3-D Secure by reason and where they
// came from (the link, the sandbox).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { it } from 'node:test';
import { encodeField48 } from '../../src/iso8583/field48.js';
import { sendResults } from '../../src/three-ds/results.js';
import { type Harness, randomStr } from '../helpers/app.js';
import { eachDialect } from '../helpers/dialects.js';
import { authorizationRequest, cardSecrets, linkOf, Peer } from '../helpers/link.js';
import { acs, card, challengeEnded, notifyTo } from './helpers/acs.js';
import { directoryServer } from './helpers/challenge-sim.js';

const TOKEN = 'metrics-token-3ds-0123456789abcdef';

async function scrape(h: Harness): Promise<string> {
  const res = await h.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(res.statusCode, 200, res.body);
  return res.body;
}

/** The value of one sample line, e.g. value(text, 'x_total{a="b"}'); undefined when absent. */
function value(text: string, sample: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
  return line === undefined ? undefined : Number(line.slice(sample.length + 1));
}

eachDialect('3-D Secure: metrics on /metrics', (dialect) => {
  it('the results backlog (pending, oldest age, given up) and the RReq tries by outcome', async (t) => {
    const now = { ms: Date.now() };
    const ds = await directoryServer(t);
    const { h } = await acs(
      t,
      dialect,
      { metricsToken: TOKEN, threeDs: { ds: { url: ds.url, cert: null, key: null } } as never },
      { clock: () => now.ms },
    );
    await notifyTo(t, h);
    await h.call('/api/network/threeDsSettingsUpdate.html', { challengeMethod: 'oob', randomStr: randomStr() });
    const c = await card(h);

    let text = await scrape(h);
    assert.equal(value(text, 'cardprogram_3ds_results_pending'), 0);
    assert.equal(value(text, 'cardprogram_3ds_results_oldest_seconds'), 0);
    assert.equal(value(text, 'cardprogram_3ds_results_failed'), 0);

    // The DS away: the result waits and ages; each try is a retry.
    await challengeEnded(h, c.cardId);
    ds.failNext(1_000);
    now.ms += 90_000;
    assert.equal(await sendResults(h.app.svc), 0);
    text = await scrape(h);
    assert.equal(value(text, 'cardprogram_3ds_results_pending'), 1);
    assert.equal(value(text, 'cardprogram_3ds_results_oldest_seconds'), 90);
    assert.equal(value(text, 'cardprogram_3ds_results_total{outcome="retry"}'), 1);

    // 24 hours of failures: given up.
    now.ms += 24 * 3_600_000;
    assert.equal(await sendResults(h.app.svc), 0);
    text = await scrape(h);
    assert.equal(value(text, 'cardprogram_3ds_results_pending'), 0);
    assert.equal(value(text, 'cardprogram_3ds_results_oldest_seconds'), 0);
    assert.equal(value(text, 'cardprogram_3ds_results_failed'), 1);
    assert.equal(value(text, 'cardprogram_3ds_results_total{outcome="failed"}'), 1);

    // The DS back: the next one is sent.
    ds.failNext(0);
    await challengeEnded(h, c.cardId);
    assert.equal(await sendResults(h.app.svc), 1);
    text = await scrape(h);
    assert.equal(value(text, 'cardprogram_3ds_results_total{outcome="sent"}'), 1);
    assert.equal(value(text, 'cardprogram_3ds_results_pending'), 0);
  });

  it('authorizations declined for 3-D Secure by reason and origin: authentication_failed and authentication_required, on the link and in the sandbox', async (t) => {
    const { h } = await acs(t, dialect, { metricsToken: TOKEN });
    const link = await linkOf(t, h);
    const peer = await Peer.open(t, link.port);
    const a = await card(h);
    const secrets = await cardSecrets(h, a.cardId);
    const forged = randomBytes(20).toString('base64');

    const text0 = await scrape(h);
    assert.equal(value(text0, 'cardprogram_3ds_authorization_refusals_total{reason="authentication_failed",via="link"}'), undefined);

    // The link: a forged value (05), then with 3-D Secure required none at all (1A), twice.
    const withValue = authorizationRequest(secrets, {
      amount: 500,
      extra: {
        22: '812',
        48: encodeField48([
          ['42', '05'],
          ['43', forged],
        ]),
      },
    });
    assert.equal((await peer.ask(withValue)).fields.get(39), '05');
    h.app.svc.config.threeDs = { ...h.app.svc.config.threeDs, required: true };
    for (let i = 0; i < 2; i++) {
      const none = authorizationRequest(secrets, { amount: 4000, extra: { 22: '812' } });
      assert.equal((await peer.ask(none)).fields.get(39), '1A');
    }
    // The sandbox: a forged value (2732), none where required (2733).
    const authorize = (amount: number, extra: Record<string, unknown> = {}) =>
      h.call('/sandbox/network/authorize', { cardId: a.cardId, amount, channel: 'ecommerce', randomStr: randomStr(), ...extra });
    assert.equal((await authorize(5, { authenticationValue: forged })).body.code, '2732');
    assert.equal((await authorize(45)).body.code, '2733');

    const text = await scrape(h);
    assert.equal(value(text, 'cardprogram_3ds_authorization_refusals_total{reason="authentication_failed",via="link"}'), 1);
    assert.equal(value(text, 'cardprogram_3ds_authorization_refusals_total{reason="authentication_required",via="link"}'), 2);
    assert.equal(value(text, 'cardprogram_3ds_authorization_refusals_total{reason="authentication_failed",via="sandbox"}'), 1);
    assert.equal(value(text, 'cardprogram_3ds_authorization_refusals_total{reason="authentication_required",via="sandbox"}'), 1);
    // The sandbox's are also among the authorizations by decline reason.
    assert.equal(value(text, 'cardprogram_authorizations_total{decision="declined",reason="authentication_required"}'), 1);
  });
});
