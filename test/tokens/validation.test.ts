// The TSP endpoint's strictness (decisions §15.2): a malformed request is a 400 `{error, detail}`
// naming the element and its rule; what is not JSON, too large or not a POST is refused in kind; and
// fuzzed bodies (random, or valid ones mutated) never get a 500 or a 503. The listener's transport
// (decisions §15.1): production refuses it without its TLS files; the sandbox allows plain HTTP on
// loopback only.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import fc from 'fast-check';
import { ConfigError, loadConfig } from '../../src/config.js';
import { testConfig } from '../helpers/app.js';
import { selfSigned } from '../helpers/certs.js';
import { eachDialect } from '../helpers/dialects.js';
import { card, notifyTo } from '../three-ds/helpers/acs.js';
import { send } from '../three-ds/helpers/ds.js';
import { type Json, provisionBody, tspService } from './helpers/tsp.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 60);
const SEED = Number(process.env.FUZZ_SEED ?? 20261127);

const PRODUCTION = {
  CARDPROGRAM_ENV: 'production',
  CARDPROGRAM_PUBLIC_URL: 'https://cards.example.org',
  CARDPROGRAM_BINS: '{"EUR":"41234567","USDT":"51234567"}',
  CARDPROGRAM_MASTER_KEY: 'aa6f1c2e9b4d7f30c8e5a1b6d2f9c4e7b3a8d5f1e6c2b9a4d7f3e8c1b5a2d6f9',
};

it('configuration: production refuses a TSP endpoint without its TLS files; the sandbox refuses plain HTTP off loopback; CARDPROGRAM_TOKENS_PER_CARD', () => {
  assert.throws(
    () => loadConfig({ ...PRODUCTION, CARDPROGRAM_TSP_PORT: '9443' }),
    (err: Error) => err instanceof ConfigError && /CARDPROGRAM_TSP_PORT: the TSP endpoint is HTTPS/.test(err.message),
  );
  assert.throws(
    () => loadConfig({ ...PRODUCTION, CARDPROGRAM_TSP_PORT: '9443', CARDPROGRAM_TSP_TLS_CA: '/nope' }),
    /CARDPROGRAM_TSP_TLS_CA, CARDPROGRAM_TSP_TLS_CERT and CARDPROGRAM_TSP_TLS_KEY go together/,
  );
  assert.throws(
    () => loadConfig({ CARDPROGRAM_TSP_PORT: '9443', CARDPROGRAM_TSP_HOST: '0.0.0.0' }),
    /loopback address only, not 0\.0\.0\.0/,
  );
  assert.throws(() => loadConfig({ CARDPROGRAM_TOKENS_PER_CARD: '0' }), /CARDPROGRAM_TOKENS_PER_CARD/);
  const sandbox = loadConfig({ CARDPROGRAM_TSP_PORT: '9443', CARDPROGRAM_TOKENS_PER_CARD: '3' });
  assert.deepEqual([sandbox.tokens.port, sandbox.tokens.tls, sandbox.tokens.perCard], [9443, null, 3]);
  const unset = loadConfig({});
  assert.deepEqual(
    [unset.tokens.port, unset.tokens.perCard, unset.tokens.requestsPerDay],
    [null, 10, 20],
    'unset: no endpoint, the defaults',
  );
});

/** A valid value of each kind, and hostile ones. */
const hostile = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.constantFrom(
    '',
    ' ',
    '0',
    '-1',
    '1e309',
    'NaN',
    '\u0000',
    '\u202e',
    '<script>',
    '__proto__',
    'constructor',
    '9999',
    '1399',
    '4242424242424242',
  ),
  fc.integer({ min: 70, max: 20_000 }).map((n) => '7'.repeat(n)),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string(), { maxLength: 12 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 3 }),
);

function mutated(base: Json) {
  const names = Object.keys(base);
  return fc
    .record({
      replace: fc.array(fc.tuple(fc.constantFrom(...names), hostile), { maxLength: 3 }),
      remove: fc.array(fc.constantFrom(...names), { maxLength: 2 }),
      add: fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }), hostile, { maxKeys: 1 }),
    })
    .map(({ replace, remove, add }) => {
      const m: Json = { ...add, ...base };
      for (const [name, value] of replace) m[name] = value;
      for (const name of remove) delete m[name];
      return m;
    });
}

/** Opens a TCP connection and tells whether the server closed it within `ms` without a byte. */
function closedAtOnce(port: number, ms: number): Promise<{ closed: boolean; socket: Socket }> {
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

eachDialect('tokens: the TSP endpoint’s validation', (dialect) => {
  it('caps: beyond CARDPROGRAM_TSP_MAX_PER_ADDRESS a new connection is closed at once; the others keep working', async (t) => {
    const { h, tsp } = await tspService(t, dialect, { maxPerAddress: 2 });
    const port = Number(new URL(tsp.base).port);
    const held = await Promise.all([closedAtOnce(port, 150), closedAtOnce(port, 150)]);
    assert.deepEqual(
      held.map((c) => c.closed),
      [false, false],
    );
    assert.equal((await closedAtOnce(port, 500)).closed, true, 'the third: closed at once');
    for (const c of held) c.socket.destroy();
    await new Promise((r) => setTimeout(r, 100));
    const ok = await tsp.provision(provisionBody({ pan: '4242420000000001', expiry: '3012' }));
    assert.deepEqual(ok.json, { decision: 'decline', reason: 'card_verification' });
    assert.match(await h.app.svc.metrics.text(), /cardprogram_tsp_connections_refused_total\{why="per_address"\} [1-9]/);
  });

  it('production: the TSP’s client certificate is required and verified against CARDPROGRAM_TSP_TLS_CA; without one, or another, no answer', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'cp-tsp-tls-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const server = selfSigned(dir, 'localhost');
    const scheme = selfSigned(dir, 'tsp.scheme.example');
    const intruder = selfSigned(dir, 'intruder.example');
    const tls = { ca: scheme.certFile, cert: server.certFile, key: server.keyFile };
    const { tsp } = await tspService(t, dialect, { tls }, { env: 'production' });
    const url = `${tsp.base.replace('http:', 'https:')}/tsp/provision`;
    const ca = readFileSync(server.certFile);
    const body = provisionBody({ pan: '4242420000000001', expiry: '3012' });
    const ok = await send(url, body, { tls: { ca, cert: readFileSync(scheme.certFile), key: readFileSync(scheme.keyFile) } });
    assert.deepEqual([ok.status, ok.json], [200, { decision: 'decline', reason: 'card_verification' }]);
    await assert.rejects(send(url, body, { tls: { ca } }), 'no client certificate: the handshake fails');
    await assert.rejects(
      send(url, body, { tls: { ca, cert: readFileSync(intruder.certFile), key: readFileSync(intruder.keyFile) } }),
      'a certificate the CA did not issue: refused',
    );
    const plain = await send(`${tsp.base}/tsp/provision`, body).catch(() => null);
    assert.notEqual(plain?.status, 200, 'plain HTTP to the TLS port gets no answer');
  });

  it('400 {error, detail} naming the element and its rule; unknown elements refused; 404, 405, 413, 415 in kind', async (t) => {
    const { h, tsp } = await tspService(t, dialect);
    const c = await card(h);
    const cases: Array<[Json, RegExp]> = [
      [{ ...provisionBody(c), tokenRequestorId: '123' }, /^tokenRequestorId: must be 11 digits$/],
      [{ ...provisionBody(c), walletProvider: 'paypal' }, /^walletProvider: must be apple_pay, google_pay, samsung_pay or card_on_file$/],
      [{ ...provisionBody(c), expiry: '2613' }, /^expiry: must be the card’s expiry written YYMM$/],
      [{ ...provisionBody(c), walletRiskScore: 10 }, /^walletRiskScore: must be a whole number from 0 to 9$/],
      [{ ...provisionBody(c), walletReasonCodes: Array(11).fill('X') }, /^walletReasonCodes: must be at most 10 codes$/],
      [{ ...provisionBody(c), walletReasonCodes: ['A'.repeat(33)] }, /^walletReasonCodes\[0\]: must be 1 to 32 letters/],
      [{ ...provisionBody(c), device: { type: 'phone', name: 'x'.repeat(65) } }, /^device\.name: must be 1 to 64 characters/],
      [{ ...provisionBody(c), device: { type: 'car' } }, /^device\.type: must be phone, watch, tablet, wearable or other$/],
      [{ ...provisionBody(c), device: { type: 'phone', imei: '1' } }, /^device\.imei: is not an element of this request$/],
      [{ ...provisionBody(c), cvv2: '12' }, /^cvv2: must be 3 or 4 digits$/],
      [{ ...provisionBody(c), accountNumber: undefined }, /^accountNumber: is required$/],
      [{ ...provisionBody(c), pin: '1234' }, /^pin: is not an element of this request$/],
    ];
    for (const [body, detail] of cases) {
      const r = await tsp.provision(body);
      assert.equal(r.status, 400, `${JSON.stringify(body)} → ${r.text}`);
      assert.deepEqual(Object.keys(r.json).sort(), ['detail', 'error']);
      assert.equal(r.json.error, 'invalid_request');
      assert.match(r.json.detail, detail);
      assert.ok(!r.text.includes(c.pan), 'the answer never echoes the PAN');
    }
    assert.match((await tsp.verify({ tokenReferenceId: 'X1', code: '12345' })).json.detail, /^code: must be 6 digits$/);
    assert.match(
      (await tsp.activationCode({ tokenReferenceId: 'bad ref', methodId: '1' })).json.detail,
      /^tokenReferenceId: must be 1 to 64/,
    );
    assert.match(
      (await tsp.notify({ tokenReferenceId: 'X1', event: 'lost', at: 'now' })).json.detail,
      /^event: must be created, activated/,
    );
    assert.match(
      (await tsp.notify({ tokenReferenceId: 'X1', event: 'suspended', at: '2099-01-01T00:00:00Z' })).json.detail,
      /^at: must not be more than 5 minutes ahead/,
    );
    assert.deepEqual((await tsp.raw('/tsp/provision', '[1]')).json, { error: 'invalid_request', detail: 'body: must be a JSON object' });
    assert.equal((await tsp.raw('/tsp/provision', '{"requestId":"a","requestId":"b"}')).json.detail, 'requestId: appears twice');
    assert.equal((await tsp.raw('/tsp/provision', '{not json')).status, 400);
    assert.equal((await tsp.raw('/tsp/provision', '{}', { 'content-type': 'text/plain' })).status, 415);
    assert.equal((await tsp.raw('/tsp/provision', '', {}, 'GET')).status, 405);
    assert.equal((await tsp.raw('/tsp/other', '{}')).status, 404);
    assert.equal((await tsp.raw('/tsp/provision', 'x'.repeat(40_000))).status, 413);
    assert.equal((await h.db.database.db.selectFrom('token_provision_requests').selectAll().execute()).length, 0, 'nothing recorded');
  });

  it('fuzz: random and mutated bodies to every path never get a 5xx; every answer is JSON', async (t) => {
    const { h, tsp } = await tspService(t, dialect);
    await notifyTo(t, h);
    const c = await card(h);
    const made = provisionBody(c, { walletRiskScore: 5 });
    const pending = await tsp.provision(made);
    assert.equal(pending.json.decision, 'require_authentication');
    const bases: Array<[string, Json]> = [
      ['/tsp/provision', provisionBody(c)],
      ['/tsp/activation-code', { tokenReferenceId: made.tokenReferenceId, methodId: '1' }],
      ['/tsp/activation-code/verify', { tokenReferenceId: made.tokenReferenceId, code: '123456' }],
      [
        '/tsp/notify',
        { tokenReferenceId: made.tokenReferenceId, event: 'device_changed', at: new Date().toISOString(), device: { type: 'phone' } },
      ],
    ];
    const bodies = fc.oneof(
      ...bases.map(([path, base]) => mutated(base).map((b) => [path, JSON.stringify(b)] as const)),
      fc.tuple(fc.constantFrom(...bases.map(([p]) => p)), fc.oneof(fc.string(), fc.json())).map(([p, s]) => [p, s] as const),
    );
    await fc.assert(
      fc.asyncProperty(bodies, async ([path, text]) => {
        const r = await tsp.raw(path, text);
        assert.ok(r.status < 500, `${path} ${text.slice(0, 300)} → ${r.status} ${r.text}`);
        assert.ok(typeof r.json.error === 'string' || r.status === 200, r.text);
      }),
      { numRuns: RUNS, seed: SEED },
    );
  });
});
