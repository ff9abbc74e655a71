import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';
import { keyWeakness } from '../src/crypto/key-quality.js';

/** A random-looking master key (a fixed all-equal one is refused: issue 14.6). */
const KEY = randomBytes(32).toString('hex');

import { SecretBox } from '../src/crypto/secretbox.js';

describe('configuration from the environment (decisions §1)', () => {
  const dir = () => mkdtempSync(join(tmpdir(), 'cardprogram-cfg-'));

  it('defaults: sandbox, 127.0.0.1:8080, SQLite in the data dir, a generated master key kept across starts', (t) => {
    const d = dir();
    t.after(() => rmSync(d, { recursive: true, force: true }));
    const c = loadConfig({ CARDPROGRAM_DATA_DIR: d });
    assert.equal(c.env, 'sandbox');
    assert.equal(c.port, 8080);
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.databaseUrl, `file:${join(d, 'cardprogram.sqlite')}`);
    assert.equal(c.publicUrl, 'http://127.0.0.1:8080');
    assert.equal(c.masterKey.length, 32);
    assert.equal(readFileSync(join(d, 'master.key'), 'utf8').trim(), c.masterKey.toString('hex'));
    assert.deepEqual(loadConfig({ CARDPROGRAM_DATA_DIR: d }).masterKey, c.masterKey);
    assert.deepEqual(c.rateLimit, { perSecond: 100, burst: 200 });
    // No replica unless one is named: every read goes to DATABASE_URL.
    assert.equal(c.databaseReplicaUrl, null);
    assert.equal(c.replicaMaxLagMs, 2000);
    const replicated = loadConfig({
      CARDPROGRAM_DATA_DIR: d,
      DATABASE_URL: 'postgres://primary/db',
      DATABASE_REPLICA_URL: 'postgres://replica/db',
      CARDPROGRAM_REPLICA_MAX_LAG_MS: '500',
    });
    assert.deepEqual([replicated.databaseReplicaUrl, replicated.replicaMaxLagMs], ['postgres://replica/db', 500]);
    assert.equal(loadConfig({ CARDPROGRAM_DATA_DIR: d, CARDPROGRAM_RATE_LIMIT: '0' }).rateLimit, null);
    assert.deepEqual(loadConfig({ CARDPROGRAM_DATA_DIR: d, CARDPROGRAM_RATE_LIMIT: '5', CARDPROGRAM_RATE_BURST: '7' }).rateLimit, {
      perSecond: 5,
      burst: 7,
    });
  });

  it('reads every variable', () => {
    const key = randomBytes(32);
    const c = loadConfig({
      PORT: '9000',
      HOST: '0.0.0.0',
      DATABASE_URL: 'postgres://u@db/x',
      CARDPROGRAM_ENV: 'production',
      CARDPROGRAM_PUBLIC_URL: 'https://cards.example.com/',
      CARDPROGRAM_MASTER_KEY: key.toString('base64'),
      CARDPROGRAM_BINS: '{"EUR":"41000001","USDT":"51000001"}',
      CARDPROGRAM_TRUST_PROXY: '10.0.0.1, 10.1.0.0/16,fd00::/8',
    });
    assert.equal(c.port, 9000);
    assert.equal(c.host, '0.0.0.0');
    assert.equal(c.databaseUrl, 'postgres://u@db/x');
    assert.equal(c.env, 'production');
    assert.equal(c.publicUrl, 'https://cards.example.com');
    assert.deepEqual(c.masterKey, key);
    assert.equal(c.demoMerchant, false);
    assert.deepEqual(c.program.bins, { EUR: '41000001', USDT: '51000001' });
    assert.deepEqual(c.trustProxy, ['10.0.0.1', '10.1.0.0/16', 'fd00::/8']);
    assert.deepEqual(loadConfig({ CARDPROGRAM_MASTER_KEY: KEY }).trustProxy, [], 'unset: no proxy is trusted');
    assert.equal(c.requireTimestamp, true, 'production requires a signed timestamp by default');
  });

  it('production refuses to start, one line each, without an https public URL or with a sandbox BIN', () => {
    const prod = {
      CARDPROGRAM_ENV: 'production',
      CARDPROGRAM_MASTER_KEY: KEY,
      CARDPROGRAM_PUBLIC_URL: 'https://cards.example.com',
      CARDPROGRAM_BINS: '{"EUR":"41000001","USDT":"51000001"}',
    };
    assert.equal(loadConfig(prod).env, 'production', 'the complete set starts');
    const publicUrl = /^CARDPROGRAM_PUBLIC_URL must be an https:\/\/ address in production, got "[^"\n]+"$/;
    const bins =
      /^CARDPROGRAM_BINS must give the issuer's own BIN for every currency in production \(EUR and USDT\), none inside the sandbox's 424242 or 535353: [^\n]+$/;
    const cases: Array<[Record<string, string | undefined>, RegExp]> = [
      [{ CARDPROGRAM_PUBLIC_URL: undefined }, publicUrl],
      [{ CARDPROGRAM_PUBLIC_URL: 'http://cards.example.com' }, publicUrl],
      [{ CARDPROGRAM_BINS: undefined }, bins],
      [{ CARDPROGRAM_BINS: '{"EUR":"41000001"}' }, bins],
      [{ CARDPROGRAM_BINS: '{"EUR":"424242","USDT":"51000001"}' }, bins],
      // Issue 26.4: a BIN inside a sandbox range, and a sandbox BIN moved to the other currency.
      [{ CARDPROGRAM_BINS: '{"EUR":"42424299","USDT":"51000001"}' }, bins],
      [{ CARDPROGRAM_BINS: '{"EUR":"4242420","USDT":"51000001"}' }, bins],
      [{ CARDPROGRAM_BINS: '{"EUR":"535353","USDT":"51000001"}' }, bins],
      [{ CARDPROGRAM_BINS: '{"EUR":"41000001","USDT":"42424201"}' }, bins],
    ];
    for (const [change, msg] of cases) {
      assert.throws(
        () => loadConfig({ ...prod, ...change }),
        (e: Error) => e instanceof ConfigError && msg.test(e.message),
        JSON.stringify(change),
      );
    }
    // A BIN set and a currency left to its default read differently (issue 43.10): "USDT 535353" read as if it had been set.
    assert.throws(
      () => loadConfig({ ...prod, CARDPROGRAM_BINS: '{"EUR":"42424299"}' }),
      (e: Error) =>
        e.message ===
        "CARDPROGRAM_BINS must give the issuer's own BIN for every currency in production (EUR and USDT), none inside the sandbox's 424242 or 535353: EUR is set to 42424299, inside the sandbox's 424242; USDT is not set (the default is the sandbox's 535353)",
    );
    assert.throws(
      () => loadConfig({ ...prod, CARDPROGRAM_BINS: '{"EUR":"41000001","USDT":"535353"}' }),
      (e: Error) => e.message.endsWith(': USDT is set to 535353, a sandbox BIN'),
    );
    // A CARDPROGRAM_BINS that does not parse is that one problem, not a second about BINs.
    assert.throws(
      () => loadConfig({ ...prod, CARDPROGRAM_BINS: '{"EUR":' }),
      (e: Error) => e.message === 'CARDPROGRAM_BINS must be a JSON object',
    );
    // The sandbox keeps its test BINs and plain http.
    assert.equal(
      loadConfig({ ...prod, CARDPROGRAM_ENV: 'sandbox', CARDPROGRAM_BINS: undefined, CARDPROGRAM_PUBLIC_URL: undefined }).env,
      'sandbox',
    );
  });

  it('every problem at once, each on its own line: production without a master key, an http URL, the sandbox BINs, a bad database URL and a bad port (issue 30.7)', () => {
    assert.throws(
      () =>
        loadConfig({
          CARDPROGRAM_ENV: 'production',
          DATABASE_URL: 'mysql://db/cards',
          PORT: 'eighty',
          CARDPROGRAM_PUBLIC_URL: 'http://cards.example.com',
          LOG_LEVEL: 'verbose',
        }),
      (e: Error) => {
        assert.ok(e instanceof ConfigError);
        assert.deepEqual(e.message.split('\n'), [
          '6 configuration problems:',
          '- PORT must be a whole number, got "eighty"',
          '- DATABASE_URL must start with file: (SQLite) or postgres:// (PostgreSQL)',
          '- CARDPROGRAM_MASTER_KEY is required in production',
          '- CARDPROGRAM_PUBLIC_URL must be an https:// address in production, got "http://cards.example.com"',
          "- CARDPROGRAM_BINS must give the issuer's own BIN for every currency in production (EUR and USDT), none inside the sandbox's 424242 or 535353: EUR is not set (the default is the sandbox's 424242); USDT is not set (the default is the sandbox's 535353)",
          '- LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent, got "verbose"',
        ]);
        return true;
      },
    );
  });

  it('the console is off unless CARDPROGRAM_CONSOLE says on; the PostgreSQL pool is 10 connections, waited for at most 5 s, with prepared statements', () => {
    const base = { CARDPROGRAM_MASTER_KEY: KEY };
    assert.equal(loadConfig(base).console, false);
    assert.equal(loadConfig({ ...base, CARDPROGRAM_CONSOLE: 'on' }).console, true);
    assert.equal(loadConfig({ ...base, CARDPROGRAM_CONSOLE: 'off' }).console, false);
    assert.deepEqual(loadConfig(base).pgPool, { size: 10, waitMs: 5000, prepared: true, urgentSize: 4 });
    assert.deepEqual(
      loadConfig({
        ...base,
        CARDPROGRAM_PG_POOL_SIZE: '4',
        CARDPROGRAM_PG_POOL_WAIT_MS: '300',
        CARDPROGRAM_PG_PREPARED: 'off',
        CARDPROGRAM_PG_URGENT_POOL_SIZE: '0',
      }).pgPool,
      { size: 4, waitMs: 300, prepared: false, urgentSize: 0 },
    );
    assert.throws(() => loadConfig({ ...base, CARDPROGRAM_PG_PREPARED: 'sometimes' }), /CARDPROGRAM_PG_PREPARED/);
  });

  it('CARDPROGRAM_REQUIRE_TIMESTAMP: on in production and off in the sandbox by default; on/off/true/false/1/0', () => {
    const prod = {
      CARDPROGRAM_ENV: 'production',
      CARDPROGRAM_MASTER_KEY: KEY,
      DATABASE_URL: 'postgres://u@db/x',
      CARDPROGRAM_PUBLIC_URL: 'https://cards.example.com',
      CARDPROGRAM_BINS: '{"EUR":"41000001","USDT":"51000001"}',
    };
    assert.equal(loadConfig(prod).requireTimestamp, true);
    assert.equal(loadConfig({ CARDPROGRAM_MASTER_KEY: KEY }).requireTimestamp, false);
    for (const [v, want] of [
      ['on', true],
      ['OFF', false],
      ['true', true],
      ['false', false],
      ['1', true],
      ['0', false],
      ['', true],
    ] as const) {
      assert.equal(loadConfig({ ...prod, CARDPROGRAM_REQUIRE_TIMESTAMP: v }).requireTimestamp, want, v);
    }
    assert.equal(loadConfig({ CARDPROGRAM_MASTER_KEY: KEY, CARDPROGRAM_REQUIRE_TIMESTAMP: 'on' }).requireTimestamp, true);
  });

  it('refuses bad values with a message naming the variable', () => {
    // CARDPROGRAM_HOLD_DAYS (decisions §12.9): 7 by default.
    assert.equal(loadConfig({ CARDPROGRAM_MASTER_KEY: KEY }).program.holdDays, 7);
    assert.equal(loadConfig({ CARDPROGRAM_MASTER_KEY: KEY, CARDPROGRAM_HOLD_DAYS: '10' }).program.holdDays, 10);
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ PORT: 'eighty' }, /^PORT must be a whole number/],
      [{ PORT: '70000' }, /^PORT must be between/],
      [{ CARDPROGRAM_ENV: 'staging' }, /^CARDPROGRAM_ENV must be/],
      [{ DATABASE_URL: 'mysql://x' }, /^DATABASE_URL must start with/],
      [
        { CARDPROGRAM_ENV: 'production', DATABASE_URL: 'file:/tmp/x', CARDPROGRAM_MASTER_KEY: '' },
        /CARDPROGRAM_MASTER_KEY is required in production/,
      ],
      [{ CARDPROGRAM_MASTER_KEY: 'short' }, /CARDPROGRAM_MASTER_KEY must be 32 bytes/],
      [{ CARDPROGRAM_PUBLIC_URL: 'not a url' }, /CARDPROGRAM_PUBLIC_URL is not a URL/],
      [{ CARDPROGRAM_IDEMPOTENCY_RETENTION_HOURS: '1' }, /must be between 24/],
      [{ LOG_LEVEL: 'verbose' }, /^LOG_LEVEL must be one of/],
      [{ CARDPROGRAM_FEES: '{"topUp":{"bps":-1}}' }, /^CARDPROGRAM_FEES: fee "topUp" must be/],
      [{ CARDPROGRAM_FEES: '[1]' }, /^CARDPROGRAM_FEES must be a JSON object/],
      [{ CARDPROGRAM_BINS: '{"EUR":"12"}' }, /^CARDPROGRAM_BINS: BIN for EUR must be 6 to 8 digits/],
      [{ CARDPROGRAM_FX_RATES: '{"EUR":"1","USD":"-1"}' }, /^CARDPROGRAM_FX_RATES: rate for USD/],
      [{ CARDPROGRAM_HOLD_DAYS: 'a week' }, /^CARDPROGRAM_HOLD_DAYS must be a whole number/],
      [{ CARDPROGRAM_HOLD_DAYS: '0' }, /^CARDPROGRAM_HOLD_DAYS must be between 1 and 365/],
      [{ HTTPS_PORT: 'https' }, /^HTTPS_PORT must be a whole number/],
      [{ CARDPROGRAM_RATE_LIMIT: '10/s' }, /^CARDPROGRAM_RATE_LIMIT must be a whole number/],
      [{ CARDPROGRAM_RATE_BURST: '0' }, /^CARDPROGRAM_RATE_BURST must be between 1/],
      [{ HTTPS_PORT: '70000' }, /^HTTPS_PORT must be between/],
      [{ CARDPROGRAM_TRUST_PROXY: '10.0.0.1,proxy.internal' }, /^CARDPROGRAM_TRUST_PROXY must be IP addresses or CIDR ranges/],
      [{ CARDPROGRAM_TRUST_PROXY: '10.0.0.0/33' }, /^CARDPROGRAM_TRUST_PROXY must be IP addresses or CIDR ranges/],
      [{ CARDPROGRAM_MASTER_KEY_PREVIOUS: 'short' }, /^CARDPROGRAM_MASTER_KEY_PREVIOUS \(key 1\) must be 32 bytes/],
      [{ CARDPROGRAM_MASTER_KEY_PREVIOUS: `${KEY},nope` }, /^CARDPROGRAM_MASTER_KEY_PREVIOUS \(key 2\) must be 32 bytes/],
      // Not random-looking: all equal, a repeated pattern, a counter; refused with one line (issue 14.6).
      [
        { CARDPROGRAM_MASTER_KEY: 'a'.repeat(64) },
        /^CARDPROGRAM_MASTER_KEY does not look random \(an estimated 0\.0 bits of entropy a byte, 1 distinct byte values in 32/,
      ],
      [{ CARDPROGRAM_MASTER_KEY: Buffer.alloc(32, 0).toString('base64') }, /^CARDPROGRAM_MASTER_KEY does not look random/],
      [
        { CARDPROGRAM_MASTER_KEY: 'deadbeef'.repeat(8) },
        /^CARDPROGRAM_MASTER_KEY does not look random \(an estimated 2\.0 bits of entropy a byte, 4 distinct/,
      ],
      [
        { CARDPROGRAM_MASTER_KEY: Buffer.from(Array.from({ length: 32 }, (_, i) => i % 8)).toString('hex') },
        /^CARDPROGRAM_MASTER_KEY does not look random \(an estimated 3\.0 bits of entropy a byte, 8 distinct/,
      ],
      [{ CARDPROGRAM_MASTER_KEY: `${KEY}00` }, /^CARDPROGRAM_MASTER_KEY must be 32 bytes/],
      [{ CARDPROGRAM_METRICS_TOKEN: 'short' }, /^CARDPROGRAM_METRICS_TOKEN must be 16 to 256 characters/],
      [{ CARDPROGRAM_METRICS_TOKEN: 'a token with spaces in it' }, /^CARDPROGRAM_METRICS_TOKEN must be 16 to 256 characters/],
      [{ CARDPROGRAM_METRICS_PORT: '70000' }, /^CARDPROGRAM_METRICS_PORT must be between 0 and 65535/],
      // Found by an outside review: a counting sequence and a passphrase that reads as Base64.
      [
        { CARDPROGRAM_MASTER_KEY: '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f' },
        /^CARDPROGRAM_MASTER_KEY does not look random \(its bytes follow a pattern\)/,
      ],
      [{ CARDPROGRAM_MASTER_KEY: 'ThisIsMyProductionMasterKeyPleaseDoNotShare' }, /^CARDPROGRAM_MASTER_KEY must be 32 bytes/],
      [
        { CARDPROGRAM_MASTER_KEY: Buffer.from('correct horse battery staple 123').toString('base64') },
        /^CARDPROGRAM_MASTER_KEY does not look random \(its bytes are all printable characters/,
      ],
      [{ CARDPROGRAM_REQUIRE_TIMESTAMP: 'maybe' }, /^CARDPROGRAM_REQUIRE_TIMESTAMP must be "on" or "off", got "maybe"/],
      [{ CARDPROGRAM_CONSOLE: 'yes' }, /^CARDPROGRAM_CONSOLE must be "on" or "off", got "yes"/],
      [{ CARDPROGRAM_PG_POOL_SIZE: '0' }, /^CARDPROGRAM_PG_POOL_SIZE must be between 1/],
      [{ CARDPROGRAM_PG_POOL_WAIT_MS: 'soon' }, /^CARDPROGRAM_PG_POOL_WAIT_MS must be a whole number/],
      [{ CARDPROGRAM_PG_POOL_WAIT_MS: '10' }, /^CARDPROGRAM_PG_POOL_WAIT_MS must be between 50/],
      // A read replica is PostgreSQL's: refused beside SQLite (the default database too), and must be PostgreSQL itself.
      [{ DATABASE_REPLICA_URL: 'postgres://replica/db' }, /^DATABASE_REPLICA_URL is for PostgreSQL only: DATABASE_URL is SQLite/],
      [
        { DATABASE_URL: 'file:/tmp/x.sqlite', DATABASE_REPLICA_URL: 'postgres://replica/db' },
        /^DATABASE_REPLICA_URL is for PostgreSQL only/,
      ],
      [
        { DATABASE_URL: 'postgres://primary/db', DATABASE_REPLICA_URL: 'file:/tmp/r.sqlite' },
        /^DATABASE_REPLICA_URL must start with postgres:\/\//,
      ],
      [
        { DATABASE_URL: 'postgres://primary/db', CARDPROGRAM_REPLICA_MAX_LAG_MS: '10' },
        /^CARDPROGRAM_REPLICA_MAX_LAG_MS must be between 100/,
      ],
    ];
    for (const [env, msg] of cases) {
      assert.throws(
        () => loadConfig({ CARDPROGRAM_MASTER_KEY: KEY, ...env }),
        (e: Error) => e instanceof ConfigError && msg.test(e.message),
      );
    }
  });
});

describe('master keys judged as bytes (issue 26.5)', () => {
  const prod = {
    CARDPROGRAM_ENV: 'production',
    CARDPROGRAM_PUBLIC_URL: 'https://cards.example.com',
    CARDPROGRAM_BINS: '{"EUR":"41000001","USDT":"51000001"}',
  };
  const hex = (bytes: number[] | Buffer) => Buffer.from(bytes).toString('hex');
  const count = Array.from({ length: 16 }, (_, i) => i * 7 + 3);
  const weak: Array<[string, string]> = [
    // A counting pattern mirrored: 03 0a 11 … 6c 6c … 11 0a 03.
    ['a mirrored counter', hex([...count, ...count.slice().reverse()])],
    // `echo <31-character passphrase> | xxd -p -c 32`: the newline is not printable, but is ignored.
    ['echo passphrase | xxd -p', hex(Buffer.from('correct horse battery staple 12\n'))],
    ['a passphrase after a space', hex(Buffer.from(' correct horse battery staple 12'))],
    // A random-looking half written twice, and once mirrored.
    ['a repeated half', hex([...randomBytes(16), ...randomBytes(16)].map((_, i, a) => a[i % 16] ?? 0))],
    [
      'a palindrome of random bytes',
      (() => {
        const h = [...randomBytes(16)];
        return hex([...h, ...h.slice().reverse()]);
      })(),
    ],
    [
      'a mirrored block',
      (() => {
        const b = [...randomBytes(32)];
        b.splice(20, 6, ...b.slice(2, 8).reverse());
        return hex(b);
      })(),
    ],
    // After an attack pass: keys production accepted.
    [
      'a passphrase and a NUL (31 of 32 bytes printable)',
      hex(Buffer.concat([Buffer.from('The quick brown fox jumps over!'), Buffer.from([0])])),
    ],
    ['i² mod 256', hex(Array.from({ length: 32 }, (_, i) => (i * i) & 255))],
    ['i³ mod 256', hex(Array.from({ length: 32 }, (_, i) => (i * i * i) & 255))],
    ['two interleaved counters (ff01fd03…)', hex(Array.from({ length: 32 }, (_, i) => (i % 2 ? i : 255 - i)))],
    [
      'Fibonacci mod 256',
      (() => {
        const a = [1, 1];
        while (a.length < 32) a.push(((a.at(-1) ?? 0) + (a.at(-2) ?? 0)) & 255);
        return hex(a);
      })(),
    ],
    [
      'x[n] = 3·x[n−1] + 2·x[n−2] + 7',
      (() => {
        const a = [5, 6];
        while (a.length < 32) a.push((3 * (a.at(-1) ?? 0) + 2 * (a.at(-2) ?? 0) + 7) & 255);
        return hex(a);
      })(),
    ],
  ];
  it('refuses a patterned key or a passphrase, and says how to make one', () => {
    for (const [what, key] of weak) {
      assert.throws(
        () => loadConfig({ ...prod, CARDPROGRAM_MASTER_KEY: key }),
        (e: Error) =>
          e instanceof ConfigError &&
          /^CARDPROGRAM_MASTER_KEY does not look random \(.+\): it must be 32 random bytes; generate one with openssl rand -hex 32$/.test(
            e.message,
          ),
        what,
      );
    }
  });
  it('passes 100,000 random keys (each test fails a random key about once in 10^9)', () => {
    for (let i = 0; i < 100_000; i++) {
      const key = randomBytes(32);
      assert.equal(keyWeakness(key), null, key.toString('hex'));
    }
  });
  it('an earlier key is judged by its format only: it is what a rotation away from a weak key needs', () => {
    const weakOld = Buffer.from('correct horse battery staple 12\n').toString('hex');
    const key = randomBytes(32);
    const c = loadConfig({ ...prod, CARDPROGRAM_MASTER_KEY: key.toString('hex'), CARDPROGRAM_MASTER_KEY_PREVIOUS: weakOld });
    assert.deepEqual(c.masterKeyPrevious, [Buffer.from(weakOld, 'hex')]);
    assert.throws(
      () => loadConfig({ ...prod, CARDPROGRAM_MASTER_KEY: key.toString('hex'), CARDPROGRAM_MASTER_KEY_PREVIOUS: 'short' }),
      /CARDPROGRAM_MASTER_KEY_PREVIOUS \(key 1\) must be 32 bytes/,
    );
  });
  it('accepts 2,000 random keys, as hex, Base64 and with a trailing newline', () => {
    for (let i = 0; i < 2000; i++) {
      const key = randomBytes(32);
      const text = i % 3 === 0 ? key.toString('hex') : i % 3 === 1 ? key.toString('base64') : `${key.toString('hex')}\n`;
      assert.deepEqual(loadConfig({ ...prod, CARDPROGRAM_MASTER_KEY: text }).masterKey, key);
    }
  });
});

describe('SecretBox (secrets at rest)', () => {
  it('round-trips, binds the context, and refuses another key', () => {
    const box = new SecretBox(randomBytes(32));
    const sealed = box.seal('sk_test_abc', 'merchant-secret:mch_1');
    assert.ok(!sealed.includes('sk_test_abc'));
    assert.equal(box.open(sealed, 'merchant-secret:mch_1'), 'sk_test_abc');
    assert.throws(() => box.open(sealed, 'merchant-secret:mch_2'));
    assert.throws(() => new SecretBox(randomBytes(32)).open(sealed, 'merchant-secret:mch_1'), /sealed under master key/);
    assert.notEqual(box.seal('x', 'c'), box.seal('x', 'c'), 'a fresh IV every time');
  });
});
