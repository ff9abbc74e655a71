import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { scanLogs } from './helpers/log-audit.js';

// The scan that runs after the whole suite (scripts/test.mjs) must find what it looks for, and only that.
it('the secrets audit finds noted secrets and secret shapes in logs, and passes clean lines', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cardprogram-audit-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const token = 'Zx3_Qm-8Kd0aP1vW7yT2nB5cL9sH4jF6gR0eU1iO2pA';
  writeFileSync(
    join(dir, 'secrets-1.jsonl'),
    [
      { kind: 'page-token', value: token },
      { kind: 'cvv', value: '731' },
      { kind: 'pan', value: '5555555555554444' },
      // A 3-D Secure one-time code (issue 41): six digits, found beside a name that says code or otp.
      { kind: 'otp', value: '482913' },
    ]
      .map((x) => JSON.stringify(x))
      .join('\n'),
  );
  const clean = [
    '{"level":30,"time":1795332926869,"traceId":"39acb9b90d2409a44a7bc57ff0dd8cd1","msg":"incoming request"}',
    '{"msg":"card issued","cardNo":"424242******4242","amount":4242424242}',
    '{"sign":"9f04958cc839b5534d16a5a59501c5cc30b42bd60172528fa17179d3e9f84120","statusCode":731}',
    '{"url":"/page/open?token=[redacted]"}',
    '{"url":"/console/login?next=%2Fconsole%2Fsearch","res":{"statusCode":303,"location":"/console/cards/card_x"}}',
    '{"amount":482913,"statusCode":482913,"code":"000000"}',
  ];
  const dirty: Array<[string, string]> = [
    ['pan', '{"msg":"declined","pan":"4242424242424242"}'],
    ['pan', 'card 4242 4242 4242 4242 declined'],
    ['pan', 'noted number 5555555555554444 in an error'],
    ['cvv', '{"cvv":"123"}'],
    ['cvv', 'reveal: cvv 731'],
    ['merchant-secret', `{"secret":"sk_test_${'ab12'.repeat(8)}"}`],
    ['webhook-secret', '{"webhookSecret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}'],
    ['page-token', `{"url":"/page/open?token=${token}"}`],
    // Issue 26.1: a card number inside a console redirect's next, encoded once or twice, spaces as + or %20.
    ['pan', '{"url":"/console/login?next=%2Fconsole%2Fsearch%3Fq%3D4242%2B4242%2B4242%2B4242"}'],
    ['pan', '{"url":"/console/login?next=%252Fconsole%252Fsearch%253Fq%253D4242%25204242%25204242%25204242"}'],
    ['pan', '/console/login?next=%2Fconsole%2Fsearch%3Fq%3D%35%35%35%35%35%35%35%35%35%35%35%35%34%34%34%34'],
    ['otp', '{"type":"threeDs.otp","code":"482913"}'],
    ['otp', 'the cardholder typed otp=482913'],
  ];
  writeFileSync(join(dir, 'app-1.log'), `${[...clean, ...dirty.map(([, line]) => line)].join('\n')}\n`);
  const result = scanLogs(dir, ['424242', '535353']);
  assert.equal(result.files, 1);
  assert.equal(result.secrets, 4);
  assert.deepEqual(
    result.findings.map((f) => [f.kind, f.line]),
    dirty.map(([kind], i) => [kind, clean.length + i + 1]),
  );
});
