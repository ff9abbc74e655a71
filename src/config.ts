import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { burstFor, type RateLimit } from './http/rate-limit.js';
import { DEFAULT_FEES, type FeeSchedule, validateFees } from './ledger/fees.js';
import type { CardCurrency } from './money/currency.js';
import { DEFAULT_RATES, type RateTable, validateRates } from './money/fx.js';

export type Environment = 'sandbox' | 'production';

/** The service's whole configuration, read from the environment once (decisions §1). */
export interface Config {
  port: number;
  host: string;
  databaseUrl: string;
  env: Environment;
  publicUrl: string;
  /** HTTPS port for merchants' mapped hosts (certificate chosen by SNI); null: no HTTPS listener. */
  httpsPort: number | null;
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
  /** Create the demo merchant on first start (sandbox only). */
  demoMerchant: boolean;
  program: ProgramConfig;
  kyc: KycConfig;
  callbacks: CallbackConfig;
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
}

/**
 * Sandbox test BINs: 6-digit prefixes reserved here for test cards. Production deployments set the
 * issuer's own ranges with CARDPROGRAM_BINS.
 */
export const SANDBOX_BINS: Readonly<Record<CardCurrency, string>> = { EUR: '424242', USDT: '535353' };

function jsonVar<T>(env: Env, name: string, fallback: T, validate: (v: Record<string, unknown>) => T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError(`${name} must be a JSON object`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new ConfigError(`${name} must be a JSON object`);
  try {
    return validate(parsed as Record<string, unknown>);
  } catch (err) {
    throw new ConfigError(`${name}: ${(err as Error).message}`);
  }
}

function validateBins(raw: Record<string, unknown>): Record<CardCurrency, string> {
  const out = { ...SANDBOX_BINS };
  for (const [currency, bin] of Object.entries(raw)) {
    if (currency !== 'EUR' && currency !== 'USDT') throw new Error(`no cards are issued in ${currency}`);
    if (typeof bin !== 'string' || !/^[1-9]\d{5,7}$/.test(bin)) throw new Error(`BIN for ${currency} must be 6 to 8 digits`);
    out[currency] = bin;
  }
  return out;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Record<string, string | undefined>;

function intVar(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

/** Requests a second per merchant by default, and the burst above it (twice the rate). */
export const DEFAULT_RATE_LIMIT = 100;

function rateLimitVar(env: Env): RateLimit | null {
  const perSecond = intVar(env, 'CARDPROGRAM_RATE_LIMIT', DEFAULT_RATE_LIMIT, 0, 1_000_000);
  if (perSecond === 0) return null;
  return { perSecond, burst: intVar(env, 'CARDPROGRAM_RATE_BURST', burstFor(perSecond), 1, 10_000_000) };
}

/**
 * Decodes CARDPROGRAM_MASTER_KEY: 64 hex characters or Base64 of 32 bytes. Why it is mandatory in
 * production: a generated key beside the database protects nothing if the disk is copied.
 */
export function parseMasterKey(raw: string): Buffer {
  const text = raw.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64');
  if (key.length !== 32) {
    throw new ConfigError('CARDPROGRAM_MASTER_KEY must be 32 bytes, as 64 hex characters or Base64');
  }
  return key;
}

function sandboxMasterKey(dataDir: string): Buffer {
  const file = join(dataDir, 'master.key');
  if (existsSync(file)) return parseMasterKey(readFileSync(file, 'utf8'));
  mkdirSync(dataDir, { recursive: true });
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

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

function logLevel(raw: string | undefined): string {
  const level = raw || 'info';
  if (!LOG_LEVELS.includes(level)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${level}"`);
  return level;
}

export function loadConfig(env: Env = process.env): Config {
  const envName = env.CARDPROGRAM_ENV || 'sandbox';
  if (envName !== 'sandbox' && envName !== 'production') {
    throw new ConfigError(`CARDPROGRAM_ENV must be "sandbox" or "production", got "${envName}"`);
  }
  const port = intVar(env, 'PORT', 8080, 0, 65535);
  const host = env.HOST || '127.0.0.1';
  const dataDir = resolve(env.CARDPROGRAM_DATA_DIR || './data');
  const databaseUrl = env.DATABASE_URL || `file:${join(dataDir, 'cardprogram.sqlite')}`;
  if (!/^(file:|postgres:\/\/|postgresql:\/\/)/.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must start with file: (SQLite) or postgres:// (PostgreSQL)');
  }
  const publicUrl = (env.CARDPROGRAM_PUBLIC_URL || `http://${host.includes(':') ? `[${host}]` : host}:${port}`).replace(/\/+$/, '');
  try {
    new URL(publicUrl);
  } catch {
    throw new ConfigError(`CARDPROGRAM_PUBLIC_URL is not a URL: "${publicUrl}"`);
  }
  let masterKey: Buffer;
  if (env.CARDPROGRAM_MASTER_KEY) masterKey = parseMasterKey(env.CARDPROGRAM_MASTER_KEY);
  else if (envName === 'production') throw new ConfigError('CARDPROGRAM_MASTER_KEY is required in production');
  else masterKey = sandboxMasterKey(dataDir);

  return {
    port,
    host,
    databaseUrl,
    env: envName,
    publicUrl,
    httpsPort: env.HTTPS_PORT ? intVar(env, 'HTTPS_PORT', 0, 0, 65535) : null,
    dataDir,
    masterKey,
    masterKeyPrevious: (env.CARDPROGRAM_MASTER_KEY_PREVIOUS ?? '')
      .split(',')
      .map((k) => k.trim())
      .filter((k) => k !== '')
      .map((k) => {
        try {
          return parseMasterKey(k);
        } catch {
          throw new ConfigError('CARDPROGRAM_MASTER_KEY_PREVIOUS must be master keys (64 hex characters or Base64), separated by commas');
        }
      }),
    logLevel: logLevel(env.LOG_LEVEL),
    idempotencyRetentionMs: intVar(env, 'CARDPROGRAM_IDEMPOTENCY_RETENTION_HOURS', 48, 24, 24 * 365) * 3_600_000,
    merchantCacheMs: intVar(env, 'CARDPROGRAM_MERCHANT_CACHE_MS', 5000, 0, 600_000),
    rateLimit: rateLimitVar(env),
    demoMerchant: envName === 'sandbox' && env.CARDPROGRAM_DEMO_MERCHANT !== 'off',
    kyc: {
      platforms: platformList(env.CARDPROGRAM_KYC_PLATFORMS),
      autoDecisionMs: envName === 'sandbox' ? intVar(env, 'CARDPROGRAM_KYC_AUTO_DECISION_MS', 5000, 0, 86_400_000) : 0,
    },
    callbacks: {
      worker: env.CARDPROGRAM_WORKER !== 'off',
      retryScheduleMs: DEFAULT_RETRY_SCHEDULE_MS,
      maxAgeMs: 72 * 3_600_000,
      timeoutMs: 10_000,
      pollMs: intVar(env, 'CARDPROGRAM_WORKER_POLL_MS', 1000, 10, 60_000),
    },
    program: {
      bins: jsonVar(env, 'CARDPROGRAM_BINS', SANDBOX_BINS, validateBins),
      fees: jsonVar(env, 'CARDPROGRAM_FEES', DEFAULT_FEES, validateFees),
      fxRates: jsonVar(env, 'CARDPROGRAM_FX_RATES', DEFAULT_RATES, validateRates),
    },
  };
}
