import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join, resolve } from 'node:path';
import { type ForcedPostsConfig, forcedPostsConfig } from './config-forced.js';
import { type NetworkConfig, networkConfig } from './config-network.js';
import { type ThreeDsConfig, threeDsConfig } from './config-three-ds.js';
import { type TokensConfig, tokensConfig } from './config-tokens.js';
import { type TspClientConfig, tspClientConfig } from './config-tsp.js';
import { ConfigError, type Env, intVar, jsonVar, problemsError, unknownVariables, type VarName } from './config-vars.js';
import { keyWeakness } from './crypto/key-quality.js';
import { makePrivateDir } from './db/files.js';
import type { CardCurrency } from './money/currency.js';
import { DEFAULT_FEES, type FeeSchedule, validateFees } from './money/fees.js';
import { DEFAULT_RATES, type RateTable, validateRates } from './money/fx.js';

export { DEFAULT_FORCED_POSTS, type ForcedPostsConfig } from './config-forced.js';
export { DEFAULT_NETWORK_CURRENCIES, type NetworkConfig } from './config-network.js';
export { DEFAULT_ACS_REFERENCE, type ThreeDsConfig } from './config-three-ds.js';
export { ConfigError } from './config-vars.js';

/** A merchant's budget: `perSecond` requests a second on average, up to `burst` at once. */
export interface RateLimit {
  perSecond: number;
  burst: number;
}

/** A merchant's own rate comes with bursts of twice that, as the service's default does. */
export const burstFor = (perSecond: number) => 2 * perSecond;

export type Environment = 'sandbox' | 'production';

/** The service's whole configuration, read from the environment once (decisions §1). */
export interface Config {
  port: number;
  host: string;
  databaseUrl: string;
  /**
   * PostgreSQL: a replica of the database (DATABASE_REPLICA_URL) for reads that may be a moment
   * stale (the 4.1 list); null: every read goes to DATABASE_URL.
   */
  databaseReplicaUrl: string | null;
  /** How far behind the primary the replica may be and still be read, ms (CARDPROGRAM_REPLICA_MAX_LAG_MS). */
  replicaMaxLagMs: number;
  env: Environment;
  publicUrl: string;
  /**
   * Addresses or CIDRs of the proxies in front (CARDPROGRAM_TRUST_PROXY, Fastify's `trustProxy`):
   * only from these do X-Forwarded-Proto/For/Host count. Empty: trust none.
   */
  trustProxy: string[];
  /** HTTPS port for merchants' mapped hosts (certificate chosen by SNI); null: no HTTPS listener. */
  httpsPort: number | null;
  /** Bearer token for GET /metrics on the main listener (CARDPROGRAM_METRICS_TOKEN); null: not served there. */
  metricsToken: string | null;
  /** A listener of its own for GET /metrics, without a token (CARDPROGRAM_METRICS_PORT); null: none. */
  metricsPort: number | null;
  /** The operators' console under /console (CARDPROGRAM_CONSOLE, off by default). */
  console: boolean;
  /**
   * Console passwords hashed at once (CARDPROGRAM_CONSOLE_HASHES, default 2): scrypt shares libuv's
   * 4-thread pool; eight times as many wait their turn, and logins beyond are refused with 429.
   */
  consoleHashes: number;
  /** PostgreSQL: the longest one statement of the service may take, ms (CARDPROGRAM_PG_STATEMENT_TIMEOUT_MS); 0: no bound. */
  pgStatementTimeoutMs: number;
  /** PostgreSQL: connections per process (CARDPROGRAM_PG_POOL_SIZE), how long a request waits for one before 503 (CARDPROGRAM_PG_POOL_WAIT_MS), and whether statements are prepared on them (CARDPROGRAM_PG_PREPARED, on). */
  pgPool: {
    size: number;
    waitMs: number;
    prepared: boolean /** CARDPROGRAM_PG_URGENT_POOL_SIZE (4): the lane of an authorization endpoint's pre-send statements (src/db/index.ts, Database.urgent). */;
    urgentSize?: number;
  };
  dataDir: string;
  /** 32 bytes; encrypts stored secrets, PAN data keys, KYC documents and domain keys. */
  masterKey: Buffer;
  /** Earlier master keys during a rotation (CARDPROGRAM_MASTER_KEY_PREVIOUS): they open, never seal. */
  masterKeyPrevious: Buffer[];
  logLevel: string;
  /** How long a randomStr is remembered (decisions §4 says at least 24 h). */
  idempotencyRetentionMs: number;
  /** How long a merchant's credentials are cached in memory before being read again. */
  merchantCacheMs: number;
  /**
   * Each merchant's default request budget over all signed operations (null: no limit); a
   * merchant's own `rate_limit` overrides `perSecond`, with a burst of twice that.
   */
  rateLimit: RateLimit | null;
  /**
   * Refuse signed operations without a signed `timestamp` (1007), and 4.4 without `randomStr`
   * (CARDPROGRAM_REQUIRE_TIMESTAMP; default on in production, off in the sandbox).
   */
  requireTimestamp: boolean;
  /** Create the demo merchant on first start (sandbox only). */
  demoMerchant: boolean;
  program: ProgramConfig;
  kyc: KycConfig;
  /** Sandbox: how long after submission its network decides a dispute by its explanation (0: never; docs/disputes.md). */
  disputes: { sandboxMs: number };
  callbacks: CallbackConfig;
  network: NetworkConfig;
  /** The 3-D Secure access control server (decisions §14, docs/3ds.md). */
  threeDs: ThreeDsConfig;
  /** Wallet tokens: the TSP's endpoint and the per-card limits (decisions §15, docs/tokens.md). */
  tokens: TokensConfig;
  /** Where the service tells the wallet tokens' TSP of its changes (decisions §15.1, docs/tokens.md); null: none (calls wait). */
  tspClient: TspClientConfig | null;
  /** What the start logs as warnings: `CARDPROGRAM_*` variables set that are not read (misspelled?), with the nearest name. */
  warnings?: readonly string[];
  /** The card network's forced posts' ceilings (decisions §12.13): above them an advice waits in suspense. */
  forcedPosts: ForcedPostsConfig;
}

export interface KycConfig {
  /** Accepted values of kycPlatform. */
  platforms: readonly string[];
  /** Sandbox: how long after submission the automatic reviewer decides (0: never). */
  autoDecisionMs: number;
}

export interface CallbackConfig {
  /** Run the delivery worker inside the service (else run `cardprogram worker`). */
  worker: boolean;
  /** Delay before each retry; the last one repeats until maxAgeMs after the event. */
  retryScheduleMs: readonly number[];
  maxAgeMs: number;
  timeoutMs: number;
  pollMs: number;
  /** Attempts in flight per merchant and endpoint, per worker (default 16; docs/callbacks.md, "Isolation"). */
  slots?: number;
  /**
   * The share of a worker's attempts (in percent) one merchant may hold, in flight or claimed, over
   * all its endpoints (default 25: a quarter; docs/callbacks.md, "Isolation").
   */
  merchantShare?: number;
  /**
   * The circuit breaker per endpoint: opens after `failures` consecutive failed attempts (no answer,
   * 5xx, or a non-2xx answer slower than `slowMs`), for `openMs`, doubling after each failed probe up
   * to `maxOpenMs` (defaults 5, 10 s, 10 min; `slowMs` half the timeout).
   */
  breaker?: { failures?: number; openMs?: number; maxOpenMs?: number; slowMs?: number };
}

export const DEFAULT_KYC_PLATFORMS = ['SUMSUB', 'ONFIDO', 'JUMIO', 'VERIFF', 'MANUAL'] as const;

/** Decisions §7: roughly 10 s, 1 min, 5 min, 30 min, 2 h, 6 h, then every 12 h up to 72 h. */
export const DEFAULT_RETRY_SCHEDULE_MS = [10_000, 60_000, 300_000, 1_800_000, 7_200_000, 21_600_000, 43_200_000] as const;

/** The card program's parameters: card number ranges, fees, exchange rates. */
export interface ProgramConfig {
  /** BIN (6 to 8 digits) of the cards issued in each currency. */
  bins: Readonly<Record<CardCurrency, string>>;
  fees: FeeSchedule;
  fxRates: RateTable;
  /**
   * Days an authorization holds before it is released unless cleared (CARDPROGRAM_HOLD_DAYS,
   * decisions §12.9; default 7). Lodging and car rental (MCC 3351–3999, 7011, 7512, 7513) hold 31
   * (src/ledger/expire.ts).
   */
  holdDays?: number;
  /**
   * Whether a key-entered or e-commerce authorization on the card network link needs a CVV2
   * (CARDPROGRAM_REQUIRE_CVV2, decisions §12.13; default on): without one it is declined
   * (`card_verification_missing`). Credential-on-file messages never need one.
   */
  requireCvv2?: boolean;
}

/**
 * Sandbox test BINs: 6-digit prefixes reserved here for test cards. Production deployments set the
 * issuer's own ranges with CARDPROGRAM_BINS.
 */
export const SANDBOX_BINS: Readonly<Record<CardCurrency, string>> = { EUR: '424242', USDT: '535353' };

function validateBins(raw: Record<string, unknown>): Record<CardCurrency, string> {
  const out = { ...SANDBOX_BINS };
  for (const [currency, bin] of Object.entries(raw)) {
    if (currency !== 'EUR' && currency !== 'USDT') throw new Error(`no cards are issued in ${currency}`);
    if (typeof bin !== 'string' || !/^[1-9]\d{5,7}$/.test(bin)) throw new Error(`BIN for ${currency} must be 6 to 8 digits`);
    out[currency] = bin;
  }
  return out;
}

/** CARDPROGRAM_METRICS_TOKEN: at least 16 characters of letters, digits, `-`, `_`, `.` (a header's worth). */
function metricsTokenVar(env: Env): string | null {
  const raw = env.CARDPROGRAM_METRICS_TOKEN?.trim();
  if (!raw) return null;
  if (!/^[A-Za-z0-9._~+/=-]{16,256}$/.test(raw)) {
    throw new ConfigError('CARDPROGRAM_METRICS_TOKEN must be 16 to 256 characters of letters, digits and -._~+/= (openssl rand -hex 24)');
  }
  return raw;
}

/** An on/off switch: on, off, true, false, 1 or 0 (any case); unset or empty: the fallback. */
function switchVar(env: Env, name: VarName, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'on' || raw === 'true' || raw === '1') return true;
  if (raw === 'off' || raw === 'false' || raw === '0') return false;
  throw new ConfigError(`${name} must be "on" or "off", got "${env[name]}"`);
}

/** Requests a second per merchant by default, and the burst above it (twice the rate). */
export const DEFAULT_RATE_LIMIT = 100;

function rateLimitVar(env: Env): RateLimit | null {
  const perSecond = intVar(env, 'CARDPROGRAM_RATE_LIMIT', DEFAULT_RATE_LIMIT, 0, 1_000_000);
  if (perSecond === 0) return null;
  return { perSecond, burst: intVar(env, 'CARDPROGRAM_RATE_BURST', burstFor(perSecond), 1, 10_000_000) };
}

/**
 * Decodes CARDPROGRAM_MASTER_KEY (or one of CARDPROGRAM_MASTER_KEY_PREVIOUS, named by `name`): 64 hex
 * characters or Base64 of exactly 32 bytes, that look random (src/crypto/key-quality.ts). Why it is
 * mandatory in production: a generated key beside the database protects nothing if the disk is
 * copied. Why the randomness check: a patterned key or a passphrase is guessable, and everything
 * sealed under it (merchant secrets, PAN data keys, identity data) with it.
 */
export function parseMasterKey(raw: string, name = 'CARDPROGRAM_MASTER_KEY', opts: { judge?: boolean } = {}): Buffer {
  const text = raw.trim();
  let key: Buffer | null = null;
  if (/^[0-9a-fA-F]{64}$/.test(text)) key = Buffer.from(text, 'hex');
  // Base64 as `openssl rand -base64 32` writes it: 43 characters and one `=`. Without the padding a
  // 43-letter passphrase would pass for a key.
  else if (/^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/.test(text)) key = Buffer.from(text, 'base64');
  if (key === null || key.length !== 32) {
    throw new ConfigError(`${name} must be 32 bytes, as 64 hex characters or Base64 (generate one: openssl rand -hex 32)`);
  }
  const weakness = opts.judge === false ? null : keyWeakness(key);
  if (weakness) {
    throw new ConfigError(`${name} does not look random (${weakness}): it must be 32 random bytes; generate one with openssl rand -hex 32`);
  }
  return key;
}

function sandboxMasterKey(dataDir: string): Buffer {
  const file = join(dataDir, 'master.key');
  if (existsSync(file)) return parseMasterKey(readFileSync(file, 'utf8'));
  makePrivateDir(dataDir);
  const key = randomBytes(32);
  writeFileSync(file, `${key.toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  return key;
}

function platformList(raw: string | undefined): string[] {
  if (raw === undefined || raw.trim() === '') return [...DEFAULT_KYC_PLATFORMS];
  const list = raw
    .split(',')
    .map((p) => p.trim().toUpperCase())
    .filter(Boolean);
  if (list.some((p) => !/^[A-Z0-9_-]{1,32}$/.test(p)))
    throw new ConfigError('CARDPROGRAM_KYC_PLATFORMS must be a comma-separated list of names (letters, digits, _ or -)');
  return list;
}

/** CARDPROGRAM_TRUST_PROXY: a comma-separated list of IP addresses and CIDR ranges. */
function trustProxyList(raw: string | undefined): string[] {
  const list = (raw ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  for (const entry of list) {
    const [addr = '', prefix, ...rest] = entry.split('/');
    const family = isIP(addr);
    const max = family === 6 ? 128 : 32;
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= max);
    if (family === 0 || !prefixOk || rest.length > 0) {
      throw new ConfigError(`CARDPROGRAM_TRUST_PROXY must be IP addresses or CIDR ranges separated by commas, got "${entry}"`);
    }
  }
  return list;
}

/**
 * Production refuses to start without what makes it safe to run, one line each: an https public
 * address (the page's cookie is then always Secure and __Host-, and HSTS is sent), and the issuer's
 * own BINs (a sandbox test BIN must never be on a live card).
 */
function productionPublicUrl(publicUrl: string): void {
  if (new URL(publicUrl).protocol !== 'https:') {
    throw new ConfigError(`CARDPROGRAM_PUBLIC_URL must be an https:// address in production, got "${publicUrl}"`);
  }
}

/** `given`: the currencies CARDPROGRAM_BINS sets; the others have the sandbox's BIN by default. */
function productionBins(bins: Readonly<Record<CardCurrency, string>>, given: ReadonlySet<string>): void {
  // Any BIN inside a sandbox range, in any currency: 42424299 is a test card as much as 424242 is.
  const inside = (bin: string) => Object.values(SANDBOX_BINS).find((test) => bin.startsWith(test));
  const sandbox = Object.entries(bins).filter(([, bin]) => inside(bin) !== undefined);
  if (sandbox.length > 0) {
    // A value set and a default read differently (issue 43.10): "USDT 535353" read as if it had been set.
    const named = sandbox
      .map(([currency, bin]) =>
        given.has(currency)
          ? `${currency} is set to ${bin}, ${bin === inside(bin) ? 'a sandbox BIN' : `inside the sandbox's ${inside(bin)}`}`
          : `${currency} is not set (the default is the sandbox's ${bin})`,
      )
      .join('; ');
    throw new ConfigError(
      `CARDPROGRAM_BINS must give the issuer's own BIN for every currency in production (EUR and USDT), none inside the sandbox's ${Object.values(SANDBOX_BINS).join(' or ')}: ${named}`,
    );
  }
}

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

function logLevel(raw: string | undefined): string {
  const level = raw || 'info';
  if (!LOG_LEVELS.includes(level)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${level}"`);
  return level;
}

/** The data directory: CARDPROGRAM_DATA_DIR, or ./data of the directory the command runs in. */
export function dataDirFrom(env: Env): string {
  return resolve(env.CARDPROGRAM_DATA_DIR || './data');
}

export function databaseUrlFrom(env: Env, dataDir: string): string {
  return env.DATABASE_URL || `file:${join(dataDir, 'cardprogram.sqlite')}`;
}

/** DATABASE_REPLICA_URL: a PostgreSQL replica of DATABASE_URL's PostgreSQL database; none for SQLite. */
function replicaUrlFrom(env: Env, databaseUrl: string): string | null {
  const raw = env.DATABASE_REPLICA_URL?.trim();
  if (!raw) return null;
  if (!/^postgres(ql)?:\/\//.test(raw)) throw new ConfigError('DATABASE_REPLICA_URL must start with postgres:// (a PostgreSQL replica)');
  if (!/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError(
      'DATABASE_REPLICA_URL is for PostgreSQL only: DATABASE_URL is SQLite (file:), which has no replicas; unset DATABASE_REPLICA_URL',
    );
  }
  return raw;
}

export function loadConfig(env: Env = process.env): Config {
  // Every problem is found before any is reported: an operator fixes them all in one restart, not
  // one a restart (issue 30.7). Each reader that refuses its value gives a stand-in so the rest can
  // still be checked; the stand-ins are never used, since a single problem refuses the whole.
  const problems: string[] = [];
  const check = <T>(read: () => T, standIn: T): T => {
    try {
      return read();
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push(...err.message.split('\n'));
      return standIn;
    }
  };
  const envName = check((): Environment | null => {
    const name = env.CARDPROGRAM_ENV || 'sandbox';
    if (name !== 'sandbox' && name !== 'production')
      throw new ConfigError(`CARDPROGRAM_ENV must be "sandbox" or "production", got "${name}"`);
    return name;
  }, null);
  const port = check(() => intVar(env, 'PORT', 8080, 0, 65535), 8080);
  const host = env.HOST || '127.0.0.1';
  const dataDir = dataDirFrom(env);
  const databaseUrl = databaseUrlFrom(env, dataDir);
  const databaseOk = check(() => {
    if (!/^(file:|postgres:\/\/|postgresql:\/\/)/.test(databaseUrl)) {
      throw new ConfigError('DATABASE_URL must start with file: (SQLite) or postgres:// (PostgreSQL)');
    }
    return true;
  }, false);
  const databaseReplicaUrl = databaseOk ? check(() => replicaUrlFrom(env, databaseUrl), null) : null;
  const publicUrl = (env.CARDPROGRAM_PUBLIC_URL || `http://${host.includes(':') ? `[${host}]` : host}:${port}`).replace(/\/+$/, '');
  const publicUrlOk = check(() => {
    try {
      new URL(publicUrl);
    } catch {
      throw new ConfigError(`CARDPROGRAM_PUBLIC_URL is not a URL: "${publicUrl}"`);
    }
    return true;
  }, false);
  const masterKey = check(() => {
    if (env.CARDPROGRAM_MASTER_KEY) return parseMasterKey(env.CARDPROGRAM_MASTER_KEY);
    if (envName === 'production') throw new ConfigError('CARDPROGRAM_MASTER_KEY is required in production');
    // Made (and written) only in the sandbox: not while the environment itself is in doubt.
    return envName === 'sandbox' ? sandboxMasterKey(dataDir) : Buffer.alloc(32);
  }, Buffer.alloc(32));
  const masterKeyPrevious = (env.CARDPROGRAM_MASTER_KEY_PREVIOUS ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '')
    // An earlier key only opens, and is needed to move away from a key refused as weak (by this
    // check, made stricter over time): its format is checked, not its randomness.
    .map((k, i) => check(() => parseMasterKey(k, `CARDPROGRAM_MASTER_KEY_PREVIOUS (key ${i + 1})`, { judge: false }), Buffer.alloc(32)));

  const binsGiven = new Set<string>(); // the currencies CARDPROGRAM_BINS sets; the others are the sandbox's by default
  const binsRead = check(
    () =>
      jsonVar(env, 'CARDPROGRAM_BINS', SANDBOX_BINS, (raw) => {
        for (const currency of Object.keys(raw)) binsGiven.add(currency);
        return validateBins(raw);
      }),
    null,
  );
  const bins = binsRead ?? SANDBOX_BINS;
  if (envName === 'production') {
    if (publicUrlOk) check(() => productionPublicUrl(publicUrl), undefined);
    // When CARDPROGRAM_BINS was refused above, that problem is the one to fix first.
    if (binsRead) check(() => productionBins(bins, binsGiven), undefined);
  }

  const config: Config = {
    port,
    host,
    databaseUrl,
    databaseReplicaUrl,
    replicaMaxLagMs: check(() => intVar(env, 'CARDPROGRAM_REPLICA_MAX_LAG_MS', 2000, 100, 600_000), 2000),
    env: envName ?? 'production',
    publicUrl,
    trustProxy: check(() => trustProxyList(env.CARDPROGRAM_TRUST_PROXY), []),
    httpsPort: env.HTTPS_PORT ? check(() => intVar(env, 'HTTPS_PORT', 0, 0, 65535), null) : null,
    metricsToken: check(() => metricsTokenVar(env), null),
    metricsPort: env.CARDPROGRAM_METRICS_PORT ? check(() => intVar(env, 'CARDPROGRAM_METRICS_PORT', 0, 0, 65535), null) : null,
    console: check(() => switchVar(env, 'CARDPROGRAM_CONSOLE', false), false),
    consoleHashes: check(() => intVar(env, 'CARDPROGRAM_CONSOLE_HASHES', 2, 1, 64), 2),
    pgStatementTimeoutMs: check(() => intVar(env, 'CARDPROGRAM_PG_STATEMENT_TIMEOUT_MS', 15_000, 0, 3_600_000), 0),
    pgPool: {
      size: check(() => intVar(env, 'CARDPROGRAM_PG_POOL_SIZE', 10, 1, 1000), 10),
      waitMs: check(() => intVar(env, 'CARDPROGRAM_PG_POOL_WAIT_MS', 5000, 50, 600_000), 5000),
      prepared: check(() => switchVar(env, 'CARDPROGRAM_PG_PREPARED', true), true),
      urgentSize: check(() => intVar(env, 'CARDPROGRAM_PG_URGENT_POOL_SIZE', 4, 0, 100), 4),
    },
    dataDir,
    masterKey,
    masterKeyPrevious,
    logLevel: check(() => logLevel(env.LOG_LEVEL), 'info'),
    idempotencyRetentionMs: check(() => intVar(env, 'CARDPROGRAM_IDEMPOTENCY_RETENTION_HOURS', 48, 24, 24 * 365), 48) * 3_600_000,
    merchantCacheMs: check(() => intVar(env, 'CARDPROGRAM_MERCHANT_CACHE_MS', 5000, 0, 600_000), 5000),
    rateLimit: check(() => rateLimitVar(env), null),
    // Why on in production: without a signed timestamp a captured request (a page link, or a write
    // once its randomStr is forgotten after the retention period) can be replayed for ever.
    requireTimestamp: check(() => switchVar(env, 'CARDPROGRAM_REQUIRE_TIMESTAMP', envName === 'production'), true),
    demoMerchant: envName === 'sandbox' && env.CARDPROGRAM_DEMO_MERCHANT !== 'off',
    kyc: {
      platforms: check(() => platformList(env.CARDPROGRAM_KYC_PLATFORMS), []),
      autoDecisionMs: envName === 'sandbox' ? check(() => intVar(env, 'CARDPROGRAM_KYC_AUTO_DECISION_MS', 5000, 0, 86_400_000), 0) : 0,
    },
    disputes: {
      sandboxMs: envName === 'sandbox' ? check(() => intVar(env, 'CARDPROGRAM_DISPUTE_SANDBOX_MS', 60_000, 0, 30 * 86_400_000), 0) : 0,
    },
    callbacks: {
      worker: env.CARDPROGRAM_WORKER !== 'off',
      retryScheduleMs: DEFAULT_RETRY_SCHEDULE_MS,
      maxAgeMs: 72 * 3_600_000,
      timeoutMs: 10_000,
      pollMs: check(() => intVar(env, 'CARDPROGRAM_WORKER_POLL_MS', 1000, 10, 60_000), 1000),
      slots: check(() => intVar(env, 'CARDPROGRAM_CALLBACK_SLOTS', 16, 1, 64), 16),
      merchantShare: check(() => intVar(env, 'CARDPROGRAM_CALLBACK_MERCHANT_SHARE', 25, 1, 100), 25),
      breaker: {
        failures: check(() => intVar(env, 'CARDPROGRAM_CALLBACK_BREAKER_FAILURES', 5, 1, 1000), 5),
        slowMs: check(() => intVar(env, 'CARDPROGRAM_CALLBACK_SLOW_MS', 5000, 100, 10_000), 5000),
        openMs: 10_000,
        maxOpenMs: 600_000,
      },
    },
    network: networkConfig(env, envName ?? 'production', host, check),
    forcedPosts: forcedPostsConfig(env, check),
    threeDs: threeDsConfig(env, envName ?? 'production', host, check),
    tokens: tokensConfig(env, envName ?? 'production', host, check),
    tspClient: check(() => tspClientConfig(env, envName ?? 'production'), null),
    program: {
      bins,
      fees: check(() => jsonVar(env, 'CARDPROGRAM_FEES', DEFAULT_FEES, validateFees), DEFAULT_FEES),
      fxRates: check(() => jsonVar(env, 'CARDPROGRAM_FX_RATES', DEFAULT_RATES, validateRates), DEFAULT_RATES),
      holdDays: check(() => intVar(env, 'CARDPROGRAM_HOLD_DAYS', 7, 1, 365), 7),
      requireCvv2: check(() => switchVar(env, 'CARDPROGRAM_REQUIRE_CVV2', true), true),
    },
    // The environment as given holds every variable, not only the known ones `Env` names.
    warnings: unknownVariables(env as Record<string, string | undefined>),
  };
  if (problems.length > 0) throw problemsError(problems);
  return config;
}
