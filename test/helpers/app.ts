import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import {
  type Config,
  DEFAULT_ACS_REFERENCE,
  DEFAULT_FORCED_POSTS,
  DEFAULT_KYC_PLATFORMS,
  DEFAULT_NETWORK_CURRENCIES,
  SANDBOX_BINS,
} from '../../src/config.js';
import type { Services } from '../../src/context.js';
import type { DB } from '../../src/db/schema.js';
import { type TradesDB, withTrades } from '../../src/db/trades-table.js';
import { hmacSign, signingString } from '../../src/http/signing.js';
import { fundMerchant } from '../../src/ledger/funding.js';
import { createMerchant } from '../../src/merchants/create.js';
import { CARD_CURRENCIES } from '../../src/money/currency.js';
import { DEFAULT_FEES } from '../../src/money/fees.js';
import { DEFAULT_RATES } from '../../src/money/fx.js';
import { runVerb } from '../../src/runner.js';
import { type IsolatedDatabase, isolatedDatabase, type TestDialect } from './db.js';
import { auditing, keepOutput, noteReplySecrets, noteSecret, testLogging, testLogLevel } from './log-audit.js';

export interface TestMerchant {
  appId: string;
  secret: string;
  webhookSecret: string;
}

export interface Harness {
  app: FastifyInstance;
  db: IsolatedDatabase;
  config: Config;
  merchant: TestMerchant;
  /** Creates another HMAC merchant. */
  newMerchant(opts?: { loginFree?: boolean }): Promise<TestMerchant>;
  /** Signs body (adds appId and sign) and POSTs it in-process. */
  call(path: string, body: Record<string, unknown>, opts?: { merchant?: TestMerchant; raw?: boolean }): Promise<Reply>;
}

export interface Reply {
  status: number;
  body: Record<string, any>;
  headers: Record<string, string | string[] | number | undefined>;
}

/** What each test merchant is funded with, per currency, by the operator's verb (docs/funding.md). */
export const TEST_FUNDING = 1_000_000_000;

/**
 * Funds a merchant the way an operator does (`cardprogram merchant fund`), so tests top cards up as
 * a merchant would; tests of funding itself start from these figures.
 */
export async function fundTestMerchant(svc: Services, appId: string, amount = TEST_FUNDING): Promise<void> {
  for (const currency of CARD_CURRENCIES) {
    await runVerb(svc, fundMerchant, { input: { appId, currency, amount: String(amount), reference: 'test funding' }, actor: 'test' });
  }
}

export function testConfig(dataDir: string, overrides: Partial<Config> = {}): Config {
  return {
    port: 0,
    host: '127.0.0.1',
    databaseUrl: 'file::memory:',
    databaseReplicaUrl: null,
    replicaMaxLagMs: 2000,
    env: 'sandbox',
    publicUrl: 'http://127.0.0.1:8080',
    trustProxy: [],
    httpsPort: null,
    metricsToken: null,
    metricsPort: null,
    console: false,
    consoleHashes: 2,
    pgStatementTimeoutMs: 0,
    pgPool: { size: 10, waitMs: 5000, prepared: true },
    dataDir,
    masterKey: randomBytes(32),
    masterKeyPrevious: [],
    logLevel: testLogLevel,
    idempotencyRetentionMs: 48 * 3_600_000,
    merchantCacheMs: 0,
    // test/rate-limit.test.ts sets its own; other tests send faster than any real merchant.
    rateLimit: null,
    demoMerchant: false,
    // As loadConfig: required in production. The harness's call() then signs a timestamp, as the SDK does.
    requireTimestamp: overrides.env === 'production',
    program: { bins: SANDBOX_BINS, fees: DEFAULT_FEES, fxRates: DEFAULT_RATES },
    kyc: { platforms: DEFAULT_KYC_PLATFORMS, autoDecisionMs: 0 },
    disputes: { sandboxMs: 0 },
    // Tests run the worker themselves when they need it, on a fast schedule.
    callbacks: { worker: false, retryScheduleMs: [50, 100, 200], maxAgeMs: 60_000, timeoutMs: 2000, pollMs: 20 },
    network: {
      port: null,
      host: '127.0.0.1',
      maxFrame: 4096,
      idleMs: 120_000,
      deadlineMs: 1500,
      tls: null,
      currencies: DEFAULT_NETWORK_CURRENCIES,
      maxConnections: 64,
      // Every test connects from 127.0.0.1, some with a dozen connections at once: the per-address cap
      // (8 by default) is the caps' own tests' to set (test/card-network/admission.test.ts, …flood…).
      maxPerAddress: 64,
      handshakeMs: 10_000,
      peers: null,
    },
    forcedPosts: DEFAULT_FORCED_POSTS,
    threeDs: {
      port: null,
      host: '127.0.0.1',
      tls: null,
      maxConnections: 256,
      maxPerAddress: 64,
      handshakeMs: 10_000,
      referenceNumber: DEFAULT_ACS_REFERENCE,
      operatorId: null,
      ds: null,
      required: false,
    },
    tokens: {
      port: null,
      host: '127.0.0.1',
      tls: null,
      maxConnections: 256,
      maxPerAddress: 64,
      handshakeMs: 10_000,
      perCard: 10,
      requestsPerDay: 20,
    },
    tspClient: null,
    ...overrides,
  };
}

export function randomStr(): string {
  return randomBytes(24)
    .toString('base64')
    .replace(/[^A-Za-z0-9]/g, '')
    .padEnd(32, 'x')
    .slice(0, 32);
}

export function sign(body: Record<string, unknown>, merchant: TestMerchant, opts: { timestamp?: boolean } = {}): Record<string, unknown> {
  const withApp: Record<string, unknown> = { ...body, appId: body.appId ?? merchant.appId };
  if (opts.timestamp && !('timestamp' in withApp)) withApp.timestamp = Date.now();
  return { ...withApp, sign: hmacSign(merchant.secret, signingString(withApp)) };
}

/**
 * Builds the app with the production factory on a fresh database of the given dialect, with one
 * HMAC merchant, and tears it all down after the test.
 */
export async function build(
  t: TestContext,
  dialect: TestDialect,
  overrides: Partial<Config> = {},
  opts: { clock?: () => number; logLines?: string[] } = {},
): Promise<Harness> {
  const db = await isolatedDatabase(dialect);
  // A test that reads the log gets its lines (at info at least), and the audit still gets them too.
  const logging = testLogging();
  const lines = opts.logLines;
  const write = (l: string) => {
    lines?.push(l);
    logging.logStream?.write(l);
  };
  const appLogging = lines ? { logStream: { write } } : logging;
  const config = testConfig(db.dataDir, { ...(lines && testLogLevel === 'silent' ? { logLevel: 'info' } : {}), ...overrides });
  const app = await buildApp(config, { database: db.database, ...appLogging, ...(opts.clock ? { clock: opts.clock } : {}) });
  // Secrets hygiene (helpers/log-audit.ts): every error reply is kept for the scan after the suite,
  // and every redirect's Location: the browser asks for it next, and a proxy in front logs that.
  if (auditing) {
    app.addHook('onSend', async (_req, reply, payload) => {
      if (reply.statusCode >= 400 && typeof payload === 'string') keepOutput('reply', payload);
      const location = reply.getHeader('location');
      if (reply.statusCode >= 300 && reply.statusCode < 400 && location !== undefined) keepOutput('redirect', String(location));
      return payload;
    });
  }
  t.after(async () => {
    await app.close();
    await db.cleanup();
  });
  const newMerchant = async (opts: { loginFree?: boolean } = {}): Promise<TestMerchant> => {
    const m = await runVerb(app.svc, createMerchant, {
      input: { name: 'Test merchant', signType: 'HMAC-SHA256', loginFree: opts.loginFree },
      actor: 'test',
    });
    noteSecret('merchant-secret', m.secret);
    noteSecret('webhook-secret', m.webhookSecret);
    await fundTestMerchant(app.svc, m.appId);
    return { appId: m.appId, secret: m.secret ?? '', webhookSecret: m.webhookSecret };
  };
  const merchant = await newMerchant({ loginFree: true });
  const call: Harness['call'] = async (path, body, opts = {}) => {
    const payload = opts.raw ? body : sign(body, opts.merchant ?? merchant, { timestamp: config.requireTimestamp });
    const res = await app.inject({ method: 'POST', url: path, payload, headers: { 'content-type': 'application/json' } });
    const reply = res.json();
    noteReplySecrets(reply);
    return { status: res.statusCode, body: reply, headers: res.headers };
  };
  return { app, db, config, merchant, newMerchant, call };
}

export const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

/** A valid cardholder creation body (without appId/sign). */
export function holderBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    mobile: '+4915112345678',
    firstName: b64('Alice'),
    lastName: b64('Schmidt'),
    email: 'alice@example.com',
    dateOfBirth: '1990-04-12',
    nationality: 'DE',
    sex: 2,
    countryCode: 'DE',
    town: b64('Berlin'),
    address: b64('Invalidenstrasse 117'),
    postCode: '10115',
    idnoType: 1,
    idno: `L01X${randomBytes(4).toString('hex').toUpperCase()}`,
    randomStr: randomStr(),
    ...overrides,
  };
}

/** Row counts of every table, to prove a rejected request wrote nothing. */
/** Row counts of the tables named (by default the cardholder tables): a refused request leaves them as they were. */
export async function rowCounts(
  h: Harness,
  tables: ReadonlyArray<keyof TradesDB> = ['merchants', 'cardholders', 'holder_reviews', 'idempotency_keys'],
): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of tables) {
    const r = await withTrades(h.db.database.db)
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    out[table] = Number(r.n);
  }
  return out;
}

const kycAddress = { country: 'DE', state: 'Berlin', city: 'Berlin', address: 'Invalidenstrasse 117', zipCode: '10115' };

/**
 * A valid KYC share body (interface 4.3, without appId/sign), each call with its own requestNo,
 * e-mail and document number; `overrides` replace top-level fields, `info` fields of individualInfo.
 */
export function kycBody(overrides: Record<string, unknown> = {}, info: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    requestNo: `REQ-${randomStr().slice(0, 12)}`,
    email: `${randomStr().slice(0, 10).toLowerCase()}@example.com`,
    kycPlatform: 'SUMSUB',
    holderType: '1',
    callbackUrl: 'http://127.0.0.1:9/kyc',
    individualInfo: {
      firstName: 'Bob',
      lastName: 'Müller',
      dob: '1985-03-04',
      country: 'DE',
      // A string, as the interface's sample sends it.
      gender: '1',
      idDocType: '2',
      number: `C0${randomStr().slice(0, 8).toUpperCase()}`,
      validUntil: '2099-01-01',
      ipAddress: '203.0.113.7',
      address: kycAddress,
      ...info,
    },
    ...overrides,
  };
}
